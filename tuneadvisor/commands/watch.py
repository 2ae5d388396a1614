"""``tuneadvisor watch``: its arguments (argparse only: building the parser stays fast) and
the live screen it opens; the sampling itself is in tuneadvisor.watch."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tuneadvisor.commands.inputs import add_rules_option, seconds
from tuneadvisor.errors import InputError
from tuneadvisor.numbers import is_ascii_digits

if TYPE_CHECKING:
    from tuneadvisor.watch.live_run import LiveRun
    from tuneadvisor.watch.replay import ReplaySession
    from tuneadvisor.watch.request import WatchRequest
    from tuneadvisor.watch.session import WatchSession

HELP = "sample a running job live: GPUs, cores, its processes, live findings"
DESCRIPTION = (
    "Sample GPUs (NVML), cores and the training process tree (psutil) live. "
    "Targets: --pid PID, --job JOBID, -- COMMAND ..., or nothing (the whole node)."
)


PID_MAX = 2**22  # Linux's largest pid_max: a bigger number is no process id
MIN_INTERVAL_S = 0.1


def _pid(text: str) -> int:
    """A process id: 1..PID_MAX (a 20-digit number would overflow the C calls)."""
    if not (is_ascii_digits(text) and len(text) <= 7 and 0 < int(text) <= PID_MAX):
        raise argparse.ArgumentTypeError(f"not a process id (1..{PID_MAX}): {text[:40]!r}")
    return int(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--pid", type=_pid, action="append", metavar="PID",
                        help="watch this process and all its children (repeatable)")  # fmt: skip
    target.add_argument("--job", metavar="JOBID",
                        help="watch a running Slurm job: here when it runs on this node "
                        "alone, else on each of its nodes through srun --overlap")  # fmt: skip
    nodes = parser.add_mutually_exclusive_group()
    nodes.add_argument("--this-node", action="store_true",
                       help="with --job: only its processes on this node, no srun")  # fmt: skip
    nodes.add_argument("--all-nodes", action="store_true",
                       help="with --job: a sampler on every node of the job through srun "
                       "--overlap, even when it runs on this node alone")  # fmt: skip
    parser.add_argument("--interval", type=seconds, default=1.0, metavar="S",
                        help="seconds between samples (default 1, at least 0.1)")  # fmt: skip
    parser.add_argument("--record", metavar="FILE",
                        help="append every sample to FILE (JSON Lines; read it with "
                        "report/open --metrics FILE)")  # fmt: skip
    parser.add_argument("--log", metavar="FILE",
                        help="with -- COMMAND: append its output to FILE (default: beside "
                        "--record, e.g. watch.jsonl -> watch.log)")  # fmt: skip
    parser.add_argument("--headless", action="store_true",
                        help="no screen: sample, then print the summary")  # fmt: skip
    # The samplers of a multi-node watch: recording lines on stdout, read through srun.
    parser.add_argument("--stream", action="store_true", help=argparse.SUPPRESS)
    # NODE:PID of the watch that started this node's sampler: not one of the job's processes
    parser.add_argument("--watcher", help=argparse.SUPPRESS)
    parser.add_argument("--duration", type=seconds, metavar="S",
                        help="stop after S seconds (default: when the watched "
                        "processes end)")  # fmt: skip
    parser.add_argument("--window", type=seconds, default=60.0, metavar="S",
                        help="evidence window of the live findings (default 60 s)")  # fmt: skip
    parser.add_argument("--gpus", metavar="LIST",
                        help="GPUs to sample: indices or UUIDs (default: the target's "
                        "CUDA_VISIBLE_DEVICES, else all)")  # fmt: skip
    add_rules_option(parser)
    parser.add_argument("watch_command", nargs="*", metavar="-- COMMAND",
                        help="start COMMAND, watch it, and exit with its status")  # fmt: skip


def watch_request(args: argparse.Namespace) -> WatchRequest:
    """The checked request of ``watch``: a bad value or a pair of flags that do not go
    together is one InputError line."""
    from tuneadvisor.watch.request import WatchRequest

    _check_schedule(args)
    _check_target(args)
    return WatchRequest(
        command=tuple(args.watch_command),
        pids=tuple(args.pid or ()),
        job=args.job,
        where="here" if args.this_node else "all" if args.all_nodes else "auto",
        interval_s=args.interval,
        window_s=args.window,
        duration_s=args.duration,
        record=args.record,
        log=args.log,
        headless=args.headless,
        stream=args.stream,
        watcher=args.watcher,
        gpus=args.gpus,
        rules=tuple(args.rules),
    )


def _check_schedule(args: argparse.Namespace) -> None:
    if args.interval < MIN_INTERVAL_S:
        raise InputError(None, f"--interval {args.interval:g}: at least {MIN_INTERVAL_S} s")
    if args.duration is not None and args.duration <= 0:
        raise InputError(None, f"--duration {args.duration:g}: must be positive")
    if args.window <= 0:
        raise InputError(None, f"--window {args.window:g}: must be positive")
    if args.stream and args.record:
        raise InputError(None, "watch: --stream writes the rounds to stdout; not with --record")
    if args.log and args.stream:
        raise InputError(None, "watch: --stream writes the rounds to stdout; not with --log")


def _check_target(args: argparse.Namespace) -> None:
    if getattr(args, "end_of_options", False) and not args.watch_command:
        # else `watch --headless --` would watch the whole node until stopped
        raise InputError(None, "watch: no command after --: give -- COMMAND [ARGS...]")
    if args.watch_command and (args.pid or args.job):
        raise InputError(None, "watch: give --pid, --job or -- COMMAND, not several")
    if (args.this_node or args.all_nodes) and not args.job:
        flag = "--this-node" if args.this_node else "--all-nodes"
        raise InputError(None, f"watch: {flag} goes with --job JOBID")
    if args.log and not args.watch_command:
        raise InputError(None, "watch: --log FILE goes with -- COMMAND (a job has its own)")
    if args.job and not is_ascii_digits(args.job.replace("_", "")):
        raise InputError(None, f"--job {args.job}: not a Slurm job id")


def run(args: argparse.Namespace) -> int:
    from tuneadvisor.present.watch_summary import render_summary
    from tuneadvisor.watch.start import run_watch

    request = watch_request(args)
    if request.command:
        from tuneadvisor.relaunch.preflight import require_torch, torch_script_python

        python = torch_script_python(request.command)
        if python is not None:  # a training script that cannot start: say so before the screen
            require_torch(python)
    return run_watch(
        request,
        render_summary,
        show=None if request.headless else show_screen,
        hidden=_progress_record,
    )


def _progress_record(line: str) -> bool:
    """A bundled script's ``TUNEADVISOR {json}`` record: the screen's output pane leaves
    them out, and the last lines printed after it do too."""
    from tuneadvisor.relaunch.measurements import parse_event

    return parse_event(line) is not None


def show_screen(
    session: WatchSession | ReplaySession,
    title: str,
    run: LiveRun | None = None,
    *,
    command: str = "watch",
    instead: str = "use --headless",
) -> int:
    """The live screen (Textual loads only here, once stdout is known to be a terminal)."""
    from tuneadvisor.tui.terminal import require_terminal

    require_terminal(command, instead)
    from tuneadvisor.tui.watch_app import run_watch_app

    return run_watch_app(session, title=title, run=run)
