"""profile.*: the line_profiler profiles, analysed before gathering (session/workspace.py)."""

from __future__ import annotations

from tuneadvisor.session.readers.base import Gathering, Reader


def _read(state: Gathering) -> None:
    if state.analysis is None:  # traces alone: they are the profile of their run
        return
    from tuneadvisor.profile.facts import profile_facts

    state.facts.update(profile_facts(state.analysis))


READER = Reader(
    "line_profiler profile",
    _read,
    given=lambda state: state.analysis is not None or state.traces is not None,
    missing="a line_profiler profile (kernprof -l -o $SLURM_JOBID.lprof)",
)
