"""``tuneadvisor open``: profiles, the job and its metrics in the terminal UI, or a
`watch --record` file replayed on the watch screen."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tuneadvisor.commands.inputs import add_inputs, inputs_of
from tuneadvisor.errors import InputError

if TYPE_CHECKING:
    from tuneadvisor.session.inputs import Inputs

HELP = "open profiles and the job in the terminal UI (or replay a watch recording)"
DESCRIPTION = (
    "Open profiles, the job and its metrics in the terminal UI. Given only a "
    "`tuneadvisor watch --record` file (open REC.jsonl), replay it on the watch screen."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_inputs(parser)
    parser.add_argument(
        "--speed",
        type=float,
        default=10.0,
        metavar="X",
        help="replay speed of a watch recording, times the recorded pace (default 10; "
        "] and [ change it on the screen)",
    )


def run(args: argparse.Namespace) -> int:
    replay = _replay_target(args)
    if replay is not None:
        return _open_replay(args, replay)
    inputs = inputs_of(args)
    _check_paths_exist(inputs)
    from tuneadvisor.session.gather import read_job
    from tuneadvisor.session.workspace import load_quick_workspace, load_workspace
    from tuneadvisor.tui.app import run_open

    # Read once, for both stages of the screen; a broken job script fails before it opens.
    job = read_job(inputs.job) if inputs.job is not None else None
    names = ", ".join(inputs.profiles) or inputs.job or f"job {inputs.jobid or ''}"
    return run_open(
        lambda: load_workspace(inputs, job_script=job),
        title=f"tuneadvisor: {names}",
        quick=lambda: load_quick_workspace(inputs, job_script=job),
    )


def _is_recording(path: str) -> bool:
    """Sniffs the first bytes: a `watch --record` file, whatever its name."""
    from pathlib import Path

    from tuneadvisor.metrics.recording import sniff

    if not Path(path).is_file():  # (a FIFO would block the read)
        return False
    try:
        with open(path, "rb") as stream:
            head = stream.read(4096)
    except OSError:
        return False  # reported as the input it was given as, further on
    return sniff(head.decode("utf-8", errors="replace"))


def _replay_target(args: argparse.Namespace) -> str | None:
    """The recording to replay when it is the only input (positional or --metrics); with a
    profile or a job as well, positional recordings join --metrics for the main screen."""
    recordings = [p for p in args.profiles if _is_recording(p)]
    args.profiles = [p for p in args.profiles if p not in recordings]
    args.metrics = [*recordings, *args.metrics]
    others = (args.profiles, args.job, args.jobid, args.script, args.seff, args.sacct)
    if any(others) or len(args.metrics) != 1 or not _is_recording(args.metrics[0]):
        if len(recordings) > 1 and not any(others):
            raise InputError(None, "open: one watch recording at a time to replay it")
        return None
    return str(args.metrics[0])


def _open_replay(args: argparse.Namespace, path: str) -> int:
    from tuneadvisor.commands import watch
    from tuneadvisor.session.rule_files import load_rules, rule_dirs
    from tuneadvisor.watch.replay import load_replay

    if not 0 < args.speed < float("inf"):
        raise InputError(None, f"--speed {args.speed:g}: must be a positive number")
    session = load_replay(path, load_rules(rule_dirs(args.rules)), speed=args.speed)
    return watch.show_screen(session, f"tuneadvisor open: {path} (replay)")


def _check_paths_exist(inputs: Inputs) -> None:
    """Fail before the screen opens for the commonest mistake: a path that is not there."""
    from pathlib import Path

    named = (inputs.job, inputs.script, inputs.seff, inputs.sacct, inputs.site)
    for path in (*inputs.profiles, *inputs.metrics, *(p for p in named if p)):
        if not Path(path).exists():
            raise InputError(path, "no such file")
