"""What the plan's setting is expected to buy, from the step-time model: a ``Prediction``
for the plan's workers and cores, or a line saying which evidence would support one."""

from __future__ import annotations

import math
from collections.abc import Mapping

from tuneadvisor.advisor.fact_view import FactView, as_view
from tuneadvisor.advisor.plan import Plan
from tuneadvisor.advisor.prediction import Prediction, Span
from tuneadvisor.advisor.sizing import (
    MARGIN,
    StepModel,
    ranks_per_task,
    step_model,
    wanted_workers,
)
from tuneadvisor.advisor.steptime import CORES_TOGETHER, WORKER_BUSY_MIN, StepBudget

NO_EVIDENCE = (
    "no prediction: nothing timed the training step; a line_profiler profile (kernprof), a "
    "torch.profiler trace, a watch recording of the run with its GPU, or a probe's result "
    "would give its step time and what waits for data"
)
NO_STEP_TIME = (
    "no prediction: the evidence gives shares but no step time; a profile of more steps "
    "(kernprof over the training loop) or a probe would give one"
)
NO_CHANGE = (
    "no prediction: the measured run's DataLoader workers or cores are not known (a script "
    "that sets num_workers, or a recording of the run, would say)"
)
NO_WORKERS = (
    "no prediction: the {what} was read, but not the DataLoader workers of the run it "
    "measured; the run record beside it (run.json, written by `tuneadvisor run`), a training "
    "script that sets num_workers, or a watch recording of the run would say"
)
NO_GPU_SHARE = (
    "no prediction: the watch recording has no GPU busy share (no GPU was sampled), so the "
    "loop's wait for data cannot be told from its wait for the device; a line_profiler "
    "profile, a torch.profiler trace or a probe of the run would"
)
RECORDING_STEP = (
    "no prediction: the watch recording gives the GPU's busy share but no step time; the run "
    "record beside it (run.json, written by `tuneadvisor run`), or a profile, trace or probe "
    "of the run would give one"
)
STORAGE = (
    "no prediction: the workers were mostly idle while the loop waited (each under "
    f"{WORKER_BUSY_MIN:.0%} of a core, an assumed threshold): the pipeline waits on storage, "
    "and more workers will not help; stage the data to node-local disk ($TMPDIR, /scratch) "
    "or a faster file system first"
)
MOVERS = (
    "cache decoded data, lighter transforms, transforms on the GPU (DALI), a larger batch "
    "per worker, persistent_workers=True, a larger prefetch_factor"
)


def _planned(plan: Plan, v: FactView) -> tuple[int, int] | None:
    """The workers and cores per task of the run with the plan; None when it changes
    neither or either is not known."""
    workers_change, cores_change = plan.script.get("num_workers"), plan.sbatch.get("cpus-per-task")
    if workers_change is None and cores_change is None:
        return None
    workers = workers_change.value if workers_change else v.alloc.workers
    cores = cores_change.value if cores_change else v.alloc.cpus_per_task
    if isinstance(workers, int) and isinstance(cores, int) and not isinstance(workers, bool):
        return workers, cores
    return None


def usable_workers(budget: StepBudget, workers: int, cores: int, ranks: int) -> float:
    """Workers' worth of CPU: no more than the rank's cores less what the main process
    keeps busy."""
    return budget.usable(workers, cores, ranks)


def _ceiling(budget: StepBudget, model: StepModel, usable: float, speed: float) -> str | None:
    want = wanted_workers(budget)
    if usable >= want or model.sizing is None:
        return None
    sizing = model.sizing
    by = sizing.cap.by if sizing.cap else "the cores asked for"
    cores = model.caps[0].cores if model.caps else sizing.cores_per_task
    return (
        f"capped by {by} ({cores} cores per task): {want} workers would keep up, the cores "
        f"run {usable:.1f} workers' worth; predicted ceiling {speed:.1f}x; to move it: {MOVERS}"
    )


