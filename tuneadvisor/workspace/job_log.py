"""The job's output logs, read for why it died: the files given with --log, and with a live
--jobid the StdOut and StdErr that slurmctld reports, where this machine can read them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tuneadvisor.errors import InputError
from tuneadvisor.files import is_regular_file

if TYPE_CHECKING:
    from tuneadvisor.slurm.joblog.scan import JobLog
    from tuneadvisor.workspace.live_job import LiveJob


def live_log_paths(live: LiveJob, given: Sequence[str], notes: list[str]) -> list[str]:
    """The live job's StdOut and StdErr that are files readable here and not given already;
    a note for each that is not."""
    shown = live.shown
    if shown is None:
        notes.append(
            f"job {live.job_id}: Slurm no longer says where its output went: "
            "give the log with --log FILE"
        )
        return []
    seen = {os.path.realpath(path) for path in given}
    paths: list[str] = []
    for path in dict.fromkeys(p for p in (shown.std_out, shown.std_err) if p):
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        why = _unreadable(path)
        if why is None:
            paths.append(path)
        else:
            notes.append(f"job {live.job_id}: its output {path} {why}: give it with --log FILE")
    return paths


def _unreadable(path: str) -> str | None:
    if "%" in path:  # a filename pattern slurmctld did not expand
        return "is a pattern, not a file name"
    try:
        if not is_regular_file(Path(path)):
            return "is not a file on this machine"
    except OSError:
        return "is not a file on this machine"
    if not os.access(path, os.R_OK):
        return "is not readable here (permission denied)"
    return None


def read_job_logs(given: Sequence[str], found: Sequence[str], notes: list[str]) -> JobLog | None:
    """``given`` (--log: a file that cannot be read is an InputError naming it) and then
    ``found`` (Slurm's: one that cannot be read after all is a note)."""
    if not (given or found):
        return None
    from tuneadvisor.slurm.joblog.scan import HEAD, TAIL, LogScan, size_text

    scan = LogScan()
    for path in given:
        scan.add(path)
    for path in found:
        try:
            scan.add(path)
        except InputError as exc:
            notes.append(exc.one_line())
    log = scan.result()
    if not log.paths:
        return None
    for path, skipped in log.skipped.items():
        notes.append(
            f"{path}: read its first {size_text(HEAD)} and last {size_text(TAIL)} only; "
            f"{skipped:,} bytes between were not read (a cause printed only there is not seen)"
        )
    if not log.found:
        notes.append(
            f"{', '.join(log.paths)}: read, {log.lines} lines, no known cause of death found"
        )
    return log
