"""What the session gathered for the advisor: the facts, and the parsed inputs that the plan
edits (the job script, its launch line, the training script and its scan). Pure data and the
pure fact logic that needs no file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import TYPE_CHECKING

from tuneadvisor.advisor.fact_view import Usage, first, view
from tuneadvisor.records import record
from tuneadvisor.slurm.states import UNFINISHED

if TYPE_CHECKING:
    from tuneadvisor.metrics.model import MetricsSeries
    from tuneadvisor.slurm.jobscript.model import JobScript
    from tuneadvisor.slurm.launch_line.model import LaunchLine
    from tuneadvisor.trainscript.local_imports import LoaderModule
    from tuneadvisor.trainscript.scan import ScriptScan


@record
class EvidenceStamp:
    """The measured evidence given, named and digested (workspace/evidence_stamp.py): what a
    tuned script says it was tuned from."""

    evidence: str  # "profile 24752610.lprof + seff seff.txt"
    digest: str  # of the files' contents


@record
class NotRead:
    """One input, or one part of an input, that could not be read or followed, and why: what
    a report's "Not read" part lists. ``what`` names it as the user knows it (a path, "job
    1234's StdErr", "the training script"); ``why`` is one short clause ("is not a file on this
    machine"). Written by the readers (workspace/readers/), kept in ``Gathered.not_read`` in the
    order they ran."""

    what: str
    why: str

    def line(self) -> str:
        return f"{self.what}: {self.why}"

    @classmethod
    def said(cls, sentence: str, what: str) -> NotRead:
        """A reader's sentence that names its subject first ("PATH: read, ..."): split where
        that subject ends, so ``line()`` gives the sentence back as written; else of ``what``."""
        subject, sep, why = sentence.partition(": ")
        return cls(subject, why) if sep and why else cls(what, sentence)


@record
class Gathered:
    """The facts and parsed inputs the workspace gathered, for the advisor."""

    facts: Mapping[str, object]
    job: JobScript | None = None
    launch: LaunchLine | None = None
    script_path: str | None = None
    script_text: str | None = None
    scan: ScriptScan | None = None
    loader_module: LoaderModule | None = None  # builds the DataLoader the script does not
    metrics: MetricsSeries | None = None
    sharpen: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())
    stamp: EvidenceStamp | None = None  # None without measured evidence
    not_read: tuple[NotRead, ...] = ()  # what each reader could not read, and why


# usage.* that accounting gives and a running job's partial accounting must not: all but
# the state (checked at import: a misspelt field is a KeyError)
_PARTIAL = tuple(
    Usage.fact_name(f)
    for f in (
        "cores",
        "cpu_efficiency_pct",
        "mem_peak_mib",
        "elapsed_s",
        "mem_efficiency_pct",
        "mem_requested_mib",
        "nodes",
    )
)


def usage_facts(facts: dict[str, object], notes: list[str] | None = None) -> None:
    """usage.* from sacct, else seff: rules read one name whichever the user gave.

    CPU use comes from jobstats' summary first when the accounting has one: its figures are
    the job's cgroups on each node, measured, where sacct and seff estimate. The memory peak
    is the largest of the sources: jobstats samples every 30 s and can miss a spike that
    MaxRSS caught, and memory advice must never rest on the lower figure.

    Only ``usage.state`` while the job runs: a peak so far would make over-requested-memory
    cut --mem below what the rest of the run needs, and efficiency so far is not the job's.
    """
    v = view(facts)
    sacct, seff, jobstats = v.sacct, v.seff, v.jobstats
    peaks = [
        p for p in (jobstats.mem_peak_mib, sacct.mem_peak_mib, seff.mem_used_mib) if p is not None
    ]
    usage = Usage(
        state=first(sacct.state, seff.state),
        cores=first(sacct.alloc_cpus, seff.cores, jobstats.cores),
        cpu_efficiency_pct=first(
            jobstats.cpu_efficiency_pct, sacct.cpu_efficiency_pct, seff.cpu_efficiency_pct
        ),
        # the largest: memory advice never rests on the lower figure
        mem_peak_mib=max(peaks) if peaks else None,
        elapsed_s=first(sacct.elapsed_s, seff.wall_s),
        mem_efficiency_pct=first(
            jobstats.mem_efficiency_pct, sacct.mem_efficiency_pct, seff.mem_efficiency_pct
        ),
        # the memory asked for, job-wide: seff prints it ("... of 80.00 GB"), so seff alone
        # is enough for over-requested-memory
        mem_requested_mib=first(sacct.req_mem_mib, seff.mem_requested_mib),
        nodes=first(sacct.alloc_nodes, seff.nodes),
    )
    mem, nodes = v.job.mem_mib, v.job.nodes
    if mem is not None and nodes is not None:  # the request to resubmit
        usage = usage.replace(mem_requested_mib=mem * nodes, nodes=nodes)
    facts.update(usage.facts())
    state = Usage.read(facts).state
    if state in UNFINISHED or seff.final is False:
        for name in _PARTIAL:
            facts.pop(name, None)
        if notes is not None:
            notes.append(
                f"the job is {str(state).lower()}: its accounting is partial, so no advice "
                "rests on it yet (run again once it has ended)"
            )
        return
    if state is not None:
        # Slurm says OUT_OF_MEMORY when a cgroup killed the job; JobAcctGatherParams=
        # OverMemoryKill kills it with SIGKILL instead: FAILED, its peak over the request.
        over = Usage.read(facts).mem_efficiency_pct
        killed = state == "OUT_OF_MEMORY" or (
            state in ("FAILED", "CANCELLED") and over is not None and over >= 100
        )
        facts.update(Usage(killed_for_memory=killed).facts())