def _pipeline(usable: float, budget: StepBudget) -> str:
    """The basis line of the pipeline's rate; a measured step with no wait for batches (a
    trace whose DataLoader share is 0) has no per-worker cost to divide by."""
    if budget.worker_steps <= 0:
        return "the loop measured no wait for batches: more workers change nothing, the model"
    if usable <= 0:  # a setting of no workers: the loop loads each batch itself
        return "with no workers the loop loads each batch itself, in its own time: the model"
    # a batch takes the workers' time, after the time the intra-op threads hold the cores
    makes = 1 / (budget.held + budget.worker_steps / usable)
    needs = 1 / (budget.busy + budget.receive)
    return (
        f"the pipeline then makes {makes:.2f} batches a measured step, the loop needs "
        f"{needs:.2f}: estimated, the model"
    )


def _why_no_budget(v: FactView) -> str | None:
    """What is missing where evidence of the step was given but no budget came of it; None
    where no such evidence was given."""

    def above(value: float | None, least: float) -> bool:
        return value is not None and value >= least

    # each where it shows the loop waiting (the rules' thresholds): else nothing to predict
    kinds = [
        ("line_profiler profile", above(v.profile.loader_share, 0.10)),
        ("torch.profiler trace", above(v.trace.dataloader_share, 0.05)),
        ("probe's result", above(v.probe.stall_share, 0.10)),
        ("watch recording", v.gpu.util__mean is not None and v.gpu.util__mean < 50
         and v.host.proc__main_cpu_pct__mean is not None),
    ]  # fmt: skip
    given = [name for name, there in kinds if there]
    if given:
        return NO_WORKERS.format(what=" and the ".join(given))
    if v.host.proc__main_cpu_pct__mean is not None:
        return NO_GPU_SHARE
    return None


def assumed_node(v: FactView) -> str | None:
    """Where the node sized for is not known: what was assumed, said on the prediction's
    line (a site file, ``--cluster`` or the machine a relaunch runs on gives the real one)."""
    if v.node.assumed is True and v.node.cores:
        return (
            f"for an assumed {v.node.cores}-core node (no site file, Slurm not asked; "
            "--site or --cluster gives the real one)"
        )
    if v.node.cores is None:
        return (
            "for a node of unknown size, no core cap applied (no site file, Slurm not asked; "
            "--site or --cluster gives the real one)"
        )
    return None


