"""probe.*: the bundled scripts' probe file (--probe): timed step, pipeline and loop."""

from __future__ import annotations

from tuneadvisor.workspace.readers.base import Gathering, Reader


def _read(state: Gathering) -> None:
    from tuneadvisor.runrecord.probe import read_probe

    path = state.inputs.probe
    assert path is not None
    probe = read_probe(path)
    state.facts.update(probe.facts())
    state.notes.append(f"{path}: {probe.note()}")


READER = Reader("probe file", _read, given=lambda state: state.inputs.probe is not None)
