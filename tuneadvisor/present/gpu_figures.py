"""What each GPU figure is, in the same words in reports, the watch summary and on screen
(the kinds themselves and the report's note: ``metrics/figures.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tuneadvisor.metrics.model import GpuMetric, GpuSeries

KINDS_LINE = (
    "figures: utilisation = share of time any kernel ran (one busy SM reads 100 %); "
    "SM activity = share of SMs busy; tensor pipes, DRAM = share of their peak"
)

_ACTIVITY: tuple[tuple[GpuMetric, str], ...] = (
    ("sm_active_pct", "SM activity"),
    ("sm_occupancy_pct", "SM occupancy"),
    ("tensor_active_pct", "tensor pipes"),
    ("dram_active_pct", "DRAM bandwidth"),
)


def _pct(value: float) -> str:
    return f"{value:.0f} %" if value >= 10 else f"{value:.1f} %"


def activity_parts(gpu: GpuSeries) -> list[str]:
    """``SM activity mean 12 %``, ``tensor pipes mean 0.0 %``, ...: the figures it has."""
    out = []
    for metric, label in _ACTIVITY:
        stats = gpu.stats(metric)
        if stats is not None:
            out.append(f"{label} mean {_pct(stats.mean)}")
    return out
