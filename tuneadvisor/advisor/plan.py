"""From findings to one consistent set of changes.

Several findings may suggest the same knob; the plan merges them and keeps the knobs that
move together consistent: --cpus-per-task and num_workers per rank (one core stays with the
main process), --ntasks-per-node with GPUs per node, all bounded by the node's shape; and
memory never below the observed peak.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from tuneadvisor.advisor.expressions import mem_text, time_text
from tuneadvisor.advisor.facts import Facts
from tuneadvisor.advisor.findings import Finding
from tuneadvisor.slurm.units import parse_memory, parse_time

# Memory headroom over the observed peak, as jobstats suggests.
MEM_HEADROOM = 1.2
# Above this DataLoader share the main process mostly waits for batches: it needs no core of
# its own, and every core goes to a worker. Below it one core stays with the main process.
# (rules/dataloader-bound.toml's main_waits_share says the same.) Measured on the bundled
# input-bound MNIST run: 2 workers on 2 cores beat 1 worker on 2 cores (bench/RESULTS.md).
MAIN_WAITS_SHARE = 0.5


def workers_for(cores: int, facts: Facts) -> int:
    """DataLoader workers per rank for ``cores`` cores per task."""
    share = facts.get("profile.loader_share")
    waits = isinstance(share, int | float) and share >= MAIN_WAITS_SHARE
    return max(1, cores if waits else cores - 1)


@dataclass(frozen=True)
class Change:
    value: object
    because: tuple[str, ...]  # finding ids


@dataclass(frozen=True)
class Plan:
    sbatch: dict[str, Change] = field(default_factory=dict)  # long option -> new value
    script: dict[str, Change] = field(default_factory=dict)  # training setting -> new value
    env: dict[str, Change] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # bounds applied, conflicts resolved

    def is_empty(self) -> bool:
        return not (self.sbatch or self.script or self.env)


def _merge(findings: Iterable[Finding], section: str) -> dict[str, list[tuple[object, str]]]:
    merged: dict[str, list[tuple[object, str]]] = {}
    for finding in findings:
        table = getattr(finding.suggest, section)
        for key, value in table.items():
            merged.setdefault(key, []).append((value, finding.id))
    return merged


def _size(key: str, value: object) -> float | None:
    """A comparable size of a suggested value: numbers as they are, memory and time
    spelled the sbatch way parsed to MiB and seconds; None when it is no size."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        return None
    try:
        if key.startswith("mem"):
            return float(parse_memory(value, name=key))
        if key == "time":
            seconds = parse_time(value).seconds
            return float("inf") if seconds is None else float(seconds)
    except ValueError:
        return None
    return None


def _pick(key: str, values: list[tuple[object, str]]) -> Change:
    """More of a resource wins when findings disagree: a run that fails for lack of it
    costs more than an idle core."""
    because = tuple(sorted({fid for _, fid in values}))
    sized = [(_size(key, v), v) for v, _ in values]
    if all(size is not None for size, _ in sized):
        return Change(max(sized, key=lambda pair: pair[0] or 0.0)[1], because)
    return Change(values[-1][0], because)


def _as_int(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _bound_cores(plan: Plan, facts: Facts, notes: list[str]) -> None:
    change = plan.sbatch.get("cpus-per-task")
    cores = _as_int(change.value) if change else None
    if change is None or cores is None:
        return
    limit = None
    node_cores = _as_int(facts.get("node.cores"))
    tasks = _as_int(facts.get("job.tasks_per_node")) or 1
    if node_cores:
        limit = max(1, node_cores // tasks)  # never 0: sbatch refuses --cpus-per-task=0
    per_gpu = _as_int(facts.get("node.max_cores_per_gpu"))
    gpus = _as_int(facts.get("job.gpus"))
    if per_gpu and gpus:
        gpu_limit = per_gpu * max(1, gpus // tasks)
        limit = gpu_limit if limit is None else min(limit, gpu_limit)
    if limit is not None and cores > limit:
        notes.append(f"--cpus-per-task {cores} capped at {limit}: the node allows no more per task")
        plan.sbatch["cpus-per-task"] = Change(limit, change.because)
        cores = limit
    if "num_workers" in plan.script:
        workers = workers_for(cores, facts)
        if plan.script["num_workers"].value != workers:
            reserved = "one core stays" if workers < cores else "no core is kept"
            notes.append(
                f"num_workers {workers} for {cores} cores: {reserved} for the main process"
            )
        plan.script["num_workers"] = Change(workers, plan.script["num_workers"].because)


def _bound_memory(plan: Plan, facts: Facts, notes: list[str]) -> None:
    change = plan.sbatch.get("mem")
    if change is None:
        return
    try:
        mib: float | None = parse_memory(str(change.value))
    except ValueError:
        mib = None
    peak = facts.get("usage.mem_peak_mib")
    if isinstance(peak, int | float) and mib is not None and mib < peak * MEM_HEADROOM:
        floor_mib = math.ceil(peak * MEM_HEADROOM / 1024) * 1024
        notes.append(f"--mem raised to {mem_text(floor_mib)}: never below 1.2 x the peak")
        plan.sbatch["mem"] = Change(mem_text(floor_mib), change.because)
        mib = floor_mib
    node_mem = facts.get("node.mem_mib")
    if isinstance(node_mem, int | float) and mib is not None and mib > node_mem:
        notes.append(f"--mem capped at the node's {mem_text(node_mem)}")
        plan.sbatch["mem"] = Change(mem_text(node_mem), change.because)


def _bound_time(plan: Plan, facts: Facts, notes: list[str]) -> None:
    """sbatch refuses a --time over the partition's MaxTime: suggest the limit instead."""
    change = plan.sbatch.get("time")
    limit = _as_int(facts.get("node.max_time_s"))
    if change is None or not limit:
        return
    try:
        seconds = parse_time(str(change.value)).seconds
    except ValueError:
        return
    if seconds is not None and seconds > limit:
        notes.append(
            f"--time {change.value} capped at the partition's limit {time_text(limit)}; "
            "checkpoints let a longer run continue in the next job"
        )
        plan.sbatch["time"] = Change(time_text(limit), change.because)


def make_plan(findings: Iterable[Finding], facts: Facts) -> Plan:
    findings = list(findings)
    plan = Plan(
        sbatch={k: _pick(k, v) for k, v in _merge(findings, "sbatch").items()},
        script={k: _pick(k, v) for k, v in _merge(findings, "script").items()},
        env={k: _pick(k, v) for k, v in _merge(findings, "env").items()},
    )
    notes: list[str] = []
    _bound_cores(plan, facts, notes)
    _bound_memory(plan, facts, notes)
    _bound_time(plan, facts, notes)
    # Values equal to what the job already has are no change at all.
    current = facts.get("job.cpus_per_task")
    if "cpus-per-task" in plan.sbatch and plan.sbatch["cpus-per-task"].value == current:
        del plan.sbatch["cpus-per-task"]
    return Plan(plan.sbatch, plan.script, plan.env, tuple(notes))
