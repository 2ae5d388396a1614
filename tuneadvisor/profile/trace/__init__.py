"""PyTorch profiler traces (Chrome trace JSON from ``torch.profiler``), read as a stream.

What names a trace, kept here (no import of the reader) for the command line's quick split of
PROFILE arguments."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

TRACE_SUFFIXES = (".json", ".json.gz")  # torch.profiler's Chrome trace JSON, gzipped or not
# What `run` and `tune` write beside a run's traces: JSON, but not traces.
RUN_RECORDS = frozenset({"run.json", "tune.json"})


def trace_names(names: Iterable[str]) -> Iterator[str]:
    """The names in a folder that are traces: JSON by name, not a run's or a tune's record."""
    return (n for n in names if n.endswith(TRACE_SUFFIXES) and n not in RUN_RECORDS)
