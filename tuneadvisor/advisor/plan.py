"""From findings to one consistent set of changes.

Several findings may suggest the same knob; the plan merges them and keeps the knobs that
move together consistent: --cpus-per-task and num_workers per rank, --ntasks-per-node with
GPUs per node, all bounded by the node's shape; and memory never below the observed peak.

How many workers a number of cores gets (one core kept for the main process or not) is the
rules' word: their [params] and expressions compute it, and the plan takes their value. When
the node caps the cores, the workers lose as many as the cores did.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from types import MappingProxyType

from tuneadvisor.advisor.expressions import mem_text, time_text
from tuneadvisor.advisor.fact_view import FactView, as_view, positive
from tuneadvisor.advisor.facts import Facts
from tuneadvisor.advisor.findings import Finding
from tuneadvisor.advisor.measured_allocation import script_workers
from tuneadvisor.advisor.sizing import caps
from tuneadvisor.records import record

# Memory headroom over the observed peak, as jobstats suggests.
MEM_HEADROOM = 1.2
# Memory counted for each DataLoader worker the plan adds when no recording measured one: a
# worker is a process with its own copy of the dataset object and its batches in flight.
WORKER_ALLOWANCE_MIB = 512
# The reason of a --mem raised because the script asks for less than the measured peak.
PEAK_REASON = "measured peak"
NODE_REASON = "the node's memory"


@record
class Change:
    """One value the plan sets, and the findings it comes from."""

    value: object
    because: tuple[str, ...]  # finding ids


def _frozen(table: Mapping[str, Change]) -> Mapping[str, Change]:
    return MappingProxyType(dict(table))


@record
class Plan:
    """The changes, read-only once made (each table is copied into a read-only mapping)."""

    sbatch: Mapping[str, Change] = field(default_factory=dict)  # long option -> new value
    script: Mapping[str, Change] = field(default_factory=dict)  # training setting -> new value
    env: Mapping[str, Change] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # bounds applied, conflicts resolved
    # The workers leave one core of --cpus-per-task to the main process (the rules' choice,
    # from the cores and workers they suggest): how a script edit should derive num_workers
    # from SLURM_CPUS_PER_TASK.
    reserve_main_core: bool = True
    # the options a node's or partition's size bound (its notes say by how much)
    capped: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("sbatch", "script", "env"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))

    def is_empty(self) -> bool:
        return not (self.sbatch or self.script or self.env)


@record
class Suggested:
    """One finding's value for one setting."""

    value: object
    finding: str  # its id


def _merge(findings: Iterable[Finding], section: str) -> dict[str, list[Suggested]]:
    merged: dict[str, list[Suggested]] = {}
    for finding in findings:
        table = getattr(finding.suggest, section)
        for key, value in table.items():
            merged.setdefault(key, []).append(Suggested(value, finding.id))
    return merged


