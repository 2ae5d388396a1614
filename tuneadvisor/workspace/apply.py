"""The one apply, for `tuneadvisor apply` and the TUI's `a` alike: where the tuned job script
goes, what will be written, refusing to overwrite any input of the run, and writing the tuned
job script and the training-script patch atomically (the input only with --in-place, after a
backup of the bytes the advice was computed from)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tuneadvisor.advisor.plan import Plan
from tuneadvisor.errors import InputError
from tuneadvisor.files import backup_path, write_atomic
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import Workspace
from tuneadvisor.workspace.tuned_files import TunedFiles


def tuned_name(job: Path) -> Path:
    """job.sbatch -> job.tuned.sbatch; run -> run.tuned."""
    if job.suffix:
        return job.with_name(f"{job.stem}.tuned{job.suffix}")
    return job.with_name(job.name + ".tuned")


def script_patch_path(tuned: TunedFiles, out: Path) -> Path | None:
    """Where the training-script patch goes (beside the tuned job); None without a patch."""
    if not tuned.script_patch:
        return None
    name = Path(tuned.script_path or "train.py").name
    return out.parent / f"{name}.tuneadvisor.patch"


def refuse_overwriting_inputs(tuned: TunedFiles, out: Path, inputs: Iterable[str | None]) -> None:
    """An output that is one of the run's inputs (a profile, the seff file, the training
    script, ...) would be lost: refuse before anything is written."""
    named = {Path(p).resolve() for p in (*inputs, tuned.script_path) if p}
    for target in (out, script_patch_path(tuned, out)):
        if target is not None and target.resolve() in named:
            raise InputError(target, "is an input of this run: write the output elsewhere (-o)")


def write_outputs(tuned: TunedFiles, job_path: Path, out: Path, in_place: bool) -> list[str]:
    """Write the tuned job script (and the training-script patch); say what was written.
    Each write is atomic, and the input is only replaced with --in-place, after a backup."""
    assert tuned.tuned_job is not None
    said: list[str] = []
    if in_place and tuned.job_diff:
        assert tuned.original_job is not None
        backup = backup_path(job_path)
        # The bytes the advice was computed from (the model is lossless): the file is read once.
        write_atomic(backup, tuned.original_job.render(), mode_from=job_path)
        said.append(f"backup: {backup}")
    if tuned.job_diff or not in_place:
        written = write_atomic(out, tuned.tuned_job.render(), mode_from=job_path)
        # A link is followed, not replaced: say which file changed.
        said.append(
            f"wrote {out}"
            if written == out
            else f"wrote {written}, the file the link {out} points at"
        )
    patch_path = script_patch_path(tuned, out)
    if patch_path is not None:
        write_atomic(patch_path, tuned.script_patch.encode())
        said.append(
            f"wrote {patch_path} (in the training script's folder: "
            f"patch -p1 < {patch_path.resolve()})"
        )
    return said


def refuse_overwriting_outputs(tuned: TunedFiles, out: Path, in_place: bool) -> None:
    """An existing file where apply would write something else is someone's work: refuse
    unless --force (the same bytes again are no loss; --in-place keeps numbered backups of
    the job script)."""
    assert tuned.tuned_job is not None
    writes: list[tuple[Path, bytes]] = []
    if not in_place:
        writes.append((out, tuned.tuned_job.render()))
    patch = script_patch_path(tuned, out)
    if patch is not None:
        writes.append((patch, tuned.script_patch.encode()))
    for path, data in writes:
        if path.exists() and (not path.is_file() or path.read_bytes() != data):
            raise InputError(path, "exists: give --force to overwrite it, or -o elsewhere")


@dataclass(frozen=True)
class ApplyTarget:
    """Where apply reads the job script from and writes the tuned one."""

    job_path: Path  # the job script (for --jobid alone: job-ID.sbatch here, never read)
    out: Path
    in_place: bool = False
    from_slurm: bool = False  # the script came from Slurm (--jobid without --job)
    force: bool = False  # overwrite an existing output (the TUI has asked first)


def apply_target(
    inputs: Inputs, output: str | None = None, in_place: bool = False, force: bool = False
) -> ApplyTarget:
    """Checks the choice of output before anything is read: one InputError line if wrong."""
    from_slurm = inputs.job is None and inputs.live
    if inputs.job is None and not from_slurm:
        raise InputError(
            None, "apply: --job JOBSCRIPT or --jobid ID is required (the script to tune)"
        )
    if in_place and output:
        raise InputError(None, "apply: give -o OUT or --in-place, not both")
    if in_place and inputs.job is None:
        raise InputError(None, "apply: --in-place needs --job JOBSCRIPT (the file to overwrite)")
    # --jobid alone: the script comes from Slurm; the tuned one is written here.
    job_path = Path(inputs.job or f"job-{inputs.jobid}.sbatch")
    out = job_path if in_place else Path(output) if output else tuned_name(job_path)
    if not in_place and out.resolve() == job_path.resolve():
        raise InputError(out, "is the input job script: use --in-place to overwrite it")
    return ApplyTarget(job_path, out, in_place, from_slurm, force)


def can_apply(workspace: Workspace) -> bool:
    """Whether there is something to write: a tuned job script with a diff or a patch."""
    tuned = workspace.tuned
    return (
        workspace.advice is not None
        and tuned.tuned_job is not None
        and bool(tuned.job_diff or tuned.script_patch)
    )


def _other_changes(diff: str, plan: Plan | None) -> list[str]:
    """What the diff changes besides the #SBATCH lines: the launch line's options and the
    exports before it (the confirmation names every change it writes, issue 24 point 14)."""
    added = [
        line[1:].strip()
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    out = []
    if any(line.startswith("export ") for line in added) and plan is not None and plan.env:
        out += [f"export {k}={c.value}" for k, c in plan.env.items()]
    if any(line and not line.startswith(("#", "export ")) for line in added):
        script = plan.script if plan is not None else {}
        options = ", ".join(f"{k}={c.value}" for k, c in script.items())
        out.append(f"the launch line ({options})" if options else "the launch line")
    return out


def planned_writes(workspace: Workspace, out: Path) -> list[tuple[Path, str]]:
    """What `write_outputs(workspace.tuned, job, out, in_place=False)` writes: (path, what),
    for the confirmation before anything is written."""
    tuned = workspace.tuned
    plan = workspace.advice.plan if workspace.advice is not None else None
    changes = [f"--{k}={c.value}" for k, c in plan.sbatch.items()] if plan is not None else []
    if not tuned.job_diff:
        what = "the job script, unchanged"
    else:
        changes += _other_changes(tuned.job_diff, plan)
        what = "the tuned job script" + (": " + ", ".join(changes) if changes else "")
    writes = [(out, what)]
    patch = script_patch_path(tuned, out)
    if patch is not None:
        writes.append((patch, f"a patch for {Path(tuned.script_path or 'train.py').name}"))
    return writes


def apply_workspace(workspace: Workspace, target: ApplyTarget) -> list[str]:
    """Refuse to overwrite any input of the run, then write; says what was written."""
    tuned, inputs = workspace.tuned, workspace.inputs
    if tuned.tuned_job is None:  # --jobid, and Slurm no longer has the script
        raise InputError(None, f"apply: no script for job {inputs.jobid}: give it with --job FILE")
    named = (*inputs.profiles, *inputs.metrics, inputs.script, inputs.seff, inputs.sacct)
    protected = (*named, inputs.site, None if target.in_place else inputs.job)
    refuse_overwriting_inputs(tuned, target.out, protected)
    if not target.force:
        refuse_overwriting_outputs(tuned, target.out, target.in_place)
    return write_outputs(tuned, target.job_path, target.out, in_place=target.in_place)
