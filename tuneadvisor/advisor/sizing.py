"""Sizing the input pipeline from the step-time model in one step: the smallest worker count
whose predicted rate covers the loop's with a margin, the cores they need, the caps that bind
(the node, the site's cores per GPU, a fair share of the node), and the ``model.*`` facts the
dataloader-bound rules suggest from. Pure: facts in, facts out."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from tuneadvisor.advisor.steptime import StepBudget, step_budget

# The pipeline must make batches this much faster than the loop takes them: workers' times
# per batch vary, and a pipeline just at the loop's rate leaves it waiting half the time.
MARGIN = 0.2
# Today's doubling, where the model has no budget (the measured run's workers unknown).
FALLBACK_MIN_CORES = 4
# Above this wait share the main process mostly waits: a capped allocation gives every core
# to a worker (measured on the bundled MNIST run: bench/RESULTS.md).
MAIN_WAITS_SHARE = 0.5


@dataclass(frozen=True)
class Cap:
    cores: int  # cores per task it allows
    by: str  # "the node's cores", ...


@dataclass(frozen=True)
class Sizing:
    workers: int  # per rank
    cores_per_task: int
    wanted_workers: int  # what the model asked for before any cap
    cap: Cap | None  # the cap that bound, if one did


def _int(facts: Mapping[str, object], name: str) -> int | None:
    value = facts.get(name)
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return int(value)
    return None


def ranks_per_task(facts: Mapping[str, object]) -> int:
    return _int(facts, "job.ranks_per_task") or 1


def caps(facts: Mapping[str, object]) -> list[Cap]:
    """The limits on cores per task, tightest first."""
    tasks = _int(facts, "job.tasks_per_node") or 1
    node_cores, node_gpus = _int(facts, "node.cores"), _int(facts, "node.gpus")
    gpus, per_gpu = _int(facts, "job.gpus"), _int(facts, "node.max_cores_per_gpu")
    out = []
    if node_cores:
        out.append(Cap(max(1, node_cores // tasks), "the node's cores"))
    if per_gpu and gpus:
        out.append(Cap(per_gpu * max(1, gpus // tasks), "the site's cores per GPU"))
    if node_cores and node_gpus and gpus and gpus < node_gpus:
        share = node_cores * gpus // node_gpus
        out.append(Cap(max(1, share // tasks), "a fair share of the node (its cores per GPU)"))
    return sorted(out, key=lambda c: c.cores)


def wanted_workers(budget: StepBudget) -> int:
    """The smallest count whose pipeline rate covers the loop's rate with MARGIN."""
    if budget.workers_measured:
        return budget.workers_measured
    return max(1, math.ceil(budget.worker_steps * (1 + MARGIN) / budget.busy - 1e-9))


def size(budget: StepBudget, facts: Mapping[str, object]) -> Sizing:
    ranks = ranks_per_task(facts)
    want = wanted_workers(budget)
    cores = ranks * (want + 1)
    limits = caps(facts)
    cap = limits[0] if limits and limits[0].cores < cores else None
    workers = want
    if cap is not None:
        cores = cap.cores
        per_rank = cores // ranks
        workers = max(1, per_rank if budget.wait >= MAIN_WAITS_SHARE else per_rank - 1)
    measured = _int(facts, "alloc.cpus_per_task")
    if measured and measured > cores:  # the run had more: never fewer (others size down)
        cores = measured
    return Sizing(workers=min(workers, want), cores_per_task=cores, wanted_workers=want, cap=cap)


def _fallback(facts: Mapping[str, object]) -> dict[str, object]:
    """Today's doubling where the model cannot size (the measured run's workers unknown)."""
    cores = max(FALLBACK_MIN_CORES, (_int(facts, "alloc.cpus_per_task") or 1) * 2)
    share = facts.get("profile.loader_share", facts.get("trace.dataloader_share"))
    waits = isinstance(share, int | float) and share >= MAIN_WAITS_SHARE
    workers = max(1, cores // ranks_per_task(facts) - (0 if waits else 1))
    return {"model.storage_bound": False, "model.workers": workers, "model.cores_per_task": cores}


def model_facts(facts: Mapping[str, object]) -> dict[str, object]:
    """``model.*``: the sizing the dataloader-bound rules suggest, and whether the pipeline
    waits on storage (then no sizing: more workers will not help)."""
    budget = step_budget(facts)
    if budget is None:
        waiting = any(
            name in facts
            for name in (
                "profile.loader_share",
                "trace.dataloader_share",
                "host.proc.main_cpu_pct.mean",
            )
        )
        return _fallback(facts) if waiting and "alloc.cpus_per_task" in facts else {}
    if budget.storage_bound:  # the measured setting stays: more workers will not help
        kept: dict[str, object] = {"model.storage_bound": True, "model.workers": budget.workers}
        cores = _int(facts, "alloc.cpus_per_task")
        return kept | ({"model.cores_per_task": cores} if cores else {})
    sizing = size(budget, facts)
    return {
        "model.storage_bound": False,
        "model.workers": sizing.workers,
        "model.cores_per_task": sizing.cores_per_task,
    }
