"""What kind of figure each GPU figure is, said where the figures are read.

NVML's "utilization" (nvidia-smi's GPU-Util, jobstats, Slurm's gres/gpuutil, DCGM's
DCGM_FI_DEV_GPU_UTIL) is the share of time at least one kernel ran: one busy SM of 132 reads
100 %. SM activity (NVML's GPM, DCGM's SM_ACTIVE) is the share of SMs that had work. A report
that shows one says which it is, and SM-level questions are judged only from the second.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tuneadvisor.metrics.model import MetricsSeries

UTILIZATION = "utilization (share of time any kernel ran)"
SM_ACTIVITY = "SM activity (share of SMs busy)"
# The SM-level rules: they read SM, tensor or DRAM activity, never utilization alone.
SM_LEVEL_RULES = "busy-but-underused, tensor-cores-idle, memory-bandwidth-bound"
_ACTIVITY = ("sm_active_pct", "sm_occupancy_pct", "tensor_active_pct", "dram_active_pct")


def has_activity(series: MetricsSeries) -> bool:
    return any(getattr(s, metric) is not None for s in series.gpu_samples for metric in _ACTIVITY)


def figures_note(series: MetricsSeries, source: str) -> str:
    """The report's note on which kind of GPU figure the metrics hold, and what follows."""
    if has_activity(series):
        return (
            f"GPU figures from the {source}: {UTILIZATION} and {SM_ACTIVITY} with tensor-pipe "
            "and DRAM activity; the SM-level rules read the second"
        )
    return (
        f"GPU figures from the {source}: {UTILIZATION} only, no SM activity: the SM-level "
        f"rules ({SM_LEVEL_RULES}) are not judged (record with `tuneadvisor watch` on a "
        "Hopper or newer GPU, or give a dcgmi dmon log or dcgm-exporter scrape)"
    )
