"""run.*: the run record (run.json) beside a profile that `tuneadvisor run` wrote: what the
run was given (cores, workers) and the first profiled run's batch size and rate."""

from __future__ import annotations

from tuneadvisor.workspace.read_measured import run_record_beside
from tuneadvisor.workspace.readers.base import Gathering, Reader


def _read(state: Gathering) -> None:
    records = [run_record_beside(p) for p in state.inputs.profiles]
    state.measured += [m for m, _ in records if m is not None]
    if records:  # the first profiled run's batch size and rate (the step-time model's)
        state.facts.update(records[0][1])


READER = Reader(
    "run record beside a profile", _read, given=lambda state: bool(state.inputs.profiles)
)
