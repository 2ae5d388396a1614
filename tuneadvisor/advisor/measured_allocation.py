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

from tuneadvisor.advisor.expressions import mem_text
from tuneadvisor.advisor.fact_view import Alloc, FactView, Job, Usage, as_view, positive, view
from tuneadvisor.records import record


@record
class MeasuredAllocation:
    """What one input says the run was given: ``source`` names it in notes ("this
    recording"), the values are per task (cores) and per node (memory)."""

    source: str
    cpus_per_task: int | None = None
    mem_mib: float | None = None
    workers: int | None = None  # DataLoader workers seen or set


def _mib(value: float | None) -> float | None:
    """A positive size as a float (memory per node is a float fact)."""
    return float(value) if (value := positive(value)) is not None else None


def measured_nodes(facts: Mapping[str, object] | FactView) -> int | None:
    """The nodes of the run that accounting measured: its totals are over these."""
    v = as_view(facts)
    return positive(v.sacct.alloc_nodes) or positive(v.seff.nodes)


def _per_task(total: int | None, nodes: int, v: FactView) -> int | None:
    """The job's cores as cores per task: seff and sacct count every task's, on every
    node. Each node runs a task at least, so a task never has more than a node's share
    (5 nodes x 40 cores are 40 per task, never 200)."""
    if total is None:
        return None
    tasks = positive(v.job.tasks_total) or positive(v.sacct.max_tasks) or 1
    return max(1, int(total) // max(tasks, nodes))


def peak_nodes(facts: Mapping[str, object] | FactView) -> int:
    """What the job-wide peak is divided by for a per-node --mem: the fewer of the nodes it
    was measured over and the nodes the script asks for now. A run measured on 2 nodes and
    now asked on 1 needs the whole peak there; one measured on 1 node may keep its tasks
    together on each node of a wider job: never the smaller share."""
    v = as_view(facts)
    counts = [n for n in (measured_nodes(v), positive(v.job.nodes)) if n]
    return min(counts, default=1)


def node_peak_facts(
    facts: Mapping[str, object] | FactView, request_mib: float | None = None
) -> dict[str, object]:
    """``usage.mem_peak_node_mib``: what --mem (per node) must hold of the measured peak.

    seff's and sacct's peak is the job's total over its nodes; the busiest node's own peak is
    not known from them, only each source's estimate of it (the largest is taken: memory
    advice never rests on the lower figure). A script that now asks for fewer nodes than
    were measured puts more of the total on each. ``request_mib``: the per-node memory the run
    had (else ``alloc.mem_mib``), which no node outgrew where a cgroup enforced it."""
    v = as_view(facts)
    peak = v.usage.mem_peak_mib
    if peak is None or peak < 0:
        return {}
    # Each source's busiest node, as far as it tells: jobstats measures each node; sacct's
    # MaxRSS is the largest task's, times the tasks a node runs; seff's figure is the job's
    # total.
    node_peaks = (v.jobstats.mem_peak_node_mib, v.sacct.mem_peak_node_mib, v.seff.mem_used_node_mib)
    estimates = [m for n in node_peaks if (m := _mib(n)) is not None]
    share = float(peak) / peak_nodes(v)
    node = max([*estimates, share])  # never under the share
    # seff's and sacct's estimates are of the job's total. Where memory is enforced per node
    # (a cgroup, which says OUT_OF_MEMORY when it kills) no node held more than the per-node
    # request it ran with: the busiest node's peak is at most that (2 nodes, "62.81 GB of
    # 64.00 GB": 32 GB a node, not 62.81). Only OverMemoryKill's sampled kill (FAILED or
    # CANCELLED over the request) may have seen a node past it. jobstats measures each node:
    # its figure stands as measured.
    request = request_mib if request_mib is not None else _mib(v.alloc.mem_mib)
    sampled_kill = v.usage.killed_for_memory is True and v.usage.state != "OUT_OF_MEMORY"
    if request is not None and not sampled_kill:
        node = min(node, max(request, share))
        measured = _mib(v.jobstats.mem_peak_node_mib)
        node = max(node, measured) if measured is not None else node
    return Usage(mem_peak_node_mib=min(float(peak), node)).facts()


def from_accounting(facts: Mapping[str, object] | FactView) -> list[MeasuredAllocation]:
    """sacct's allocation, then seff's: cores per task, memory per node (both print the
    job's totals over its nodes)."""
    v = as_view(facts)
    out = []
    nodes = positive(v.sacct.alloc_nodes) or 1
    req = _mib(v.sacct.req_mem_mib)
    cores = _per_task(positive(v.sacct.alloc_cpus), nodes, v)
    if cores or req:
        out.append(MeasuredAllocation("this sacct record", cores, req / nodes if req else None))
    seff_nodes = positive(v.seff.nodes) or 1
    seff_mem = _mib(v.seff.mem_requested_mib)
    seff_cores = _per_task(positive(v.seff.cores), seff_nodes, v)
    if seff_cores or seff_mem:
        out.append(
            MeasuredAllocation("this seff", seff_cores, seff_mem / seff_nodes if seff_mem else None)
        )
    return out


def script_workers(facts: Mapping[str, object] | FactView, cores: int | None) -> int | None:
    """The workers the training script starts with ``cores`` cores per task, as the scan
    reads it: a number written down (in the script, or passed to its option on the launch
    line: ``--num-workers 1``), or SLURM_CPUS_PER_TASK (less one when it says so)."""
    script = as_view(facts).script
    source, value = script.num_workers__source, script.num_workers
    literal = source == "literal" or script.num_workers__passed_source == "literal"
    if literal and value is not None:  # in the script, or passed on the launch line
        return value
    if cores is None:
        return None
    if source == "slurm_env":
        expr = script.num_workers__expr or ""
        return max(0, cores - 1) if re.search(r"-\s*1\b", expr) else cores
    if script.num_workers__passed_source == "slurm_env":
        passed = script.num_workers__passed or ""
        return cores if "SLURM_CPUS_PER_TASK" in passed else None
    return None


def recorded_allocation(
    facts: Mapping[str, object] | FactView, digest: str | None
) -> MeasuredAllocation | None:
    """What the script's `# tuneadvisor: tuned from` line says the evidence was measured
    under, when the evidence given now is that evidence (``digest`` is its digest): a profile
    alone applied again to the script it tuned is read as of the run it measured, not of the
    script's new request (which would double the cores at every apply). Other evidence (a
    new profile) is measured under the script as it is."""
    job = as_view(facts).job
    if digest is None or job.tuned_from__digest != digest:
        return None
    return MeasuredAllocation(
        "the evidence this script was tuned from",
        job.tuned_from__cpus_per_task,
        _mib(job.tuned_from__mem_mib),
        job.tuned_from__workers,
    )


def allocation_facts(
    facts: Mapping[str, object],
    measured: Sequence[MeasuredAllocation] = (),
    recorded: Sequence[MeasuredAllocation] = (),
) -> tuple[dict[str, object], list[str]]:
    """``alloc.*`` facts (and the peak's share per node) and the note where the script now
    differs from the measured run.

    ``measured``: what recordings and run records said, before accounting's view;
    ``recorded``: what the script says its evidence had (``recorded_allocation``), after it
    (an allocation the evidence states itself is the more direct)."""
    v = view(facts)
    sources = [*measured, *from_accounting(v), *recorded]
    cores_from = next((m for m in sources if m.cpus_per_task), None)
    mem_from = next((m for m in sources if m.mem_mib), None)
    notes: list[str] = []
    now_cores, now_mem = v.job.cpus_per_task, v.job.mem_mib
    cores: int | None = None
    mem: float | None = None
    if cores_from is not None and cores_from.cpus_per_task:
        cores = cores_from.cpus_per_task
        if now_cores is not None and now_cores != cores:
            notes.append(
                f"{cores_from.source} is of a {_cores(cores)} run; the job script now asks for "
                f"{now_cores} {'core' if now_cores == 1 else 'cores'}: the advice is computed "
                "from the run that was measured"
            )
    elif now_cores is not None:
        cores = now_cores
    if mem_from is not None and mem_from.mem_mib:
        mem = mem_from.mem_mib
        if now_mem is not None and abs(now_mem - mem_from.mem_mib) >= 1:
            notes.append(
                f"{mem_from.source} is of a run with {mem_text(mem_from.mem_mib)} of memory; "
                f"the job script now asks for {mem_text(now_mem)}"
            )
    elif now_mem is not None:
        mem = float(now_mem)
    workers = next((m.workers for m in sources if m.workers is not None), None)
    if workers is None:
        seen = v.host.proc__workers__max
        workers = seen if seen is not None else script_workers(v, cores)
    out = Alloc(cpus_per_task=cores, mem_mib=mem, workers=workers).facts()
    out.update(node_peak_facts(v, request_mib=mem))  # bounded by the per-node request
    return out, notes


def _cores(n: int) -> str:
    return f"{n}-core"


# The script and Slurm's record of the same job are two inputs: comparing them is the
# advisor's, as comparing the measured run with the script is.
_OPTIONS = {  # job.* fact -> the sbatch option and unit it comes from (a KeyError at import
    # for a field Job does not have)
    Job.fact_name(field): (option, unit)
    for field, option, unit in (
        ("time_s", "--time", " s"),
        ("partition", "--partition", ""),
        ("cpus_per_task", "--cpus-per-task", ""),
        ("mem_mib", "--mem", " MiB"),
        ("mem_per_cpu_mib", "--mem-per-cpu", " MiB"),
        ("nodes", "--nodes", ""),
        ("tasks_per_node", "--ntasks-per-node", ""),
    )
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
