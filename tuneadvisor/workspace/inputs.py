"""The one request of every evidence-reading command: the inputs named on the command line
(paths only; nothing is read until the workspace loads them)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from tuneadvisor.files import peek
from tuneadvisor.profile.trace import RUN_RECORDS, TRACE_SUFFIXES, trace_names
from tuneadvisor.records import record

# keys kineto writes first; a watch recording (JSON lines) has none of them
_TRACE_KEYS = (b'"traceEvents"', b'"schemaVersion"', b'"deviceProperties"', b'"distributedInfo"')


@record
class Inputs:
    """Every input of one command, as the command line named them."""

    profiles: tuple[str, ...] = ()
    job: str | None = None
    source_roots: tuple[str, ...] = ()
    script: str | None = None
    metrics: tuple[str, ...] = ()
    metrics_columns: str | None = None  # the --query-gpu list of noheader nvidia-smi logs
    seff: str | None = None
    sacct: str | None = None
    jobid: str | None = None  # with --sacct: which job of the file; alone: ask Slurm
    site: str | None = None
    rules: tuple[str, ...] = ()
    cluster: bool = False  # node shapes from the cluster (sinfo) when there is no site file
    logs: tuple[str, ...] = ()  # the job's output logs (--log), read for why it died
    probe: str | None = None  # a bundled script's --probe file: probe.* facts
    traces: tuple[str, ...] = ()  # torch.profiler traces: files and folders (one per rank)
    scontrol: str | None = None  # saved `scontrol show job -o ID`: the job as it ran
    queue: bool = False  # ask the scheduler when the job would start (sbatch --test-only)

    def is_empty(self) -> bool:
        return not (self.profiles or self.job or self.script or self.metrics or self.seff
                    or self.sacct or self.jobid or self.logs or self.probe
                    or self.traces or self.scontrol)  # fmt: skip

    @property
    def live(self) -> bool:
        """--jobid without a saved sacct file: Slurm itself is asked about the job."""
        return self.jobid is not None and self.sacct is None


def is_run_folder(path: str) -> bool:
    """A folder `run` or `tune` wrote (its record inside): compared as runs, not as traces."""
    return os.path.isdir(path) and any(
        os.path.isfile(os.path.join(path, name)) for name in RUN_RECORDS
    )


def split_profiles(paths: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """PROFILE arguments as (line_profiler files, torch.profiler traces): a folder, a
    ``.json``/``.json.gz`` name, or a file that starts as JSON or gzip (an .lprof is a pickle,
    a printed table is text) is a trace. Order is kept within each."""
    profiles: list[str] = []
    traces: list[str] = []
    for path in paths:
        (traces if _is_trace(path) else profiles).append(path)
    return tuple(profiles), tuple(traces)


def _is_trace(path: str) -> bool:
    if os.path.isdir(path):  # a folder of ranks' traces (a run folder of `run --profile torch`)
        try:
            return any(trace_names(os.listdir(path)))
        except OSError:
            return False  # refused with its one line where it is read
    if path.endswith(TRACE_SUFFIXES):
        return True
    if path.endswith((".lprof", ".txt", ".jsonl")):
        return False
    head = peek(path)
    if head.startswith(b"\x1f\x8b"):  # gzip: the start of what it holds, bounded
        import zlib

        try:
            head = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16).decompress(
                peek(path, 1 << 16), 4096
            )
        except zlib.error:
            return False
    return head.lstrip().startswith(b"{") and any(key in head for key in _TRACE_KEYS)
