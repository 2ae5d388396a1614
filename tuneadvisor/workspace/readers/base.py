"""The reader protocol: what every input of ``gather`` is, and the state they share.

A reader is a name, a test of whether its input is there (``given``: cheap, reads no file)
and a ``read`` that reads it bounded (``files.read_text_input`` and the input's own parser,
imported inside ``read``: a report that does not have the input never loads its parser) and
puts into the state what it found: its facts (``state.facts``, under its prefix), what it
could not read and why (``state.cannot_read``), notes, and, when the input is absent, what it
would have added (``missing``, or ``state.sharpen`` for a reader that decides while reading).
A file that is not the input it was given as is one ``InputError`` naming it.

Readers run in the order of ``registry.READERS``; a later reader's facts override an earlier
one's, and a reader may use what one before it left in the state (the job script's launch
line, the live job). The recipe is in docs/ARCHITECTURE.md, "Add an input".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING

from tuneadvisor.advisor.evidence import EvidenceStamp, NotRead
from tuneadvisor.advisor.measured_allocation import MeasuredAllocation
from tuneadvisor.records import record
from tuneadvisor.workspace.inputs import Inputs

if TYPE_CHECKING:
    from tuneadvisor.metrics.model import MetricsSeries
    from tuneadvisor.profile.analysis import ProfileAnalysis
    from tuneadvisor.profile.trace.model import TraceSet
    from tuneadvisor.slurm.accounting.sacct.gpu import AccountingGpu
    from tuneadvisor.slurm.accounting.sacct.records import SacctJob
    from tuneadvisor.slurm.client import SlurmClient
    from tuneadvisor.slurm.jobscript.model import JobScript
    from tuneadvisor.slurm.launch_line.model import LaunchLine
    from tuneadvisor.slurm.launch_line.search import Unfollowed
    from tuneadvisor.trainscript.local_imports import LoaderModule
    from tuneadvisor.trainscript.scan import ScriptScan
    from tuneadvisor.workspace.live_job import LiveJob


@record
class JobRead:
    """The job script and its launch line, as read."""

    job: JobScript | None = None
    launch: LaunchLine | None = None
    unfollowed: Unfollowed | None = None  # a launch-like command that led to no script
    programs: int = 0  # Python programs the job runs (one is read as the training)


@record
class ScriptRead:
    """The training script, as read and scanned."""

    path: str | None = None
    text: str | None = None
    scan: ScriptScan | None = None
    loader_module: LoaderModule | None = None


@record(frozen=False)
class Gathering:
    """What the inputs said so far, and what a reader hands to the ones after it."""

    inputs: Inputs
    env: Mapping[str, str]
    analysis: ProfileAnalysis | None = None  # the profiles, analysed before gathering
    traces: TraceSet | None = None  # the torch.profiler traces, read before gathering
    given_job: JobScript | None = None  # the job script, when the caller read it already
    client: SlurmClient | None = None  # Slurm asked live (--jobid alone, or the cluster)
    facts: dict[str, object] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    not_read: list[NotRead] = field(default_factory=list)
    sharpen: list[str] = field(default_factory=list)
    # what one reader leaves for the readers after it
    live: LiveJob | None = None
    job: JobRead = JobRead()
    script: ScriptRead = ScriptRead()
    accounting: SacctJob | None = None
    gpu_read: AccountingGpu | None = None
    metrics: MetricsSeries | None = None
    measured: list[MeasuredAllocation] = field(default_factory=list)
    stamp: EvidenceStamp | None = None

    def cannot_read(self, what: str, why: str) -> None:
        """``what`` could not be read or followed, ``why``: said once, in the report's "Not
        read" part (not as a note beside it)."""
        self.not_read.append(NotRead(what, why))

    def notes_as_not_read(self, what: str, said: int) -> None:
        """The notes a helper wrote since ``said`` are of ``what`` not read: moved there."""
        self.not_read += [NotRead.said(note, what) for note in self.notes[said:]]
        del self.notes[said:]


def always(state: Gathering) -> bool:
    return True


@record
class Reader:
    """One input of ``gather`` (or one derivation across the inputs read before it)."""

    name: str  # the input as the user knows it: "seff output", "the job's log"
    read: Callable[[Gathering], None]
    given: Callable[[Gathering], bool] = always
    missing: str | None = None  # what the input would add, said when it is not given
