"""The one place that turns what was read and the advisor's plan into the tuned files: the
tuned job script (launch-line options, repaired directives, the plan's sbatch values), its
diff, and the training-script patch. `apply` and the TUI write what this returns; `report`
shows it. The advisor decides; the inputs' own editors write; this module puts them in order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from tuneadvisor.records import record

if TYPE_CHECKING:
    from tuneadvisor.advisor.evidence import Gathered
    from tuneadvisor.advisor.plan import Plan
    from tuneadvisor.slurm.jobscript.model import JobScript
    from tuneadvisor.slurm.launch_line.model import LaunchLine


@record
class TunedFiles:
    """The plan written into files: the tuned job script, its diff, the script patch."""

    original_job: JobScript | None = None  # the job script as given (None without one)
    tuned_job: JobScript | None = None  # None without a job script
    job_diff: str = ""  # unified diff of the job script ("" when unchanged)
    script_patch: str = ""  # unified diff for the training script ("" when none)
    script_path: str | None = None  # the training script the patch is named after
    notes: tuple[str, ...] = ()  # what the editors could not write, or wrote otherwise


def job_diff(before: JobScript, after: JobScript, name: str) -> str:
    import difflib  # not on `report PROFILE`'s path

    return "".join(
        difflib.unified_diff(
            before.render_text().splitlines(keepends=True),
            after.render_text().splitlines(keepends=True),
            fromfile=f"a/{name}",
            tofile=f"b/{name}",
        )
    )


def _cores_after(plan: Plan, facts: Mapping[str, object]) -> int | None:
    """--cpus-per-task once the plan is applied: its change, else what the script has."""
    change = plan.sbatch.get("cpus-per-task")
    value = change.value if change is not None else facts.get("job.cpus_per_task")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _fails_as_it_is(line: int, refused: str) -> str:
    """Options added to a launch line that the script refuses do not make it run."""
    return (
        f"the launch line (line {line}) fails as it is: the training script's parser refuses "
        f"{refused} and exits before training; the options added to it do not change that: "
        "fix the line first (unknown-launch-option)"
    )


def _stamped(tuned: JobScript, gathered: Gathered) -> JobScript:
    """The tuned script with its `# tuneadvisor: tuned from` line: the evidence and the
    allocation it was measured under (``alloc.*``), so that the same evidence applied to it
    again is read as of that run and writes the same bytes. Only on a script that changed:
    an unchanged one keeps its line (and its bytes) as they are."""
    stamp = gathered.stamp
    if stamp is None:
        return tuned
    from tuneadvisor.slurm.jobscript.tuned_from import TunedFrom, with_tuned_from

    facts = gathered.facts
    cores, mem, workers = (facts.get(f"alloc.{k}") for k in ("cpus_per_task", "mem_mib", "workers"))
    return with_tuned_from(
        tuned,
        TunedFrom(
            stamp.evidence,
            stamp.digest,
            cores if isinstance(cores, int) else None,
            float(mem) if isinstance(mem, int | float) else None,
            workers if isinstance(workers, int) else None,
        ),
    )


def _with_exports(
    tuned: JobScript, job: JobScript | None, launch: LaunchLine, plan: Plan, notes: list[str]
) -> JobScript:
    """The plan's environment as ``export`` lines before the launch line, placed by the
    line numbers of the script as read: skipped, with a note, where the edits so far moved
    them."""
    from tuneadvisor.slurm.jobscript.exports import with_exports

    if job is None or len(tuned.lines) != len(job.lines):
        exports = "; ".join(f"export {k}={c.value}" for k, c in plan.env.items())
        notes.append(f"{exports}: not written, add it before the launch line yourself")
        return tuned
    return with_exports(tuned, launch, {k: c.value for k, c in plan.env.items()}, notes)


def tuned_files(gathered: Gathered, plan: Plan) -> TunedFiles:
    """The tuned job script and the training-script patch; nothing without either file,
    without importing the editors (`report PROFILE` stays quick to start)."""
    job = gathered.job
    if job is None and gathered.script_text is None:
        return TunedFiles(script_path=gathered.script_path)
    from tuneadvisor.slurm.jobscript.repair import repair_directives
    from tuneadvisor.slurm.jobscript.set_options import with_options, with_unix_line_breaks
    from tuneadvisor.workspace.script_settings import Target, write_settings

    notes: list[str] = []
    # A DataLoader built in a module the script imports: its settings are patched there.
    module = gathered.loader_module
    ranks = gathered.facts.get("job.ranks_per_task")
    target = Target(
        scan=module.scan if module is not None else gathered.scan,
        path=module.path if module is not None else gathered.script_path,
        text=module.text if module is not None else gathered.script_text,
        patch_name=module.name if module is not None else None,
        reserve_main_core=plan.reserve_main_core,
        ranks_per_task=ranks if isinstance(ranks, int) else 1,
        cores=_cores_after(plan, gathered.facts),
    )
    # Launch-line edits first: the launch line's numbers are the input's, and a directive
    # added to the header would move it.
    settings = {key: change.value for key, change in plan.script.items()}
    edits = write_settings(settings, target, job, gathered.launch)
    tuned = edits.job
    if tuned is not None and plan.env and gathered.launch is not None:
        tuned = _with_exports(tuned, job, gathered.launch, plan, notes)
    if tuned is not None:
        tuned = repair_directives(tuned, frozenset(plan.sbatch), notes)
        values = {option: str(change.value) for option, change in plan.sbatch.items()}
        tuned = with_options(tuned, values, notes)
    notes += edits.notes
    refused = gathered.facts.get("script.unknown_options")
    if edits.job is not job and isinstance(refused, str) and gathered.launch is not None:
        notes.append(_fails_as_it_is(gathered.launch.line, refused))
    if module is not None and edits.patch:
        notes.append(f"the training DataLoader is built in {module.name}: the patch changes it")
    if tuned is not None and gathered.facts.get("job.dos_line_breaks") is True:
        tuned = with_unix_line_breaks(tuned)
    if job is not None and tuned is not None and tuned.render() != job.render():
        from tuneadvisor.slurm.jobscript.overridden import without_overridden

        # written anyway: each option once, then what it was tuned from
        tuned = _stamped(without_overridden(tuned, notes), gathered)
    if tuned is not None:
        from tuneadvisor.advisor.site import ceiling_notes

        notes += ceiling_notes(plan, gathered.facts)
    diff = ""
    if job is not None and tuned is not None:
        diff = job_diff(job, tuned, str(job.path or "job.sbatch"))
    return TunedFiles(job, tuned, diff, edits.patch, gathered.script_path, tuple(notes))
