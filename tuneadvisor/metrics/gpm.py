"""NVML's GPM metrics as the sampler asks for them: which ids, into which sample field.

GPM (GPU Performance Monitoring, NVML R520+, Hopper and newer) computes each metric between
two samples the caller takes (``nvmlGpmSampleGet``); ``nvmlGpmMetricsGet`` fills one
``c_nvmlGpmMetricsGet_t`` with the ids asked for and a return code per metric. Only
``metrics/nvml.py`` calls NVML; this module builds the request and reads the answer (the
structure it is given comes from the same nvidia-ml-py), so it imports no pynvml itself.

Units as nvidia-ml-py documents them: utilizations 0.0-100.0 (%), PCIe and NVLink MiB/s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# (NVML_GPM_METRIC_* value, GpuSample field). SM_UTIL is "percentage of SMs that were busy"
# (DCGM's SM_ACTIVE), ANY_TENSOR_UTIL "time the SMs were doing ANY tensor operations",
# DRAM_BW_UTIL "DRAM bandwidth used vs theoretical maximum".
METRICS: tuple[tuple[int, str], ...] = (
    (2, "sm_active_pct"),  # NVML_GPM_METRIC_SM_UTIL
    (3, "sm_occupancy_pct"),  # NVML_GPM_METRIC_SM_OCCUPANCY
    (5, "tensor_active_pct"),  # NVML_GPM_METRIC_ANY_TENSOR_UTIL
    (10, "dram_active_pct"),  # NVML_GPM_METRIC_DRAM_BW_UTIL
    (20, "pcie_tx_mib_s"),  # NVML_GPM_METRIC_PCIE_TX_PER_SEC
    (21, "pcie_rx_mib_s"),  # NVML_GPM_METRIC_PCIE_RX_PER_SEC
    (60, "nvlink_rx_mib_s"),  # NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC
    (61, "nvlink_tx_mib_s"),  # NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC
)
_FIELD = dict(METRICS)

NOT_THIS_GPU = "this GPU has no GPM (Hopper or newer has it)"


def why_not(why: str | None) -> str:
    """NVML's refusal in words a user can act on."""
    if why in ("Not Supported", None):
        return NOT_THIS_GPU
    if why == "Function Not Found":
        return "the driver has no GPM (R520 or newer has it)"
    if why == "Invalid Argument":
        return "the driver refused the GPM metrics asked (Invalid Argument)"
    if why == "Insufficient Permissions":
        return "GPM refused to this user (Insufficient Permissions)"
    return f"GPM did not answer ({why})"


@dataclass
class GpmState:
    """A device's two GPM samples: ``previous`` (the last round's) and ``current`` (this
    round's, taken into the buffer the round before last used), swapped after each round."""

    previous: object
    current: object
    handle: object  # the whole GPU's handle (the parent's, for a MIG instance)
    instance: int | None  # the GPU instance id of a MIG instance

    @property
    def samples(self) -> tuple[object, object]:
        return (self.previous, self.current)

    def swap(self) -> None:
        self.previous, self.current = self.current, self.previous


def metrics_request(nvml: Any, first: object, second: object) -> Any:
    """A ``c_nvmlGpmMetricsGet_t`` asking for ``METRICS`` between two samples."""
    request = nvml.c_nvmlGpmMetricsGet_t()
    request.version = nvml.NVML_GPM_METRICS_GET_VERSION
    request.numMetrics = len(METRICS)
    request.sample1 = first
    request.sample2 = second
    for i, (metric, _) in enumerate(METRICS):
        request.metrics[i].metricId = metric
    return request


def read_metrics(answer: Any) -> dict[str, float]:
    """The metrics that answered (return code 0 and a finite, non-negative value)."""
    out: dict[str, float] = {}
    for i in range(int(answer.numMetrics)):
        metric = answer.metrics[i]
        field = _FIELD.get(int(metric.metricId))
        value = float(metric.value)
        if field is None or int(metric.nvmlReturn) != 0 or not 0.0 <= value < float("inf"):
            continue
        out[field] = value
    return out
