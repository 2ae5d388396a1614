"""What kind of figure each GPU figure is, said where the figures are read.

NVML's "utilization" (nvidia-smi's GPU-Util, jobstats, Slurm's gres/gpuutil, DCGM's
DCGM_FI_DEV_GPU_UTIL) is the share of time at least one kernel ran: one busy SM of 132 reads
100 %. SM activity (NVML's GPM, DCGM's SM_ACTIVE) is the share of SMs that had work. A report
that shows one says which it is (the note: workspace/gpu_source.py), and SM-level questions are
judged only from the second.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tuneadvisor.metrics.model import MetricsSeries

UTILIZATION = "utilization (share of time any kernel ran)"
SM_ACTIVITY = "SM activity (share of SMs busy)"
_ACTIVITY = ("sm_active_pct", "sm_occupancy_pct", "tensor_active_pct", "dram_active_pct")


def has_activity(series: MetricsSeries) -> bool:
    return any(getattr(s, metric) is not None for s in series.gpu_samples for metric in _ACTIVITY)
