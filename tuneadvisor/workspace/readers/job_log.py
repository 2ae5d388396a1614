"""log.*: why the job died, from --log and the live job's StdOut and StdErr."""

from __future__ import annotations

from tuneadvisor.workspace.readers.base import Gathering, Reader

WHAT = "the job's log"


def _read(state: Gathering) -> None:
    from tuneadvisor.workspace.job_log import live_log_paths, read_job_logs

    inputs, live = state.inputs, state.live
    said = len(state.notes)
    from_slurm = live_log_paths(live, inputs.logs, state.notes) if live is not None else []
    log = read_job_logs(inputs.logs, from_slurm, state.notes)
    # what the log readers said: a log Slurm named that is not here, or one with no cause
    state.notes_as_not_read(WHAT, said)
    if log is not None:
        state.facts.update(log.facts())


READER = Reader(WHAT, _read, given=lambda state: bool(state.inputs.logs) or state.live is not None)
