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
        help="GPU metrics: an nvidia-smi --query-gpu --format=csv log (repeatable)",
    )
    parser.add_argument("--seff", metavar="FILE", help="saved `seff JOBID` output")
    parser.add_argument("--sacct", metavar="FILE", help="saved `sacct -j JOBID --json` output")
    parser.add_argument("--jobid", metavar="ID", help="which job of the sacct output to read")
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

    open_p = sub.add_parser("open", help="open profiles and the job in the terminal UI")
    _add_inputs(open_p)

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
    )
    if request.is_empty():
        raise InputError(None, f"{args.command}: give at least one profile (.lprof) or --job")
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

    request = _request(args)
    _check_paths_exist(request)
    from tuneadvisor.tui.app import run_open

    names = ", ".join(request.profiles) or (request.job or "")
    return run_open(
        lambda: load_workspace(request),
        title=f"tuneadvisor: {names}",
        quick=lambda: load_quick_workspace(request),
    )


def _check_paths_exist(request: WorkspaceRequest) -> None:
    """Fail before the screen opens for the commonest mistake: a path that is not there."""
    from pathlib import Path

    named = (request.job, request.script, request.seff, request.sacct, request.site)
    for path in (*request.profiles, *request.metrics, *(p for p in named if p)):
        if not Path(path).exists():
            raise InputError(path, "no such file")


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
