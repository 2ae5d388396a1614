"""What the session gathered for the advisor: the facts, and the parsed inputs that the plan
edits (the job script, its launch line, the training script and its scan). Pure data and the
pure fact logic that needs no file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tuneadvisor.slurm.states import UNFINISHED

if TYPE_CHECKING:
    from tuneadvisor.metrics.model import MetricsSeries
    from tuneadvisor.slurm.jobscript.model import JobScript
    from tuneadvisor.slurm.launch_line.model import LaunchLine
    from tuneadvisor.trainscript.local_imports import LoaderModule
    from tuneadvisor.trainscript.scan import ScriptScan


@dataclass(frozen=True)
class EvidenceStamp:
    """The measured evidence given, named and digested (session/evidence_stamp.py): what a
    tuned script says it was tuned from."""

    evidence: str  # "profile 24752610.lprof + seff seff.txt"
    digest: str  # of the files' contents


@dataclass(frozen=True)
class Gathered:
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
    # what the inputs held that could not be read or followed, each with why: a report says
    # "no finding" only of what was read
    not_read: tuple[str, ...] = field(default=())


def usage_facts(facts: dict[str, object], notes: list[str] | None = None) -> None:
    """usage.* from sacct, else seff: rules read one name whichever the user gave.

    CPU use comes from jobstats' summary first when the accounting has one: its figures are
    the job's cgroups on each node, measured, where sacct and seff estimate. The memory peak
    is the largest of the sources: jobstats samples every 30 s and can miss a spike that
    MaxRSS caught, and memory advice must never rest on the lower figure.

    Only ``usage.state`` while the job runs: a peak so far would make over-requested-memory
    cut --mem below what the rest of the run needs, and efficiency so far is not the job's.
    """
    pairs = {
        "usage.state": ("sacct.state", "seff.state"),
        "usage.cores": ("sacct.alloc_cpus", "seff.cores", "jobstats.cores"),
        "usage.cpu_efficiency_pct": (
            "jobstats.cpu_efficiency_pct",
            "sacct.cpu_efficiency_pct",
            "seff.cpu_efficiency_pct",
        ),
        "usage.mem_peak_mib": ("jobstats.mem_peak_mib", "sacct.mem_peak_mib", "seff.mem_used_mib"),
        "usage.elapsed_s": ("sacct.elapsed_s", "seff.wall_s"),
        "usage.mem_efficiency_pct": (
            "jobstats.mem_efficiency_pct",
            "sacct.mem_efficiency_pct",
            "seff.mem_efficiency_pct",
        ),
        # the memory asked for, job-wide: seff prints it ("... of 80.00 GB"), so seff alone
        # is enough for over-requested-memory
        "usage.mem_requested_mib": ("sacct.req_mem_mib", "seff.mem_requested_mib"),
        "usage.nodes": ("sacct.alloc_nodes", "seff.nodes"),
    }
    for usage, sources in pairs.items():
        for source in sources:
            if source in facts:
                facts[usage] = facts[source]
                break
    peaks = [facts[s] for s in pairs["usage.mem_peak_mib"] if isinstance(facts.get(s), int | float)]
    if peaks:
        facts["usage.mem_peak_mib"] = max(peaks)  # type: ignore[type-var]
    mem, nodes = facts.get("job.mem_mib"), facts.get("job.nodes")
    if isinstance(mem, int | float) and isinstance(nodes, int):  # the request to resubmit
        facts["usage.mem_requested_mib"], facts["usage.nodes"] = mem * nodes, nodes
    state = facts.get("usage.state")
    if state in UNFINISHED or facts.get("seff.final") is False:
        for usage in pairs:
            if usage != "usage.state":
                facts.pop(usage, None)
        if notes is not None:
            notes.append(
                f"the job is {str(state).lower()}: its accounting is partial, so no advice "
                "rests on it yet (run again once it has ended)"
            )
        return
    if isinstance(state, str):
        # Slurm says OUT_OF_MEMORY when a cgroup killed the job; JobAcctGatherParams=
        # OverMemoryKill kills it with SIGKILL instead: FAILED, its peak over the request.
        over = facts.get("usage.mem_efficiency_pct")
        facts["usage.killed_for_memory"] = state == "OUT_OF_MEMORY" or (
            state in ("FAILED", "CANCELLED") and isinstance(over, int | float) and over >= 100
        )
