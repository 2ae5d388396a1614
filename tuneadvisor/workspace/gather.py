"""Evidence files in, facts out. Every file is read once; a bad one is one InputError line.

Each input is one reader (``workspace/readers/``, listed in order in ``readers/registry.py``);
gathering walks over them. An input that was not given leaves its facts absent, and
``sharpen`` says which inputs would let more rules speak; ``not_read`` says what was given
but could not be read or followed, and why.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from tuneadvisor.advisor.evidence import Gathered
from tuneadvisor.advisor.facts import FACTS
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.readers.base import Gathering, Reader
from tuneadvisor.workspace.readers.registry import READERS

# Each input's parser is imported where that input is read: `report PROFILE` alone stays as
# quick to start as line_profiler's own viewer (bench target 2).
if TYPE_CHECKING:
    from tuneadvisor.profile.analysis import ProfileAnalysis
    from tuneadvisor.profile.trace.model import TraceSet
    from tuneadvisor.slurm.client import SlurmClient
    from tuneadvisor.slurm.jobscript.model import JobScript


def _known(facts: Mapping[str, object]) -> dict[str, object]:
    """Only registered facts reach the rules (a producer's extra detail stays with it)."""
    return {name: value for name, value in facts.items() if name in FACTS}


def gather(
    inputs: Inputs,
    analysis: ProfileAnalysis | None,
    env: Mapping[str, str] | None = None,
    job: JobScript | None = None,
    traces: TraceSet | None = None,
    readers: Sequence[Reader] = READERS,
) -> Gathered:
    """``job``: the job script of ``inputs.job``, when the caller has read it already;
    ``traces``: the torch.profiler traces of ``inputs.traces``, read."""
    env = os.environ if env is None else env
    state = Gathering(inputs, env, analysis, traces, given_job=job, client=_client(inputs, env))
    for reader in readers:
        if reader.given(state):
            reader.read(state)
        elif reader.missing is not None:
            state.sharpen.append(reader.missing)
    return Gathered(
        facts=_known(state.facts),
        job=state.job.job,
        launch=state.job.launch,
        script_path=state.script.path,
        script_text=state.script.text,
        scan=state.script.scan,
        loader_module=state.script.loader_module,
        metrics=state.metrics,
        sharpen=tuple(state.sharpen),
        notes=tuple(state.notes),
        stamp=state.stamp,
        not_read=tuple(state.not_read),
    )


def _client(inputs: Inputs, env: Mapping[str, str]) -> SlurmClient | None:
    if not (inputs.live or inputs.cluster):
        return None
    from tuneadvisor.slurm.client import SlurmClient

    return SlurmClient(env=env)
