"""Gathered evidence + rules -> findings, a plan, the tuned job script and a script patch."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from tuneadvisor.advisor.engine import evaluate
from tuneadvisor.advisor.evidence import Gathered
from tuneadvisor.advisor.findings import Finding, Skipped, Suggestion
from tuneadvisor.advisor.plan import Change, Plan, make_plan
from tuneadvisor.advisor.rules import Rule

if TYPE_CHECKING:
    from tuneadvisor.slurm.jobscript.model import JobScript


@dataclass(frozen=True)
class Advice:
    findings: tuple[Finding, ...]
    skipped: tuple[Skipped, ...]
    plan: Plan
    facts: Mapping[str, object]
    sharpen: tuple[str, ...]  # inputs that would let more rules speak
    notes: tuple[str, ...]
    original_job: JobScript | None  # the job script as given (None without one)
    tuned_job: JobScript | None  # None without a job script
    job_diff: str  # unified diff of the job script ("" when unchanged)
    script_patch: str  # unified diff for the training script ("" when none)
    script_path: str | None
    launch_chain: str | None = None  # `srun -> torchrun -> train.py`; None without a launch line


def _job_diff(before: JobScript, after: JobScript, name: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.render_text().splitlines(keepends=True),
            after.render_text().splitlines(keepends=True),
            fromfile=f"a/{name}",
            tofile=f"b/{name}",
        )
    )


# sbatch takes one of these: writing --mem means dropping the others.
_MEMORY_OPTIONS = ("mem", "mem-per-cpu", "mem-per-gpu")


def _apply_sbatch(job: JobScript, plan: Plan, notes: list[str]) -> JobScript:
    for option, change in plan.sbatch.items():
        try:
            job = job.with_directive(option, str(change.value))
        except ValueError as exc:  # a value sbatch would refuse: say so, keep the rest
            notes.append(f"--{option}={change.value} not written: {exc}")
            continue
        if option in _MEMORY_OPTIONS:
            for other in _MEMORY_OPTIONS:
                if other != option and job.directive(other) is not None:
                    job = job.without_directive(other)
                    notes.append(f"--{other} removed: --{option}={change.value} replaces it")
    return job


def _cores_after(plan: Plan, facts: Mapping[str, object]) -> int | None:
    """--cpus-per-task once the plan is applied: its change, else what the script has."""
    change = plan.sbatch.get("cpus-per-task")
    value = change.value if change is not None else facts.get("job.cpus_per_task")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _edit_files(gathered: Gathered, plan: Plan, notes: list[str]) -> tuple[JobScript | None, str]:
    """The tuned job script and the training-script patch; (None, "") when neither file
    was read, without importing the editors (`report PROFILE` stays quick to start)."""
    if gathered.job is None and gathered.script_text is None:
        return None, ""
    from tuneadvisor.advisor.script_edits import plan_script_edits
    from tuneadvisor.slurm.jobscript.model import JobScript

    # Launch-line edits first: the launch line's numbers are the input's, and a directive
    # added to the header would move it.
    # A DataLoader built in a module the script imports: its settings are patched there.
    module = gathered.loader_module
    ranks = gathered.facts.get("job.ranks_per_task")
    edits = plan_script_edits(
        {key: change.value for key, change in plan.script.items()},
        module.scan if module is not None else gathered.scan,
        gathered.job,
        gathered.launch,
        module.path if module is not None else gathered.script_path,
        module.text if module is not None else gathered.script_text,
        reserve_main_core=plan.reserve_main_core,
        ranks_per_task=ranks if isinstance(ranks, int) else 1,
        patch_name=module.name if module is not None else None,
        cores=_cores_after(plan, gathered.facts),
    )
    tuned = edits.job
    if tuned is not None:
        from tuneadvisor.advisor.directive_repair import repair_directives

        tuned = repair_directives(tuned, frozenset(plan.sbatch), notes)
        tuned = _apply_sbatch(tuned, plan, notes)
    notes += edits.notes
    if module is not None and edits.patch:
        notes.append(f"the training DataLoader is built in {module.name}: the patch changes it")
    if tuned is not None and gathered.facts.get("job.dos_line_breaks") is True:
        # sbatch refuses CRLF scripts: the tuned one is written with LF line ends.
        tuned = JobScript.parse(tuned.render_text().replace("\r\n", "\n"), tuned.path)
    return tuned, edits.patch


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


def advise(gathered: Gathered, rules: Iterable[Rule]) -> Advice:
    evaluation = evaluate(rules, gathered.facts)
    plan = make_plan(evaluation.findings, gathered.facts)
    notes = list(gathered.notes) + list(plan.notes)
    job = gathered.job
    tuned, patch = _edit_files(gathered, plan, notes)
    diff = ""
    if job is not None and tuned is not None:
        diff = _job_diff(job, tuned, str(job.path or "job.sbatch"))
    return Advice(
        findings=_coupled(evaluation.findings, plan),
        skipped=evaluation.skipped,
        plan=plan,
        facts=gathered.facts,
        sharpen=gathered.sharpen,
        notes=tuple(notes),
        original_job=job,
        tuned_job=tuned,
        job_diff=diff,
        script_patch=patch,
        script_path=gathered.script_path,
        launch_chain=gathered.launch.chain if gathered.launch is not None else None,
    )
