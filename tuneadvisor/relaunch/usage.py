"""What a run used, from the ``watch --record`` files sampled beside it: cores (mean and
p95 of the training process tree), peak memory, GPU utilization and memory.

The recordings are read by ``metrics.recording`` and summed up by the metrics facts (the
numbers ``report --metrics`` shows), so a run and a report never disagree on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tuneadvisor.advisor.fact_view import FactView, view
from tuneadvisor.errors import InputError
from tuneadvisor.files import is_regular_file, read_text_input


def _usage(v: FactView) -> dict[str, float | None]:
    """The recording's facts under their keys in the run record and in `compare --format
    json` (keep these keys)."""
    host, gpu = v.host, v.gpu
    return {
        "cores_used": host.proc__cpu_cores__mean,
        "cores_used_p95": host.proc__cpu_cores__p95,
        "max_rss_mib": host.proc__rss__max_mib,
        "workers_max": host.proc__workers__max,
        "samples": host.samples,
        "duration_s": host.duration_s,
        "gpus": gpu.count,
        "gpu_util_pct": gpu.util__mean,
        "gpu_mem_max_mib": gpu.mem_used__max_mib,
        # CPU binding (metrics/affinity.py): a prediction's miss says when a rank had one CPU
        "affinity_min_cpus": host.proc__affinity__min_cpus,
        "affinity_short_ranks": host.proc__affinity__short_ranks,
        # the whole machine: whether other processes held the cores (a prediction's miss)
        "node_cores": host.cpu__count,
        "node_busy_cores": host.cpu__busy_cores__mean,
    }


def read_usage(paths: Sequence[Path]) -> dict[str, float]:
    """The usage in these recordings (several: one per node or task, merged); empty when
    none has a sample. A file that is not a recording is an input error naming it."""
    from tuneadvisor.metrics.model import merge_series
    from tuneadvisor.metrics.recording import RecordingError, parse_recording

    series = []
    for path in paths:
        try:
            series.append(parse_recording(read_text_input(path, "recording")).series())
        except RecordingError as exc:
            raise InputError(path, str(exc)) from None
    if not series:
        return {}
    usage = _usage(view(merge_series(series).facts()))
    return {key: round(float(value), 3) for key, value in usage.items() if value is not None}


def recorded_usage(paths: Sequence[Path]) -> dict[str, float]:
    """Like :func:`read_usage` for files a run just wrote: missing, empty or unreadable
    files give nothing rather than an error (the sampler may have found nothing to do)."""
    present = [p for p in paths if is_regular_file(p) and p.stat().st_size > 0]
    try:
        return read_usage(present)
    except InputError:
        return {}
