"""The command line. Imports stay light: the TUI and renderers load only when used,
so `tuneadvisor --help` stays fast."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tuneadvisor import __version__
from tuneadvisor.errors import EXIT_BAD_INPUT, InputError

if TYPE_CHECKING:
    from tuneadvisor.watch.replay import ReplaySession
    from tuneadvisor.watch.session import WatchSession
    from tuneadvisor.workspace import WorkspaceRequest


def _add_inputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "profiles",
        nargs="*",
        metavar="PROFILE",
        help="line_profiler output: .lprof files (several = one per rank, merged) "
        "or the text table `python -m line_profiler` printed",
    )
    parser.add_argument("--job", metavar="JOBSCRIPT", help="the Slurm job script of the run")
    parser.add_argument(
        "--script",
        metavar="TRAIN.py",
        help="the training script (default: the one the job script's launch line runs)",
    )
    parser.add_argument(
        "--metrics",
        metavar="FILE",
        action="append",
        default=[],
        help="GPU metrics: an nvidia-smi --query-gpu --format=csv log or a "
        "`tuneadvisor watch --record` file (repeatable)",
    )
    parser.add_argument("--seff", metavar="FILE", help="saved `seff JOBID` output")
    parser.add_argument("--sacct", metavar="FILE", help="saved `sacct -j JOBID --json` output")
    parser.add_argument(
        "--jobid",
        metavar="ID",
        help="a Slurm job: its script, accounting, seff and state are read from Slurm "
        "(with --sacct FILE: which job of the file to read)",
    )
    parser.add_argument(
        "--site",
        metavar="FILE",
        help="the cluster's node shapes (default: $TUNEADVISOR_SITE or "
        "~/.config/tuneadvisor/site.toml)",
    )
    parser.add_argument(
        "--rules",
        metavar="DIR",
        action="append",
        default=[],
        help="an extra folder of rule files (repeatable; overrides rules of the same id)",
    )
    parser.add_argument(
        "--source-root",
        metavar="DIR",
        action="append",
        default=[],
        help="where to look for the profiled source when the recorded paths do not exist "
        "here (repeatable)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tuneadvisor",
        description="Profile viewer and tuning advisor for PyTorch training on Slurm.",
    )
    parser.add_argument("--version", action="version", version=f"tuneadvisor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    open_p = sub.add_parser(
        "open",
        help="open profiles and the job in the terminal UI (or replay a watch recording)",
        description="Open profiles, the job and its metrics in the terminal UI. Given only a "
        "`tuneadvisor watch --record` file (open REC.jsonl), replay it on the watch screen.",
    )
    _add_inputs(open_p)
    open_p.add_argument(
        "--speed",
        type=float,
        default=10.0,
        metavar="X",
        help="replay speed of a watch recording, times the recorded pace (default 10; "
        "] and [ change it on the screen)",
    )

    report_p = sub.add_parser("report", help="print the analysis (text, markdown or JSON)")
    _add_inputs(report_p)
    report_p.add_argument(
        "--format",
        choices=("text", "markdown", "json"),
        default="text",
        help="output format (default: text)",
    )
    apply_p = sub.add_parser(
        "apply", help="write the tuned job script (and a training-script patch)"
    )
    _add_inputs(apply_p)
    apply_p.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="where to write the tuned job script (default: JOB with .tuned before its suffix)",
    )
    apply_p.add_argument(
        "--in-place",
        action="store_true",
        help="overwrite the job script itself, keeping a backup (JOB.bak)",
    )
    apply_p.add_argument(
        "--submit",
        action="store_true",
        help="submit the tuned job script with sbatch and print its job id "
        "(suggestions are kept within the partition's node shape, from sinfo)",
    )
    jobs_p = sub.add_parser("jobs", help="your recent Slurm jobs: state, efficiency, top finding")
    jobs_p.add_argument("--user", help="whose jobs (default: you)")
    jobs_p.add_argument(
        "--since", default="now-7days", help="as sacct -S reads it (default: now-7days)"
    )
    jobs_p.add_argument("--limit", type=int, default=20, help="newest N jobs (default: 20)")
    jobs_p.add_argument("--format", choices=("text", "json"), default="text")
    jobs_p.add_argument(
        "--rules",
        metavar="DIR",
        action="append",
        default=[],
        help="an extra folder of rule files (repeatable)",
    )

    watch_p = sub.add_parser(
        "watch",
        help="sample a running job live: GPUs, cores, its processes, live findings",
        description="Sample GPUs (NVML), cores and the training process tree (psutil) live. "
        "Targets: --pid PID, --job JOBID, -- COMMAND ..., or nothing (the whole node).",
    )
    from tuneadvisor.watch.args import add_watch_arguments

    add_watch_arguments(watch_p)

    from tuneadvisor.compare_cli import add_compare_arguments
    from tuneadvisor.run_cli import add_run_arguments
    from tuneadvisor.tune_cli import add_tune_arguments

    run_p = sub.add_parser(
        "run",
        help="relaunch a bundled training script (here, or with --submit through sbatch)",
        description="Run a bundled training script with explicit settings or with the advice "
        "of a report (--from REPORT.json, or the same inputs as `report`). Runs are recorded "
        "in the runs folder.",
    )
    add_run_arguments(run_p)
    _add_inputs(run_p)
    compare_p = sub.add_parser("compare", help="runs or profiles side by side, with plots")
    add_compare_arguments(compare_p)
    tune_p = sub.add_parser("tune", help="short trials over the knobs; writes the winning job")
    add_tune_arguments(tune_p)

    rules_p = sub.add_parser("rules", help="list, show or check rule files")
    rules_sub = rules_p.add_subparsers(dest="rules_command", metavar="ACTION", required=True)
    list_p = rules_sub.add_parser("list", help="the rules in force, one line each")
    show_p = rules_sub.add_parser("show", help="one rule in full")
    show_p.add_argument("rule_id", metavar="ID")
    check_p = rules_sub.add_parser("check", help="validate a folder of rules and run its cases")
    check_p.add_argument("dirs", nargs="*", metavar="DIR", help="default: the rules in force")
    for p in (list_p, show_p, check_p):
        p.add_argument(
            "--rules",
            metavar="DIR",
            action="append",
            default=[],
            help="an extra folder of rule files (repeatable)",
        )
    return parser


def _request(args: argparse.Namespace) -> WorkspaceRequest:
    from pathlib import Path

    from tuneadvisor.workspace import WorkspaceRequest

    request = WorkspaceRequest(
        profiles=tuple(args.profiles),
        job=args.job,
        source_roots=tuple(args.source_root),
        script=args.script,
        metrics=tuple(args.metrics),
        seff=args.seff,
        sacct=args.sacct,
        jobid=args.jobid,
        site=args.site,
        rules=tuple(args.rules),
        cluster=getattr(args, "submit", False),
    )
    if request.is_empty():
        raise InputError(
            None, f"{args.command}: give at least one profile (.lprof), --job or --jobid"
        )
    for root in request.source_roots:
        if not Path(root).is_dir():
            raise InputError(root, "--source-root is not a directory")
    return request


def _cmd_report(args: argparse.Namespace) -> int:
    from tuneadvisor.workspace import load_workspace

    workspace = load_workspace(_request(args))
    if args.format == "json":
        from tuneadvisor.report.json_report import to_json

        text = json.dumps(to_json(workspace), indent=2) + "\n"
    elif args.format == "markdown":
        from tuneadvisor.report.markdown import render_markdown

        text = render_markdown(workspace)
    else:
        from tuneadvisor.report.text import render_text

        text = render_text(workspace)
    sys.stdout.write(text)
    return 0


def _cmd_open(args: argparse.Namespace) -> int:
    from tuneadvisor.workspace import load_quick_workspace, load_workspace

    replay = _replay_target(args)
    if replay is not None:
        return _open_replay(args, replay)
    request = _request(args)
    _check_paths_exist(request)
    from tuneadvisor.tui.app import run_open

    names = ", ".join(request.profiles) or request.job or f"job {request.jobid or ''}"
    return run_open(
        lambda: load_workspace(request),
        title=f"tuneadvisor: {names}",
        quick=lambda: load_quick_workspace(request),
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
    from tuneadvisor.advisor.rules import load_rules, rule_dirs
    from tuneadvisor.watch.replay import load_replay

    if not 0 < args.speed < float("inf"):
        raise InputError(None, f"--speed {args.speed:g}: must be a positive number")
    session = load_replay(path, load_rules(rule_dirs(args.rules)), speed=args.speed)
    return _watch_screen(session, f"tuneadvisor open: {path} (replay)")


def _check_paths_exist(request: WorkspaceRequest) -> None:
    """Fail before the screen opens for the commonest mistake: a path that is not there."""
    from pathlib import Path

    named = (request.job, request.script, request.seff, request.sacct, request.site)
    for path in (*request.profiles, *request.metrics, *(p for p in named if p)):
        if not Path(path).exists():
            raise InputError(path, "no such file")


def _watch_screen(session: WatchSession | ReplaySession, title: str) -> int:
    from tuneadvisor.tui.watch_app import run_watch_app

    return run_watch_app(session, title=title)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "report":
            return _cmd_report(args)
        if args.command == "open":
            return _cmd_open(args)
        if args.command == "apply":
            from tuneadvisor.apply_cli import run_apply

            return run_apply(args, _request(args))
        if args.command == "jobs":
            from tuneadvisor.jobs_cli import run_jobs

            return run_jobs(args)
        if args.command == "watch":
            from tuneadvisor.watch.cli import run_watch

            return run_watch(args, show=None if args.headless else _watch_screen)
        if args.command == "run":
            from tuneadvisor.run_cli import run_run

            has_inputs = args.profiles or args.job or args.jobid or args.seff or args.sacct
            return run_run(args, _request(args) if has_inputs else None)
        if args.command == "compare":
            from tuneadvisor.compare_cli import run_compare

            return run_compare(args)
        if args.command == "tune":
            from tuneadvisor.tune_cli import run_tune

            return run_tune(args)
        if args.command == "rules":
            from tuneadvisor.rules_cli import run_rules_command

            return run_rules_command(args)
    except InputError as err:
        print(f"tuneadvisor: {err.one_line()}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # `tuneadvisor report | head`: the reader left; that is not an error.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        return 130
    raise AssertionError(f"unhandled command {args.command}")
