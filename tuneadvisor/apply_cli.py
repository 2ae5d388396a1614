"""`tuneadvisor apply`: write the job script `report` suggests, atomically, and a patch for
the training script where it must change. The input is never overwritten unless
--in-place, and then a backup is kept."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tuneadvisor.errors import InputError
from tuneadvisor.outputs import tuned_name, write_outputs
from tuneadvisor.workspace import WorkspaceRequest, load_workspace


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
    for line in write_outputs(advice, job_path, out, in_place=args.in_place):
        print(line)
    for note in advice.notes:
        print(f"note: {note}")
    return 0
