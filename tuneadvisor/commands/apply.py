"""`tuneadvisor apply`: write the job script `report` suggests, atomically, and a patch for
the training script where it must change. The input is never overwritten unless
--in-place, and then a backup is kept. With --submit the tuned script goes to sbatch."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tuneadvisor.commands.inputs import add_inputs, add_queue_option, inputs_of
from tuneadvisor.errors import InputError

if TYPE_CHECKING:
    from tuneadvisor.workspace.load import Workspace
    from tuneadvisor.workspace.tuned_files import TunedFiles

HELP = "write the tuned job script (and a training-script patch)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_inputs(parser)
    add_queue_option(parser)
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="where to write the tuned job script (default: JOB with .tuned before its suffix)",
    )
    parser.add_argument(
        "--in-place",
        action="store_true",
        help="overwrite the job script itself, keeping a backup (JOB.bak)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="overwrite OUT (and the training-script patch beside it) when it exists",
    )
    parser.add_argument(
        "--submit",
        action="store_true",
        help="submit the tuned job script with sbatch and print its job id "
        "(suggestions are kept within the partition's node shape, from sinfo)",
    )


def run(args: argparse.Namespace) -> int:
    from tuneadvisor.present.findings import finding_heading
    from tuneadvisor.present.terminal_safe import terminal_safe
    from tuneadvisor.workspace.apply import apply_target, apply_workspace
    from tuneadvisor.workspace.load import load_workspace

    inputs = inputs_of(args)
    target = apply_target(inputs, args.output, args.in_place, force=args.force)
    workspace = load_workspace(inputs)  # everything is read and checked before any write
    advice = workspace.advice
    assert advice is not None
    written = apply_workspace(workspace, target)
    tuned = workspace.tuned
    # what came from the inputs (a job name, an option, a path) is printed terminal-safe:
    # an ESC in the job script must not hide a line of the diff the user checks
    for finding in advice.findings:
        print(terminal_safe(finding_heading(finding)))
    if not advice.findings:
        print("no findings: nothing to change")
    if tuned.job_diff:
        sys.stdout.write("\n" + terminal_safe(tuned.job_diff))
    for line in written:
        print(terminal_safe(line))
    for note in workspace.notes:
        print(terminal_safe(f"note: {note}"))
    for line in _time_to_result(workspace):
        print(terminal_safe(line))
    if args.submit:
        _submit(tuned, target.out, target.from_slurm)
    return 0


def _time_to_result(workspace: Workspace) -> list[str]:
    """--queue: when the job as written and as tuned would start and end, and what is
    missing for either."""
    when = workspace.time_to_result
    if when is None:
        return []
    from tuneadvisor.present.time_to_result import time_to_result_lines

    missing = tuple(item.why for item in when.not_read)
    return time_to_result_lines(when.steps, when.now, when.tuned, when.verdict, missing)


def _submit(tuned: TunedFiles, out: Path, from_slurm: bool) -> None:
    from tuneadvisor.slurm.client import SlurmClient

    if not tuned.job_diff:
        print("not submitted: the tuned script is the same as the original")
        return
    refused = [p for p in tuned.tuned_job.problems if p.fatal] if tuned.tuned_job else []
    if refused:  # written, for the user to mend; a day in the queue would end the same way
        first = refused[0]
        where = f"line {first.line}: " if first.line else ""
        raise InputError(out, f"not submitted: sbatch would refuse it ({where}{first.message})")
    # A script read from Slurm runs where the original ran (its path is set in the job's
    # working directory); a script file is submitted from here, as `sbatch OUT` would be.
    original = tuned.original_job.path if tuned.original_job is not None else None
    chdir = str(original.parent) if from_slurm and original is not None else None
    job_id = SlurmClient().submit(out, chdir=chdir)
    print(f"submitted batch job {job_id}" + (f" (in {chdir})" if chdir else ""))
    print(f"when it has ended: tuneadvisor report --jobid {job_id}")
