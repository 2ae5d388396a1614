"""Gathered evidence + rules -> findings and one plan: what to change and why.

The advisor stops at the plan. Writing it (the tuned job script, the training-script patch) is
`session.tuned_files`, with the inputs' own editors."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from tuneadvisor.advisor.engine import evaluate
from tuneadvisor.advisor.evidence import Gathered, NotRead
from tuneadvisor.advisor.fact_view import FactView, Model, view
from tuneadvisor.advisor.findings import Finding, Skipped, Suggestion
from tuneadvisor.advisor.finish import RunLength, run_length
from tuneadvisor.advisor.forecast import predict
from tuneadvisor.advisor.plan import Change, Plan, make_plan
from tuneadvisor.advisor.rules import Rule
from tuneadvisor.advisor.sizing import model_facts, step_model
from tuneadvisor.records import record

if TYPE_CHECKING:  # the annotation only: forecast.py makes them
    from tuneadvisor.advisor.prediction import Prediction


@record
class Advice:
    """The findings of one evaluation and the rules skipped for want of facts."""

    findings: tuple[Finding, ...]
    skipped: tuple[Skipped, ...]
    plan: Plan
    facts: Mapping[str, object]
    sharpen: tuple[str, ...]  # inputs that would let more rules speak
    notes: tuple[str, ...]
    script_path: str | None  # the training script read (None without one)
    launch_chain: str | None = None  # `srun -> torchrun -> train.py`; None without a launch line
    # what the plan's change is expected to buy (issue 21's step-time model); None with
    # ``no_prediction`` saying which evidence would support one
    prediction: Prediction | None = None
    no_prediction: str | None = None
    not_read: tuple[NotRead, ...] = ()  # the inputs' parts that could not be read (Gathered's)
    # the run's length as written and with the plan (advisor/finish.py), for its time to result
    run_length: RunLength | None = None


def _coupled(findings: Iterable[Finding], plan: Plan) -> tuple[Finding, ...]:
    """Each finding's suggestions as the plan settled them: one value per setting (cores,
    workers, memory bounded and coupled), the same in every finding that asked for it and in
    the plan, which names them all as its reasons. A setting the plan leaves as it is (the
    script has it already) is no suggestion."""

    def section(asked: Mapping[str, object], settled: Mapping[str, Change]) -> dict[str, object]:
        return {key: settled[key].value for key in asked if key in settled}

    return tuple(
        replace(
            f,
            suggest=Suggestion(
                sbatch=section(f.suggest.sbatch, plan.sbatch),
                script=section(f.suggest.script, plan.script),
                env=section(f.suggest.env, plan.env),
            ),
        )
        for f in findings
    )


def _not_from_another_program(plan: Plan, rules: Iterable[Rule], v: FactView) -> Plan:
    """A profile of another program says nothing about this script's settings: the script
    changes that a rule reading the profile asked for are left out (the job-script changes
    stay: they size the allocation the profile's run had)."""
    if v.profile.other_program is not True:
        return plan
    profiled = {r.id for r in rules if any(f.startswith("profile.") for f in r.when.facts)}
    kept = {k: c for k, c in plan.script.items() if not set(c.because) & profiled}
    if len(kept) == len(plan.script):
        return plan
    dropped = ", ".join(sorted(set(plan.script) - set(kept)))
    note = (
        f"{dropped}: not planned for the training script; the profile is of another program "
        "(profile-other-program)"
    )
    return replace(plan, script=kept, notes=(*plan.notes, note))


# A sized change predicted to buy less than this (expected speedup over the measured run) is
# not made: within any measured spread it is no change, and it still costs cores.
BUYS_NOTHING = 1.02
SIZED = ("num_workers", "cpus-per-task")


def _worth_making(
    plan: Plan, prediction: Prediction | None, no_prediction: str | None
) -> tuple[Plan, Prediction | None, str | None]:
    """The plan without the sized workers and cores where their own prediction says they buy
    nothing (or cost): the line saying so replaces the prediction."""
    if prediction is None or prediction.speedup.expected >= BUYS_NOTHING:
        return plan, prediction, no_prediction
    setting = ", ".join(f"{k}={v}" for k, v in prediction.setting.items())
    why = (
        f"no change to the workers or cores: the model predicts "
        f"{prediction.speedup.expected:.2f}x for {setting} over the measured run "
        f"(a change is made from {BUYS_NOTHING:.2f}x)"
    )
    others = next((b for b in prediction.basis if b.startswith("other processes held")), None)
    if others is not None:  # the node's other load decided it: said, with its fast side
        why += (
            f"; {others.split(': measured')[0]} during the measured run (its run record), "
            f"up to {prediction.speedup.high:.2f}x if they leave"
        )
    script = {k: c for k, c in plan.script.items() if k not in SIZED}
    sbatch = {k: c for k, c in plan.sbatch.items() if k not in SIZED}
    return replace(plan, script=script, sbatch=sbatch, notes=(*plan.notes, why)), None, why


def advise(gathered: Gathered, rules: Iterable[Rule]) -> Advice:
    rules = tuple(rules)
    # the facts typed once, and the step-time model built once, for the model's sizing (the
    # rules read it as facts), the plan and the prediction
    typed = view(gathered.facts)
    model = step_model(typed)
    sized = model_facts(typed, model)
    facts = {**gathered.facts, **sized}
    typed = replace(typed, model=Model.read(facts))
    evaluation = evaluate(rules, facts)
    plan = make_plan(evaluation.findings, typed)
    plan = _not_from_another_program(plan, rules, typed)
    prediction, no_prediction = predict(typed, plan, model)
    plan, prediction, no_prediction = _worth_making(plan, prediction, no_prediction)
    return Advice(
        findings=_coupled(evaluation.findings, plan),
        skipped=evaluation.skipped,
        plan=plan,
        facts=facts,
        sharpen=gathered.sharpen,
        notes=(*gathered.notes, *plan.notes),
        script_path=gathered.script_path,
        launch_chain=gathered.launch.chain if gathered.launch is not None else None,
        prediction=prediction,
        no_prediction=no_prediction,
        not_read=gathered.not_read,
        run_length=run_length(typed, model, prediction),
    )
