"""``tuneadvisor open``: profiles, the job and its metrics in the terminal UI, or a
`watch --record` file replayed on the watch screen."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from tuneadvisor.commands.inputs import add_inputs, finite, inputs_of
from tuneadvisor.errors import InputError
from tuneadvisor.files import path_exists, peek

if TYPE_CHECKING:
    from tuneadvisor.workspace.inputs import Inputs

HELP = "open profiles and the job in the terminal UI (or replay a watch recording)"
DESCRIPTION = (
    "Open profiles, the job and its metrics in the terminal UI. Given only a "
    "`tuneadvisor watch --record` file (open REC.jsonl), replay it on the watch screen."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_inputs(parser)
    parser.add_argument(
        "--speed",
        type=finite,
        default=10.0,
        metavar="X",
        help="replay speed of a watch recording, times the recorded pace (default 10; "
        "] and [ change it on the screen)",
    )


@dataclass(frozen=True)
class ReplayRequest:
    """``open REC.jsonl``: a `watch --record` file replayed on the watch screen."""

    path: str
    rules: tuple[str, ...] = ()  # extra rule folders
    speed: float = 10.0  # times the recorded pace


def open_request(args: argparse.Namespace) -> Inputs | ReplayRequest:
    """A recording alone (positional or --metrics) is replayed; with a profile or a job as
    well, positional recordings join --metrics for the main screen. The arguments are read,
    never changed."""
    recordings = [p for p in args.profiles if _is_recording(p)]
    profiles = tuple(p for p in args.profiles if p not in recordings)
    metrics = (*recordings, *args.metrics)
    others = (profiles, args.job, args.jobid, args.script, args.seff, args.sacct)
    if not any(others) and len(metrics) == 1 and _is_recording(metrics[0]):
        if not 0 < args.speed < float("inf"):
            raise InputError(None, f"--speed {args.speed:g}: must be a positive number")
        return ReplayRequest(str(metrics[0]), tuple(args.rules), args.speed)
    if len(recordings) > 1 and not any(others):
        raise InputError(None, "open: one watch recording at a time to replay it")
    from tuneadvisor.workspace.inputs import split_profiles

    profiles, traces = split_profiles(profiles)  # recordings out, then .lprof from traces
    return replace(inputs_of(args), profiles=profiles, traces=traces, metrics=metrics)


def run(args: argparse.Namespace) -> int:
    request = open_request(args)
    if isinstance(request, ReplayRequest):
        return _open_replay(request)
    inputs = request
    _check_paths_exist(inputs)
    from tuneadvisor.commands.inputs import trace_progress
    from tuneadvisor.tui.app import run_open
    from tuneadvisor.workspace.load import load_quick_workspace, load_workspace, read_traces
    from tuneadvisor.workspace.read_files import read_job

    # Read once, for both stages of the screen; a broken job script fails before it opens.
    job = read_job(inputs.job) if inputs.job is not None else None
    # traces before the screen: their progress is on stderr, and a broken one fails here
    traces = read_traces(inputs, trace_progress())
    return run_open(
        lambda: load_workspace(inputs, job_script=job, traces=traces),
        title=screen_title(inputs),
        quick=lambda: load_quick_workspace(inputs, job_script=job),
    )


def screen_title(inputs: Inputs) -> str:
    """'tuneadvisor: 24752610.lprof': file names, not paths, so that the title and the
    subtitle fit 100 columns (each pane names its file's path)."""
    names = ", ".join(map(os.path.basename, (*inputs.profiles, *inputs.traces))) or (
        os.path.basename(inputs.job) if inputs.job else f"job {inputs.jobid or ''}"
    )
    return f"tuneadvisor: {names}"


def _is_recording(path: str) -> bool:
    """Sniffs the first bytes: a `watch --record` file, whatever its name."""
    from tuneadvisor.metrics.recording import sniff

    return sniff(peek(path).decode("utf-8", errors="replace"))


def _open_replay(request: ReplayRequest) -> int:
    from tuneadvisor.commands import watch
    from tuneadvisor.watch.replay import load_replay
    from tuneadvisor.workspace.rule_files import load_rules, rule_dirs

    rules = load_rules(rule_dirs(request.rules))
    session = load_replay(request.path, rules, speed=request.speed)
    instead = f"tuneadvisor report --metrics {request.path} reads the recording"
    title = f"tuneadvisor open: {request.path} (replay)"
    return watch.show_screen(session, title, command="open", instead=instead)


def _check_paths_exist(inputs: Inputs) -> None:
    """Fail before the screen opens for the commonest mistake: a path that is not there."""
    from pathlib import Path

    from tuneadvisor.profile.sniff import JOB_SCRIPT_GIVEN, looks_like_job_script

    named = (inputs.job, inputs.script, inputs.seff, inputs.sacct, inputs.site)
    for path in (*inputs.profiles, *inputs.traces, *inputs.metrics, *(p for p in named if p)):
        if not path_exists(Path(path), "input"):  # a name too long is one line there
            raise InputError(path, "no such file")
    for path in inputs.profiles:  # a job script given as the profile: said before the screen
        if looks_like_job_script(peek(path).decode("utf-8", errors="replace")):
            raise InputError(path, JOB_SCRIPT_GIVEN)
