"""Writing what `apply` (and the TUI's apply) produce: the tuned job script and the patch."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tuneadvisor.advisor.advice import Advice
from tuneadvisor.errors import InputError
from tuneadvisor.files import backup_path, write_atomic


def tuned_name(job: Path) -> Path:
    """job.sbatch -> job.tuned.sbatch; run -> run.tuned."""
    if job.suffix:
        return job.with_name(f"{job.stem}.tuned{job.suffix}")
    return job.with_name(job.name + ".tuned")


def script_patch_path(advice: Advice, out: Path) -> Path | None:
    """Where the training-script patch goes (beside the tuned job); None without a patch."""
    if not advice.script_patch:
        return None
    name = Path(advice.script_path or "train.py").name
    return out.parent / f"{name}.tuneadvisor.patch"


def refuse_overwriting_inputs(advice: Advice, out: Path, inputs: Iterable[str | None]) -> None:
    """An output that is one of the run's inputs (a profile, the seff file, the training
    script, ...) would be lost: refuse before anything is written."""
    named = {Path(p).resolve() for p in (*inputs, advice.script_path) if p}
    for target in (out, script_patch_path(advice, out)):
        if target is not None and target.resolve() in named:
            raise InputError(target, "is an input of this run: write the output elsewhere (-o)")


def write_outputs(advice: Advice, job_path: Path, out: Path, in_place: bool) -> list[str]:
    """Write the tuned job script (and the training-script patch); say what was written.
    Each write is atomic, and the input is only replaced with --in-place, after a backup."""
    assert advice.tuned_job is not None
    said: list[str] = []
    if in_place and advice.job_diff:
        backup = backup_path(job_path)
        write_atomic(backup, job_path.read_bytes(), mode_from=job_path)
        said.append(f"backup: {backup}")
    if advice.job_diff or not in_place:
        write_atomic(out, advice.tuned_job.render(), mode_from=job_path)
        said.append(f"wrote {out}")
    patch_path = script_patch_path(advice, out)
    if patch_path is not None:
        write_atomic(patch_path, advice.script_patch.encode())
        said.append(
            f"wrote {patch_path} (in the training script's folder: "
            f"patch -p1 < {patch_path.resolve()})"
        )
    return said
