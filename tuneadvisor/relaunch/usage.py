"""What a run used, from the ``watch --record`` files sampled beside it: cores (mean and
p95 of the training process tree), peak memory, GPU utilization and memory.

The recordings are read by ``metrics.recording`` and summed up by the metrics facts (the
numbers ``report --metrics`` shows), so a run and a report never disagree on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tuneadvisor.errors import InputError
from tuneadvisor.files import is_regular_file, read_text_input

# fact name -> key in the run record and in `compare --format json` (keep these keys)
_FACTS = {
    "host.proc.cpu_cores.mean": "cores_used",
    "host.proc.cpu_cores.p95": "cores_used_p95",
    "host.proc.rss.max_mib": "max_rss_mib",
    "host.proc.workers.max": "workers_max",
    "host.samples": "samples",
    "host.duration_s": "duration_s",
    "gpu.count": "gpus",
    "gpu.util.mean": "gpu_util_pct",
    "gpu.mem_used.max_mib": "gpu_mem_max_mib",
    # CPU binding (metrics/affinity.py): a prediction's miss says when a rank had one CPU
    "host.proc.affinity.min_cpus": "affinity_min_cpus",
    "host.proc.affinity.short_ranks": "affinity_short_ranks",
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
    facts = merge_series(series).facts()
    out: dict[str, float] = {}
    for fact, key in _FACTS.items():
        value = facts.get(fact)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = round(float(value), 3)
    return out


def recorded_usage(paths: Sequence[Path]) -> dict[str, float]:
    """Like :func:`read_usage` for files a run just wrote: missing, empty or unreadable
    files give nothing rather than an error (the sampler may have found nothing to do)."""
    present = [p for p in paths if is_regular_file(p) and p.stat().st_size > 0]
    try:
        return read_usage(present)
    except InputError:
        return {}
