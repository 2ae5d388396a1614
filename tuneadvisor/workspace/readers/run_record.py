"""run.*: the run record (run.json) that `tuneadvisor run` wrote beside the evidence (a
profile, a trace or a folder of traces, a recording, a probe file): what the run was given
(cores, workers) and the first such run's batch size and rate."""

from __future__ import annotations

import os
from collections.abc import Sequence

from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.read_measured import run_record_beside
from tuneadvisor.workspace.readers.base import Gathering, Reader


def _beside_traces(traces: Sequence[str]) -> list[str]:
    """Where a trace's run record would be, as a path beside it: a trace file's folder, or
    the folder of traces given (`run --profile torch` writes both into its run folder)."""
    return [os.path.join(t, "trace") if os.path.isdir(t) else t for t in traces]


def _evidence(inputs: Inputs) -> tuple[str, ...]:
    probe = (inputs.probe,) if inputs.probe is not None else ()
    return (*inputs.profiles, *_beside_traces(inputs.traces), *inputs.metrics, *probe)


def _read(state: Gathering) -> None:
    records = [run_record_beside(p) for p in _evidence(state.inputs)]
    state.measured += [m for m, _ in records if m is not None]
    if records:  # the first measured run's batch size and rate (the step-time model's)
        state.facts.update(records[0][1])


READER = Reader(
    "run record beside the evidence", _read, given=lambda state: bool(_evidence(state.inputs))
)
