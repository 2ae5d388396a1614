"""profile.*: the line_profiler profiles, analysed before gathering (workspace/load.py)."""

from __future__ import annotations

from tuneadvisor.advisor.evidence import NotRead
from tuneadvisor.workspace.readers.base import Gathering, Reader


def _read(state: Gathering) -> None:
    if state.analysis is None:  # traces alone: they are the profile of their run
        return
    from tuneadvisor.profile.facts import profile_facts

    state.facts.update(profile_facts(state.analysis))
    # said in the profile's own notes already: kept here for the "Not read" part
    state.not_read += [
        NotRead(path, "source not found: no source text or line kinds (--source-root DIR)")
        for path in state.analysis.missing_sources
    ]


READER = Reader(
    "line_profiler profile",
    _read,
    given=lambda state: state.analysis is not None or state.traces is not None,
    missing="a line_profiler profile (kernprof -l -o $SLURM_JOBID.lprof)",
)
