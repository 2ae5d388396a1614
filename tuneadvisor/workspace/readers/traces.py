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
    for rank in traces.ranks:
        # each rank's notes are the trace section's "Cannot show" (once, with the ranks they
        # are about), not advice notes as well; what each file could not show, and why (no
        # steps, too short to judge), is a Not-read entry
        state.not_read += [NotRead(rank.path, note) for note in rank.notes]


READER = Reader("torch.profiler traces", _read, given=lambda state: state.traces is not None)