def predict(
    facts: Mapping[str, object] | FactView, plan: Plan, model: StepModel | None = None
) -> tuple[Prediction | None, str | None]:
    """The plan's setting predicted; or None and the line saying which evidence would give
    one (None and None where the plan changes neither workers nor cores: nothing to
    predict, nothing to say). ``model``: the step-time model ``advise`` built already."""
    v = as_view(facts)
    model = model if model is not None else step_model(v)
    budget = model.budget
    planned = _planned(plan, v)
    if budget is not None and budget.storage_bound:
        return None, STORAGE
    if budget is None:
        # evidence of the step was given and could not make a budget: say exactly why, a
        # change planned or not (the evidence was meant to say something)
        missing = _why_no_budget(v)
        if missing is not None:
            return None, missing
    if "num_workers" not in plan.script and "cpus-per-task" not in plan.sbatch:
        if budget is not None and budget.step_s is None and budget.source == "recording":
            return None, RECORDING_STEP
        return None, None
    if budget is None:
        return None, NO_EVIDENCE
    if planned is None:
        return None, NO_CHANGE
    if budget.step_s is None:
        return None, RECORDING_STEP if budget.source == "recording" else NO_STEP_TIME
    workers, cores = planned
    ranks = ranks_per_task(v)
    usable = usable_workers(budget, workers, cores, ranks)
    # a setting can be slower than the measured one (fewer cores, a worker where the loop
    # loaded its own batches): said as it is, never rounded up to 1.0x
    relative = budget.step_with(usable)
    spread = budget.spread
    speed = 1.0 / relative
    step = budget.step_s * relative
    unprofiled = budget.faster_unprofiled(usable)  # the run without the profiler
    alone = budget.faster_alone(workers, cores, ranks)  # the others that shared its CPUs gone
    faster = unprofiled * alone  # the fast side
    slow_main = budget.slower_at(workers, cores, ranks)  # the main's CPU, receiving
    # threads sharing their cores with workers: the compute as long as the most measured
    slower = max(slow_main, budget.slower_sharing(workers, cores, ranks))
    together = budget.slower_together(workers, cores, ranks)  # more cores busy than measured
    slower *= together  # the slow side
    samples = None
    if budget.batch_size:
        rate = budget.batch_size / step
        samples = Span(rate / (1 + spread) / slower, rate, rate / max(1 - spread, 0.05) * faster)
    # the speedup is over the measured run as the job runs, without the instrument: the
    # measured run may gain from losing it too (its own setting's gain), more or less than
    # the new setting; and it is a ratio of two runs, each within the measured spread
    gain = unprofiled / budget.faster_measured()
    pair = math.hypot(spread, spread)
    speedup = Span(
        speed / (1 + pair) / slower * min(1.0, gain),
        speed,
        speed * (1 + pair) * max(1.0, gain) * alone,
    )
    basis = [
        *budget.basis,
        f"one core per worker: assumed; {workers} worker(s) on {cores} core(s) a task "
        f"run {usable:.2f} workers' worth beside the main process's "
        f"{budget.main_cores():.2f} core (no more than a core each, none below one)",
        _pipeline(usable, budget),
        *filter(None, [budget.oversubscription_note(workers, cores, ranks)]),
        f"the setting: the fewest workers that cover the loop with a {MARGIN:.0%} "
        "margin (assumed), the model's best within the cores where a cap binds",
        f"the speedup's spread {pair:.0%}: two runs' (the measured run's and the new one's, "
        f"each within {spread:.0%}, taken as independent)",
    ]
    if slow_main > 1.0 + 1e-3:
        basis.append(
            f"up to {slow_main - 1:.0%} slower on the range's slow side: the main process's "
            f"own time all CPU (at the new rate {budget.main_share_at(workers, cores, ranks):.2f} "
            "of a core beside the workers: assumed) and receiving a batch at the assumed figure"
        )
    if together > 1.0 + 1e-3:
        basis.append(
            f"up to {together - 1:.0%} slower on the range's slow side: the setting keeps more "
            "cores busy than the measured run, and cores busy together each run slower than "
            f"one alone (assumed: up to {CORES_TOGETHER:.0%} a worker's batch; 2 busy vCPUs "
            "of the 2-CPU test VM delivered 1.30-2.08x one; all-core turbo is below "
            "single-core turbo on bare metal too)"
        )
    if abs(gain - 1.0) > 1e-3:
        basis.append(
            f"the speedup over the job as it runs without the profiler: the measured run may "
            f"gain {budget.faster_measured() - 1:.0%} from losing it, the new setting "
            f"{unprofiled - 1:.0%} (assumed, both at most the profiler's cost above); the range "
            "counts both"
        )
    return (
        Prediction(
            setting={"num_workers": workers, "cpus_per_task": cores},
            step_s=Span(step * max(1 - spread, 0.0) / faster, step, step * (1 + spread) * slower),
            speedup=speedup,
            samples_per_s=samples,
            basis=tuple(basis),
            ceiling=_ceiling(budget, model, usable, speed),
            assumed_node=assumed_node(v),
            baseline=_baseline(budget, v),
        ),
        None,
    )


def _baseline(budget: StepBudget, v: FactView) -> dict[str, int] | None:
    """The measured run's setting, where both are known: what the speedup is over."""
    cores = v.alloc.cpus_per_task
    if cores is None or budget.workers < 0:
        return None
    return {"num_workers": budget.workers, "cpus_per_task": cores}