def _size(key: str, value: object) -> float | None:
    """A comparable size of a suggested value: numbers as they are, memory and time
    spelled the sbatch way parsed to MiB and seconds; None when it is no size."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        return None
    # imported where a memory or a time is sized: a report that suggests neither (a profile
    # alone) never loads the Slurm units
    from tuneadvisor.slurm.units import parse_memory, parse_time

    try:
        if key.startswith("mem"):
            return float(parse_memory(value, name=key))
        if key == "time":
            seconds = parse_time(value).seconds
            return float("inf") if seconds is None else float(seconds)
    except ValueError:
        return None
    return None


def _pick(key: str, values: Sequence[Suggested]) -> Change:
    """More of a resource wins when findings disagree: a run that fails for lack of it
    costs more than an idle core."""
    because = tuple(sorted({s.finding for s in values}))
    sized = [(_size(key, s.value), s.value) for s in values]
    if all(size is not None for size, _ in sized):
        return Change(max(sized, key=lambda pair: pair[0] or 0.0)[1], because)
    return Change(values[-1].value, because)


def _as_int(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _core_limit(v: FactView, tasks_per_node: int | None = None) -> int | None:
    """The most --cpus-per-task the node allows each task (of ``tasks_per_node``, else the
    job's): the node's cores and the site's cores per GPU, as the step-time model caps
    them; None when unknown."""
    limits = caps(v, tasks_per_node, fair_share=False)
    return limits[0].cores if limits else None


def _planned_tasks_per_node(sbatch: Mapping[str, Change]) -> int | None:
    """Tasks per node once the plan's own task changes apply (unused-tasks asks for one)."""
    if "ntasks-per-node" in sbatch:
        return _as_int(sbatch["ntasks-per-node"].value)
    if "ntasks" in sbatch and _as_int(sbatch["ntasks"].value) == 1:
        return 1
    return None


def _bound_cores(
    cores_change: Change | None,
    workers: Change | None,
    v: FactView,
    notes: list[str],
    tasks_per_node: int | None = None,
    bound: list[str] | None = None,
) -> tuple[Change | None, Change | None]:
    """--cpus-per-task within the node, and num_workers with it: the rules' workers, less
    as many as the cap took cores away (they keep the rules' choice of a main core)."""
    cores = _as_int(cores_change.value) if cores_change else None
    limit = _core_limit(v, tasks_per_node)
    if cores_change is None or cores is None or limit is None or cores <= limit:
        return cores_change, workers
    notes.append(f"--cpus-per-task {cores} capped at {limit}: the node allows no more per task")
    if bound is not None:
        bound.append("--cpus-per-task")
    capped = Change(limit, cores_change.because)
    asked = _as_int(workers.value) if workers else None
    if workers is None or asked is None:
        return capped, workers
    fewer = max(1, asked - (cores - limit))
    if fewer != asked:
        reserved = "one core stays" if fewer < limit else "no core is kept"
        notes.append(f"num_workers {fewer} for {limit} cores: {reserved} for the main process")
    return capped, Change(fewer, workers.because)


def _mem_floor(v: FactView, workers: Change | None, notes: list[str]) -> float | None:
    """The least --mem the plan may write: 1.2 x the peak, the peak grown by the workers
    the plan adds (each is a process with its own memory); None without a recorded peak."""
    peak = positive(v.usage.mem_peak_mib)
    if peak is None:
        return None
    new = _as_int(workers.value) if workers is not None else None
    known = _peak_workers(v)
    before = known or 0  # not known: counted from none, the most memory
    if new is not None and new > before:
        rss, procs = v.host.proc__rss__max_mib, v.host.proc__count__max
        if rss is not None and procs:
            each, how = rss / procs, "the recording's RSS per process"
        else:
            each, how = WORKER_ALLOWANCE_MIB, f"an allowance of {WORKER_ALLOWANCE_MIB} MiB each"
        had = (
            f"{known} DataLoader worker{'' if known == 1 else 's'}"
            if known is not None
            else "an unknown number of DataLoader workers (counted as none)"
        )
        notes.append(
            f"memory: the peak {peak:,.0f} MiB was measured with {had}; "
            f"{new - before} more add {each * (new - before):,.0f} MiB ({how})"
        )
        extra = each * (new - before)
    else:
        extra = 0.0
    return (_node_peak(v, float(peak)) + extra / _peak_nodes(v)) * MEM_HEADROOM


def _peak_workers(v: FactView) -> int | None:
    """The DataLoader workers of the run whose peak ``usage.mem_peak_mib`` is: accounting's
    (seff, sacct, jobstats), so the job's, as its script starts them (a number in the script
    or on its launch line) when the script is as it ran; a script `apply` tuned (its `tuned
    from` line) no longer is, and a profile's run (``alloc.workers``) is the measured one."""
    if v.job.tuned_from__digest is None:
        mine = script_workers(v, v.job.cpus_per_task)
        if mine is not None:
            return mine
    return v.alloc.workers


def _least_node_need(v: FactView) -> float | None:
    """The least a node of the job needs of the measured peak: its even share over the
    nodes (the busiest node may have needed more: accounting often cannot tell). None
    without a recorded peak."""
    peak = positive(v.usage.mem_peak_mib)
    if peak is None:
        return None
    return float(peak) / _peak_nodes(v)


def _node_peak(v: FactView, peak: float) -> float:
    """The job-wide peak's part on its busiest node (usage.mem_peak_node_mib: a run whose
    peak was one task's needs all of it on that node), else its share per node."""
    node = v.usage.mem_peak_node_mib
    if node is not None and node >= 0:
        return float(node)
    return peak / _peak_nodes(v)


def _peak_nodes(v: FactView) -> int:
    """What the job-wide peak is divided by for a per-node --mem: the fewer of the nodes it
    was measured over and the nodes the script asks for now. A run measured on 2 nodes and
    now asked on 1 needs the whole peak there; one measured on 1 node may keep its tasks
    together on each node of a wider job: never the smaller share."""
    measured = v.sacct.alloc_nodes or v.seff.nodes
    counts = [n for n in (measured, v.job.nodes) if n]
    return min(counts, default=1)


def _bound_memory(
    change: Change | None,
    v: FactView,
    notes: list[str],
    workers: Change | None = None,
    bound: list[str] | None = None,
) -> Change | None:
    if change is None:
        return None
    from tuneadvisor.slurm.units import parse_memory

    try:
        mib: float | None = parse_memory(str(change.value))
    except ValueError:
        mib = None
    if mib is not None and mib <= 0:  # --mem=0 is all of a node's memory, never a guess
        notes.append("--mem=0 not written: it asks for all of a node's memory")
        return None
    if v.usage.killed_for_memory is True and not positive(v.usage.mem_peak_mib):
        notes.append(
            "the peak memory was not recorded before the job was killed: --mem is set from "
            "the request it ran with"
        )
    now_mib = v.job.mem_mib
    cut = now_mib is not None and mib is not None and mib < now_mib
    floor = _mem_floor(v, workers, notes)
    if floor is not None and mib is not None and mib < floor:
        floor_mib = math.ceil(floor / 1024) * 1024
        if now_mib is not None and floor_mib < now_mib:  # the diff lowers it, less than asked
            notes.append(
                f"--mem lowered from {mem_text(now_mib)} to {mem_text(floor_mib)}, not to "
                f"{change.value} (the peak alone): never below 1.2 x the peak with the added "
                "workers' memory"
            )
        else:
            notes.append(f"--mem raised to {mem_text(floor_mib)}: never below 1.2 x the peak")
        change = Change(mem_text(floor_mib), change.because)
        mib = floor_mib
        now = v.job.mem_mib
        if cut and now is not None and mib >= now:
            # a cut that the workers' memory undoes: no cut at all
            notes.append(f"--mem {mem_text(now)} left as it is: the run needs about that")
            return None
    node_mem = v.node.mem_mib
    if node_mem is not None and mib is not None and mib > node_mem:
        need = _least_node_need(v)
        if need is not None and need > node_mem:
            # Capped at the node it would be under what the run used: the job would be killed
            # again. Neither is written; what would fit is said instead. Against the default
            # ceiling too: an assumed node's size is no reason to write less than the run used.
            has = "an assumed node has" if v.node.assumed is True else "a node has"
            notes.append(
                f"--mem not changed: the run used at least {mem_text(math.ceil(need))} a node, "
                f"more than the {mem_text(node_mem)} {has}; spread the ranks over more nodes "
                "or need less memory a rank (a smaller batch, fewer DataLoader workers)"
            )
            return None
        notes.append(f"--mem capped at the node's {mem_text(node_mem)}")
        if bound is not None:
            bound.append("--mem")
        change = Change(mem_text(node_mem), change.because)
    return change


def _bound_time(change: Change | None, v: FactView, notes: list[str]) -> Change | None:
    """sbatch refuses a --time over the partition's MaxTime: suggest the limit instead."""
    limit = v.node.max_time_s
    if change is None or not limit:
        return change
    from tuneadvisor.slurm.units import parse_time

    try:
        seconds = parse_time(str(change.value)).seconds
    except ValueError:
        return change
    if seconds is not None and seconds > limit:
        notes.append(
            f"--time {change.value} capped at the partition's limit {time_text(limit)}; "
            "checkpoints let a longer run continue in the next job"
        )
        return Change(time_text(limit), change.because)
    return change


def _reserves_main_core(cores: Change | None, workers: Change | None) -> bool:
    """Whether the rules keep a core for the main process: fewer workers than cores
    (one core kept when they do not say both)."""
    c = _as_int(cores.value) if cores else None
    w = _as_int(workers.value) if workers else None
    return c is None or w is None or w < c


def _already_has_cores(
    cores: Change | None, workers: Change | None, v: FactView, notes: list[str]
) -> tuple[Change | None, Change | None]:
    """No cores change where the script already asks for at least as many as the measured
    run led to (it was changed since, maybe by an earlier apply): the advice does not
    compound. The workers then follow the script's cores, keeping the rules' main core."""
    new = _as_int(cores.value) if cores else None
    now = v.job.cpus_per_task
    if cores is None or new is None or now is None or now < new:
        return cores, workers
    limit = _core_limit(v)
    if limit is not None and now > limit:  # more than the node allows: the cap is the plan
        return cores, workers
    if now > new:
        notes.append(
            f"--cpus-per-task {now} kept: the script already asks for more than the "
            f"{new} this evidence leads to"
        )
    asked = _as_int(workers.value) if workers else None
    if workers is not None and asked is not None and now > new:
        workers = Change(max(1, now - max(0, new - asked)), workers.because)
    return None, workers


def _not_lower_than_now(change: Change | None, v: FactView, notes: list[str]) -> Change | None:
    """A --mem raised for a run killed for memory never lowers what the script asks for
    now (an earlier apply, or the user, gave it more already)."""
    if change is None or v.usage.killed_for_memory is not True:
        return change
    now = v.job.mem_mib
    from tuneadvisor.slurm.units import parse_memory

    try:
        mib = parse_memory(str(change.value))
    except ValueError:
        return change
    if now is not None and now >= mib:
        if now > mib:
            notes.append(f"--mem {mem_text(now)} kept: more than this evidence asks for")
        return None
    return change


def _under_the_peak(v: FactView) -> Change | None:
    """A --mem the script asks for now that is below the measured peak (per node) is raised
    to it (the floor then adds the headroom): a tuned script never asks for less than the
    run used."""
    now, peak = v.job.mem_mib, v.usage.mem_peak_mib
    if now is None or peak is None or peak <= 0:
        return None
    node = _node_peak(v, float(peak))
    if now >= node:
        return None
    return Change(mem_text(math.ceil(node)), (PEAK_REASON,))


def _over_the_node(v: FactView, notes: list[str]) -> Change | None:
    """A --mem the script asks for now over what the site's node has: no node can hold it
    and sbatch refuses the job, so it is lowered to the node. Not against an assumed node
    (the size is not known), and not under a peak measured over it (then the site file is
    what is wrong, and the note says so)."""
    now, node = v.job.mem_mib, v.node.mem_mib
    if v.node.assumed is True:
        return None
    if now is None or node is None or now <= node:
        return None
    peak = v.usage.mem_peak_mib
    if peak is not None and _node_peak(v, float(peak)) > node:
        notes.append(
            f"--mem {mem_text(now)} kept: the run used more than the {mem_text(node)} the "
            "site file gives a node; check the site file"
        )
        return None
    notes.append(
        f"--mem {mem_text(now)} lowered to the node's {mem_text(node)}: no node holds more, "
        "and sbatch refuses a job no node can run"
    )
    return Change(mem_text(node), (NODE_REASON,))


def make_plan(findings: Iterable[Finding], facts: Facts | FactView) -> Plan:
    v = as_view(facts)
    findings = list(findings)
    sbatch = {k: _pick(k, v) for k, v in _merge(findings, "sbatch").items()}
    script = {k: _pick(k, v) for k, v in _merge(findings, "script").items()}
    env = {k: _pick(k, v) for k, v in _merge(findings, "env").items()}
    notes: list[str] = []
    capped: list[str] = []
    # as the rules chose it, before a cap (one core left has no main core to spare)
    reserve = _reserves_main_core(sbatch.get("cpus-per-task"), script.get("num_workers"))
    cores, workers = _bound_cores(
        sbatch.get("cpus-per-task"),
        script.get("num_workers"),
        v,
        notes,
        _planned_tasks_per_node(sbatch),
        capped,
    )
    cores, workers = _already_has_cores(cores, workers, v, notes)
    mem = (
        _not_lower_than_now(sbatch.get("mem"), v, notes)
        or _under_the_peak(v)
        or _over_the_node(v, notes)
    )
    bounded = {
        "cpus-per-task": cores,
        "mem": _bound_memory(mem, v, notes, workers, capped),
        "time": _bound_time(sbatch.get("time"), v, notes),
    }
    if bounded["mem"] is not None:
        sbatch.setdefault("mem", bounded["mem"])  # raised to the peak: no finding asked
    sbatch = {k: c for k, c in ((k, bounded.get(k, c)) for k, c in sbatch.items()) if c}
    if "mem" in sbatch and _same_memory(sbatch["mem"].value, v.job.mem_mib):
        del sbatch["mem"]
    if workers is not None:
        script["num_workers"] = workers
    return Plan(sbatch, script, env, tuple(notes), reserve, tuple(capped))


def _same_memory(value: object, now: object) -> bool:
    from tuneadvisor.slurm.units import parse_memory

    try:
        return isinstance(now, int | float) and parse_memory(str(value)) == now
    except ValueError:
        return False
