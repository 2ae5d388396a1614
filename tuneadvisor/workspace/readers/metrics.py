"""The metrics files (--metrics: watch recordings, nvidia-smi logs, DCGM output; each told
apart by its first lines, workspace/read_measured.py), and gpu.* from them or the
accounting; what each recording says its job was given, for the allocation."""

from __future__ import annotations

from tuneadvisor.workspace.gpu_source import choose_gpu_source
from tuneadvisor.workspace.read_measured import read_metrics
from tuneadvisor.workspace.readers.base import Gathering, Reader


def _read(state: Gathering) -> None:
    inputs = state.inputs
    metrics = read_metrics(inputs.metrics, inputs.metrics_columns, state.measured)
    if metrics is not None:
        state.facts.update(metrics.facts())
    choose_gpu_source(state.facts, metrics, state.gpu_read, state.notes)
    if metrics is None and "gpu.util.mean" not in state.facts:
        state.sharpen.append(
            "GPU metrics (--metrics: an nvidia-smi CSV log, a watch recording or DCGM output)"
        )
    state.metrics = metrics


READER = Reader("GPU metrics", _read)
