"""trace.*: the torch.profiler traces' breakdown (read before gathering), and what they
could not show."""

from __future__ import annotations

from tuneadvisor.advisor.evidence import NotRead
from tuneadvisor.workspace.readers.base import Gathering, Reader


def _read(state: Gathering) -> None:
    from tuneadvisor.profile.trace.facts import trace_facts

    traces = state.traces
    assert traces is not None
    state.facts.update(trace_facts(traces))
    state.notes += traces.notes
    # what each file could not show (no device events, no steps, too short to judge, a bound
    # met): one Not-read entry a note, with the files it is about (not one a rank), and not
    # an advice note as well (the trace section says it with the ranks)
    paths: dict[str, list[str]] = {}
    for rank in traces.ranks:
        for note in rank.notes:
            paths.setdefault(note, []).append(rank.path)
    state.not_read += [NotRead(", ".join(where), note) for note, where in paths.items()]


READER = Reader("torch.profiler traces", _read, given=lambda state: state.traces is not None)
