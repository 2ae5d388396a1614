"""The advice (a saved report's, or the inputs' own) sized again for the machine a local `run`
runs on: it may have sized for another node (a site file's, or an assumed 64-core one); the
processes run here, on these cores. The same step-time model, from the advice's own facts,
with this machine's cores as the node; what changed is said in a note."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from tuneadvisor.advisor.advice import BUYS_NOTHING
from tuneadvisor.advisor.fact_view import view
from tuneadvisor.advisor.forecast import predict
from tuneadvisor.advisor.plan import Change, Plan
from tuneadvisor.advisor.prediction import Prediction
from tuneadvisor.advisor.sizing import step_model
from tuneadvisor.runrecord.settings import Settings

# node.* the report's node gave: replaced by this machine's (its cores; nothing else is known)
_NODE = ("node.cores", "node.assumed", "node.max_cores_per_gpu")


@dataclass(frozen=True)
class Here:
    settings: Settings
    prediction: Prediction | None


def sized_here(
    facts: Mapping[str, object] | None,
    settings: Settings,
    prediction: Prediction | None,
    cores: int,
) -> Here:
    """``settings`` with the workers and cores the model gives on ``cores`` cores, from the
    advice's ``facts``, and the prediction for them; unchanged where there are no facts to
    size from, the model cannot size, or it sizes the same."""
    if facts is None or cores < 1:
        return Here(settings, prediction)
    node = {k: v for k, v in facts.items() if k not in _NODE} | {"node.cores": cores}
    try:
        typed = view(node)
    except (TypeError, ValueError):  # facts another version wrote: size as the report did
        return Here(settings, prediction)
    model = step_model(typed)
    if model.sizing is None or model.budget is None:
        return Here(settings, prediction)
    workers, cpus = model.sizing.workers, model.sizing.cores_per_task
    old_workers = settings.knobs.get("num_workers")
    plan = Plan(
        sbatch={"cpus-per-task": Change(cpus, ("sized-here",))},
        script={"num_workers": Change(workers, ("sized-here",))},
    )
    new, _ = predict(typed, plan, model)
    if new is not None and new.speedup.expected < BUYS_NOTHING:
        # buys nothing here: the measured run's own setting
        measured = model.budget.workers, typed.alloc.cpus_per_task
        if measured[1] is None:
            return Here(settings, prediction)
        workers, cpus = measured[0], measured[1]
        new = None
    if (workers, cpus) == (old_workers, settings.cpus_per_task):
        return Here(settings, new if new is not None else prediction)
    was = (
        f"--cpus-per-task {settings.cpus_per_task}, num_workers {old_workers}"
        if old_workers is not None
        else f"--cpus-per-task {settings.cpus_per_task}"
    )
    said = (
        f"predicted {new.speedup.expected:.2f}x over the measured run"
        if new is not None
        else "the model predicts no gain here: the measured run's setting"
    )
    note = (
        f"sized for this machine ({cores} cores) instead of the advice's node: {was} -> "
        f"--cpus-per-task {cpus}, num_workers {workers} ({said})"
    )
    resized = replace(
        settings.with_knobs(num_workers=workers),
        cpus_per_task=cpus,
        notes=(*settings.notes, note),
    )
    return Here(resized, new)
