"""`tuneadvisor apply`: write the job script `report` suggests, atomically, and a patch for
the training script where it must change. The input is never overwritten unless
--in-place, and then a backup is kept."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tuneadvisor.atomic import backup_path, write_atomic
from tuneadvisor.errors import InputError
from tuneadvisor.workspace import WorkspaceRequest, load_workspace


def tuned_name(job: Path) -> Path:
    """job.sbatch -> job.tuned.sbatch; run -> run.tuned."""
    if job.suffix:
        return job.with_name(f"{job.stem}.tuned{job.suffix}")
    return job.with_name(job.name + ".tuned")


def run_apply(args: argparse.Namespace, request: WorkspaceRequest) -> int:
    if request.job is None:
        raise InputError(None, "apply: --job JOBSCRIPT is required (the script to tune)")
    if args.in_place and args.output:
        raise InputError(None, "apply: give -o OUT or --in-place, not both")
    job_path = Path(request.job)
    out = job_path if args.in_place else Path(args.output) if args.output else tuned_name(job_path)
    if not args.in_place and out.resolve() == job_path.resolve():
        raise InputError(out, "is the input job script: use --in-place to overwrite it")
    workspace = load_workspace(request)  # everything is read and checked before any write
    advice = workspace.advice
    assert advice is not None and advice.tuned_job is not None  # a job was given
    for finding in advice.findings:
        print(f"[{finding.severity.value}] {finding.id}: {finding.title}")
    if not advice.findings:
        print("no findings: nothing to change")
    if advice.job_diff:
        sys.stdout.write("\n" + advice.job_diff)
    patch_path = None
    if advice.script_patch:
        name = Path(advice.script_path or "train.py").name
        patch_path = out.parent / f"{name}.tuneadvisor.patch"
    # Writes come last, each atomic: a failure leaves every file as it was.
    if args.in_place and advice.job_diff:
        backup = backup_path(job_path)
        write_atomic(backup, job_path.read_bytes(), mode_from=job_path)
        print(f"\nbackup: {backup}")
    if advice.job_diff or not args.in_place:
        write_atomic(out, advice.tuned_job.render(), mode_from=job_path)
        print(f"wrote {out}")
    if patch_path is not None:
        write_atomic(patch_path, advice.script_patch.encode())
        print(
            f"wrote {patch_path} (in the training script's folder: "
            f"patch -p1 < {patch_path.resolve()})"
        )
    for note in advice.notes:
        print(f"note: {note}")
    return 0
