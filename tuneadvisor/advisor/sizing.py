"""Sizing the input pipeline from the step-time model in one step: the smallest worker count
whose predicted rate covers the loop's with a margin, the cores they need, the caps that bind
(the node, the site's cores per GPU, a fair share of the node), and the ``model.*`` facts the
dataloader-bound rules suggest from. Pure: facts in, facts out."""

from __future__ import annotations

import math
from collections.abc import Mapping

from tuneadvisor.advisor.fact_view import FactView, Model, as_view, first, positive
from tuneadvisor.advisor.steptime import StepBudget, step_budget
from tuneadvisor.records import record

# The pipeline must make batches this much faster than the loop takes them: workers' times
# per batch vary, and a pipeline just at the loop's rate leaves it waiting half the time.
MARGIN = 0.2
# Today's doubling, where the model has no budget (the measured run's workers unknown).
FALLBACK_MIN_CORES = 4
# Above this wait share the main process mostly waits: a capped allocation gives every core
# to a worker (measured on the bundled MNIST run: bench/RESULTS.md).
MAIN_WAITS_SHARE = 0.5


@record
class Cap:
    """A limit on the cores per task, and what sets it."""

    cores: int  # cores per task it allows
    by: str  # "the node's cores", ...


@record
class Sizing:
    """The workers and cores per task suggested, with what capped them."""

    workers: int  # per rank
    cores_per_task: int
    wanted_workers: int  # what the model asked for before any cap
    cap: Cap | None  # the cap that bound, if one did


def ranks_per_task(facts: Mapping[str, object] | FactView) -> int:
    return positive(as_view(facts).job.ranks_per_task) or 1


def caps(
    facts: Mapping[str, object] | FactView,
    tasks_per_node: int | None = None,
    fair_share: bool = True,
) -> list[Cap]:
    """The limits on cores per task (each of ``tasks_per_node`` tasks, else the job's),
    tightest first: the node's cores and the site's cores per GPU (the plan's bound), and
    with ``fair_share`` the cores of the GPUs the job has, of a node shared with others."""
    v = as_view(facts)
    tasks = tasks_per_node or positive(v.job.tasks_per_node) or 1
    node_cores, node_gpus = positive(v.node.cores), positive(v.node.gpus)
    gpus, per_gpu = positive(v.job.gpus), positive(v.node.max_cores_per_gpu)
    out = []
    if node_cores:
        # never 0: sbatch refuses --cpus-per-task=0
        out.append(Cap(max(1, node_cores // tasks), "the node's cores"))
    if per_gpu and gpus:
        out.append(Cap(per_gpu * max(1, gpus // tasks), "the site's cores per GPU"))
    if fair_share and node_cores and node_gpus and gpus and gpus < node_gpus:
        share = node_cores * gpus // node_gpus
        out.append(Cap(max(1, share // tasks), "a fair share of the node (its cores per GPU)"))
    return sorted(out, key=lambda c: c.cores)


def wanted_workers(budget: StepBudget) -> int:
    """The smallest count whose pipeline rate covers the loop's rate with MARGIN: the
    workers' time per batch, over the step's time left to them (the loop's floor, less the
    time the intra-op threads hold every core). Where the threads leave them almost none,
    the pipeline's part of the step within MARGIN of the compute's: more workers past that
    buy little. The assumed cost of receiving a batch is left out: it would only lower the
    count, on a figure nothing measured."""
    if budget.workers_measured:
        return budget.workers_measured
    room = max(budget.busy - budget.held, MARGIN * budget.held, 1e-6)
    return max(1, math.ceil(budget.worker_steps * (1 + MARGIN) / room - 1e-9))


def best_within(budget: StepBudget, cores: int, ranks: int, want: int) -> int:
    """The model's best worker count per rank on ``cores`` per task (a cap): the one with the
    shortest predicted step, the fewest where several tie (a worker past the cores' worth
    buys nothing and costs memory). Never the rule's request less the cores taken away."""
    most = max(1, min(want, max(1, cores // ranks)))
    steps = {w: round(budget.step_at(w, cores, ranks), 9) for w in range(1, most + 1)}
    return min(steps, key=lambda w: (steps[w], w))


def size(budget: StepBudget, facts: Mapping[str, object] | FactView) -> Sizing:
    v = as_view(facts)
    ranks = ranks_per_task(v)
    want = wanted_workers(budget)
    cores = ranks * (want + 1)
    limits = caps(v)
    cap = limits[0] if limits and limits[0].cores < cores else None
    workers = want
    measured = positive(v.alloc.cpus_per_task)
    if cap is not None:
        # the run had more: never fewer (others size down); the workers for those cores
        cores = max(cap.cores, measured or 0)
        workers = best_within(budget, cores, ranks, want)
    elif measured and measured > cores:
        cores = measured
    return Sizing(workers=min(workers, want), cores_per_task=cores, wanted_workers=want, cap=cap)


@record
class StepModel:
    """The step-time model of one report, built once (``step_model``) and handed to the
    ``model.*`` facts, the plan's prediction and its ceiling."""

    budget: StepBudget | None  # None: no evidence makes one
    sizing: Sizing | None  # None without a budget, or where the pipeline waits on storage
    caps: tuple[Cap, ...]  # the limits on cores per task, tightest first


def step_model(facts: Mapping[str, object] | FactView) -> StepModel:
    v = as_view(facts)
    budget = step_budget(v)
    sized = size(budget, v) if budget is not None and not budget.storage_bound else None
    return StepModel(budget, sized, tuple(caps(v)))


def _fallback(v: FactView) -> Model:
    """Today's doubling where the model cannot size (the measured run's workers unknown)."""
    cores = max(FALLBACK_MIN_CORES, (positive(v.alloc.cpus_per_task) or 1) * 2)
    share = first(v.profile.loader_share, v.trace.dataloader_share)
    waits = share is not None and share >= MAIN_WAITS_SHARE
    limits = caps(v)
    if limits and limits[0].cores < cores:  # never past the node (or the site's cap)
        cores = max(limits[0].cores, positive(v.alloc.cpus_per_task) or 1)
    workers = max(1, cores // ranks_per_task(v) - (0 if waits else 1))
    return Model(storage_bound=False, workers=workers, cores_per_task=cores)


def _model(v: FactView, model: StepModel) -> Model | None:
    budget = model.budget
    if budget is None:
        waiting = (
            v.profile.loader_share is not None
            or v.trace.dataloader_share is not None
            or v.host.proc__main_cpu_pct__mean is not None
        )
        return _fallback(v) if waiting and v.alloc.cpus_per_task is not None else None
    if budget.storage_bound or model.sizing is None:  # the measured setting stays
        cores = positive(v.alloc.cpus_per_task)
        return Model(storage_bound=True, workers=budget.workers, cores_per_task=cores)
    return Model(
        storage_bound=False,
        workers=model.sizing.workers,
        cores_per_task=model.sizing.cores_per_task,
    )


def model_facts(
    facts: Mapping[str, object] | FactView, model: StepModel | None = None
) -> dict[str, object]:
    """``model.*``: the sizing the dataloader-bound rules suggest, and whether the pipeline
    waits on storage (then no sizing: more workers will not help)."""
    v = as_view(facts)
    sized = _model(v, model if model is not None else step_model(v))
    return {} if sized is None else sized.facts()
