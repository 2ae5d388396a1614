"""The allocation the evidence was measured under (``alloc.*``), apart from what the job
script asks for now (``job.*``).

A seff, a sacct record, a watch recording or a run record describes one run; the rules
compute their suggestions from that run's cores and memory, so applying the same evidence to
a script already changed gives the same script again instead of doubling it once more. Where
the script now asks for something else, one note says so.

Sources, most direct first: what a recording or a run record says the run was given
(``job.cpus_per_task`` of a recording's header, a run record's settings), then sacct's
allocation, then seff's, then (nothing measured) the job script itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tuneadvisor.advisor.expressions import mem_text


@dataclass(frozen=True)
class Measured:
    """What one input says the run was given: ``source`` names it in notes ("this
    recording"), the values are per task (cores) and per node (memory)."""

    source: str
    cpus_per_task: int | None = None
    mem_mib: float | None = None
    workers: int | None = None  # DataLoader workers seen or set


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def _count(facts: Mapping[str, object], *names: str) -> int | None:
    """The first of ``names`` that is a positive count."""
    for name in names:
        value = _number(facts.get(name))
        if value:
            return int(value)
    return None


def measured_nodes(facts: Mapping[str, object]) -> int | None:
    """The nodes of the run that accounting measured: its totals are over these."""
    return _count(facts, "sacct.alloc_nodes", "seff.nodes")


def _per_task(total: float | None, nodes: int, facts: Mapping[str, object]) -> int | None:
    """The job's cores as cores per task: seff and sacct count every task's, on every
    node. Each node runs a task at least, so a task never has more than a node's share
    (5 nodes x 40 cores are 40 per task, never 200)."""
    if total is None:
        return None
    tasks = _count(facts, "job.tasks_total", "sacct.max_tasks") or 1
    return max(1, int(total) // max(tasks, nodes))


def peak_nodes(facts: Mapping[str, object]) -> int:
    """What the job-wide peak is divided by for a per-node --mem: the fewer of the nodes it
    was measured over and the nodes the script asks for now. A run measured on 2 nodes and
    now asked on 1 needs the whole peak there; one measured on 1 node may keep its tasks
    together on each node of a wider job: never the smaller share."""
    counts = [n for n in (measured_nodes(facts), _count(facts, "job.nodes")) if n]
    return min(counts, default=1)


# Each source's busiest node, as far as it tells: jobstats measures each node; sacct's MaxRSS
# is the largest task's, times the tasks a node runs; seff's figure is the job's total.
_NODE_PEAKS = ("jobstats.mem_peak_node_mib", "sacct.mem_peak_node_mib", "seff.mem_used_node_mib")


def node_peak_facts(facts: Mapping[str, object]) -> dict[str, object]:
    """``usage.mem_peak_node_mib``: what --mem (per node) must hold of the measured peak.

    seff's and sacct's peak is the job's total over its nodes; the busiest node's own peak is
    not known from them, only each source's estimate of it (the largest is taken: memory
    advice never rests on the lower figure). A script that now asks for fewer nodes than
    were measured puts more of the total on each."""
    peak = facts.get("usage.mem_peak_mib")
    if not isinstance(peak, int | float) or isinstance(peak, bool) or peak < 0:
        return {}
    share = float(peak) / peak_nodes(facts)
    estimates = [float(v) for n in _NODE_PEAKS if (v := _number(facts.get(n))) is not None]
    node = max([*estimates, share])  # never under the share
    # seff's and sacct's estimates are of the job's total. Where memory is enforced per node
    # (a cgroup, which says OUT_OF_MEMORY when it kills) no node held more than the per-node
    # request it ran with: the busiest node's peak is at most that (2 nodes, "62.81 GB of
    # 64.00 GB": 32 GB a node, not 62.81). Only OverMemoryKill's sampled kill (FAILED or
    # CANCELLED over the request) may have seen a node past it. jobstats measures each node:
    # its figure stands as measured.
    request = _number(facts.get("alloc.mem_mib"))
    sampled_kill = facts.get("usage.killed_for_memory") is True and (
        facts.get("usage.state") != "OUT_OF_MEMORY"
    )
    if request is not None and not sampled_kill:
        node = min(node, max(request, share))
        measured = _number(facts.get("jobstats.mem_peak_node_mib"))
        node = max(node, measured) if measured is not None else node
    return {"usage.mem_peak_node_mib": min(float(peak), node)}


def from_accounting(facts: Mapping[str, object]) -> list[Measured]:
    """sacct's allocation, then seff's: cores per task, memory per node (both print the
    job's totals over its nodes)."""
    out = []
    nodes = _count(facts, "sacct.alloc_nodes") or 1
    req = _number(facts.get("sacct.req_mem_mib"))
    cores = _per_task(_number(facts.get("sacct.alloc_cpus")), nodes, facts)
    if cores or req:
        out.append(Measured("this sacct record", cores, req / nodes if req else None))
    seff_nodes = _count(facts, "seff.nodes") or 1
    seff_mem = _number(facts.get("seff.mem_requested_mib"))
    seff_cores = _per_task(_number(facts.get("seff.cores")), seff_nodes, facts)
    if seff_cores or seff_mem:
        out.append(Measured("this seff", seff_cores, seff_mem / seff_nodes if seff_mem else None))
    return out


def script_workers(facts: Mapping[str, object], cores: int | None) -> int | None:
    """The workers the training script starts with ``cores`` cores per task, as the scan
    reads it: a number written down (in the script, or passed to its option on the launch
    line: ``--num-workers 1``), or SLURM_CPUS_PER_TASK (less one when it says so)."""
    source = facts.get("script.num_workers.source")
    value = facts.get("script.num_workers")
    literal = source == "literal" or facts.get("script.num_workers.passed_source") == "literal"
    if literal and isinstance(value, int):  # in the script, or passed on the launch line
        return value
    if cores is None:
        return None
    if source == "slurm_env":
        expr = str(facts.get("script.num_workers.expr") or "")
        return max(0, cores - 1) if re.search(r"-\s*1\b", expr) else cores
    if facts.get("script.num_workers.passed_source") == "slurm_env":
        passed = str(facts.get("script.num_workers.passed") or "")
        return cores if "SLURM_CPUS_PER_TASK" in passed else None
    return None


def recorded_allocation(facts: Mapping[str, object], digest: str | None) -> Measured | None:
    """What the script's `# tuneadvisor: tuned from` line says the evidence was measured
    under, when the evidence given now is that evidence (``digest`` is its digest): a profile
    alone applied again to the script it tuned is read as of the run it measured, not of the
    script's new request (which would double the cores at every apply). Other evidence (a
    new profile) is measured under the script as it is."""
    if digest is None or facts.get("job.tuned_from.digest") != digest:
        return None
    cores, mem = facts.get("job.tuned_from.cpus_per_task"), facts.get("job.tuned_from.mem_mib")
    workers = facts.get("job.tuned_from.workers")
    return Measured(
        "the evidence this script was tuned from",
        cores if isinstance(cores, int) else None,
        _number(mem),
        workers if isinstance(workers, int) else None,
    )


def allocation_facts(
    facts: Mapping[str, object],
    measured: Sequence[Measured] = (),
    recorded: Sequence[Measured] = (),
) -> tuple[dict[str, object], list[str]]:
    """``alloc.*`` facts (and the peak's share per node) and the note where the script now
    differs from the measured run.

    ``measured``: what recordings and run records said, before accounting's view;
    ``recorded``: what the script says its evidence had (``recorded_allocation``), after it
    (an allocation the evidence states itself is the more direct)."""
    sources = [*measured, *from_accounting(facts), *recorded]
    cores_from = next((m for m in sources if m.cpus_per_task), None)
    mem_from = next((m for m in sources if m.mem_mib), None)
    out: dict[str, object] = {}
    notes: list[str] = []
    now_cores = facts.get("job.cpus_per_task")
    now_mem = facts.get("job.mem_mib")
    cores: int | None = None
    if cores_from is not None and cores_from.cpus_per_task:
        cores = cores_from.cpus_per_task
        out["alloc.cpus_per_task"] = cores
        if isinstance(now_cores, int) and now_cores != cores:
            notes.append(
                f"{cores_from.source} is of a {_cores(cores)} run; the job script now asks for "
                f"{now_cores} {'core' if now_cores == 1 else 'cores'}: the advice is computed "
                "from the run that was measured"
            )
    elif isinstance(now_cores, int):
        cores = now_cores
        out["alloc.cpus_per_task"] = now_cores
    if mem_from is not None and mem_from.mem_mib:
        out["alloc.mem_mib"] = mem_from.mem_mib
        if isinstance(now_mem, int | float) and abs(now_mem - mem_from.mem_mib) >= 1:
            notes.append(
                f"{mem_from.source} is of a run with {mem_text(mem_from.mem_mib)} of memory; "
                f"the job script now asks for {mem_text(now_mem)}"
            )
    elif isinstance(now_mem, int | float):
        out["alloc.mem_mib"] = float(now_mem)
    workers = next((m.workers for m in sources if m.workers is not None), None)
    if workers is None:
        seen = facts.get("host.proc.workers.max")
        workers = seen if isinstance(seen, int) else script_workers(facts, cores)
    if workers is not None:
        out["alloc.workers"] = workers
    out.update(node_peak_facts({**facts, **out}))  # bounded by the per-node request
    return out, notes


def _cores(n: int) -> str:
    return f"{n}-core"


# The script and Slurm's record of the same job are two inputs: comparing them is the
# advisor's, as comparing the measured run with the script is.
_OPTIONS = {  # job.* fact -> the sbatch option and unit it comes from
    "job.time_s": ("--time", " s"),
    "job.partition": ("--partition", ""),
    "job.cpus_per_task": ("--cpus-per-task", ""),
    "job.mem_mib": ("--mem", " MiB"),
    "job.mem_per_cpu_mib": ("--mem-per-cpu", " MiB"),
    "job.nodes": ("--nodes", ""),
    "job.tasks_per_node": ("--ntasks-per-node", ""),
}


def ran_differently(script: Mapping[str, object], as_run: Mapping[str, object]) -> list[str]:
    """Notes for options the job ran with that its script does not say (sbatch's command
    line wins over #SBATCH lines). Facts derived from options (the tasks in all) follow
    silently."""
    notes = []
    for name, value in as_run.items():
        if name in script and name in _OPTIONS and script[name] != value:
            option, unit = _OPTIONS[name]
            notes.append(
                f"the job ran with {option} {_text(value)}{unit} where its script says "
                f"{_text(script[name])}{unit} (sbatch's command line wins): the advice uses "
                "what it ran with"
            )
    return notes


def _text(value: object) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)
