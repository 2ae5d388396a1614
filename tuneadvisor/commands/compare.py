"""``tuneadvisor compare RUN_OR_PROFILE ...``: runs, profiles and recordings side by side,
with terminal plots and, on request, a PNG or SVG file. Only argparse loads at start-up."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tuneadvisor.compare.tables import Item

HELP = "runs or profiles side by side, with plots"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "items",
        nargs="*",
        metavar="RUN_OR_PROFILE",
        help="run folders (or their run.json), .lprof profiles, `watch --record` files; "
        "or two torch.profiler traces (.json/.json.gz files or folders): what changed per "
        "kind of the steps; none: every run in the runs folder",
    )
    parser.add_argument(
        "--runs", metavar="DIR", help="runs folder (default: $TUNEADVISOR_RUNS_DIR or ./runs)"
    )
    parser.add_argument(
        "--plot", metavar="FILE", help="also write the plots to FILE (.png or .svg)"
    )
    parser.add_argument("--no-plots", action="store_true", help="tables only in the terminal")
    parser.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    import json
    import sys
    from pathlib import Path

    from rich.console import Console

    from tuneadvisor.compare.speedup_check import held_notes, speedup_checks, speedup_findings
    from tuneadvisor.compare.tables import (
        findings,
        labelled,
        load_item,
        scale_points,
        tables,
        to_json,
    )
    from tuneadvisor.errors import InputError
    from tuneadvisor.relaunch.predicted import FINDING_ID
    from tuneadvisor.relaunch.records import list_runs, runs_dir

    paths: list[str] = list(args.items)
    if len(paths) == 2 and _all_traces(paths):
        return _compare_traces(paths, args.format)
    if not paths:
        found = list_runs(runs_dir(args.runs))
        if not found:
            raise InputError(runs_dir(args.runs), "no runs to compare (tuneadvisor run first)")
        paths = [str(r.path.parent) for r in found if r.path is not None]
    items = [load_item(p) for p in _tune_folders_as_runs(paths)]
    plot_path = None
    if args.format != "json":  # a label is a run's own (run.json, handed over): shown, not obeyed
        from dataclasses import replace

        from tuneadvisor.present.terminal_safe import one_line_safe

        items = [_shown(replace(item, label=one_line_safe(item.label))) for item in items]
    if args.plot:
        from tuneadvisor.compare.plots import write_plot_file

        plot_path = write_plot_file(items, Path(args.plot))
    if args.format == "json":
        out = {
            "items": to_json(items),
            "scaling": [p.to_json() for p in scale_points(items)],
            "speedup_checks": [c.as_json() for c in speedup_checks(items)],
            "plot": str(plot_path) if plot_path else None,
        }
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return 0
    # tables are wide: a pipe or a file gets 120 columns, not rich's 80
    # no markup in the tables' cells: a label "[bold]x" is printed as it is written
    console = Console(markup=False) if sys.stdout.isatty() else Console(width=120, markup=False)
    for table in tables(items, console.width):
        console.print(table)
    checks = speedup_checks(labelled(items)[0])
    for line in findings(items) + speedup_findings(checks):
        console.print(f"[bold]{FINDING_ID}[/]: ", markup=True, highlight=False, end="")
        console.print(line, highlight=False, soft_wrap=True)
    for line in held_notes(checks):
        console.print(line, highlight=False, soft_wrap=True)
    if not args.no_plots:
        from tuneadvisor.compare.plots import terminal_plots

        text = terminal_plots(items, width=min(console.width, 100), color=console.is_terminal)
        if text:
            sys.stdout.write(text + "\n")
    if plot_path:
        console.print(f"plots written to {plot_path}", highlight=False)
    return 0


def _tune_folders_as_runs(paths: list[str]) -> list[str]:
    """A tune folder stands for its trials' runs (``compare runs/*-NAME-*`` after a tune)."""
    from tuneadvisor.compare.tune_folders import expand_tune_folders

    return expand_tune_folders(paths)


def _all_traces(paths: list[str]) -> bool:
    from tuneadvisor.runrecord.record import is_run_record
    from tuneadvisor.workspace.inputs import is_run_folder, split_profiles

    # a run folder of `run --profile torch` holds traces too, and run.json is JSON as a trace
    # is: compare reads both as runs (a record is told by its content, not its name)
    runs = any(is_run_folder(p) or is_run_record(p) for p in paths)
    return not runs and not split_profiles(paths)[0]


def _shown(item: Item) -> Item:
    """An item whose recorded prediction's setting names (a report's, handed to run --from)
    are shown safe: one line, no control character, cut (``name_safe``)."""
    from dataclasses import replace

    from tuneadvisor.present.terminal_safe import name_safe

    check = item.predicted
    if check is None:
        return item
    setting = {name_safe(k, 60): v for k, v in check.prediction.setting.items()}
    prediction = replace(check.prediction, setting=setting)
    return replace(item, predicted=replace(check, prediction=prediction))


def _compare_traces(paths: list[str], fmt: str) -> int:
    """Two traces (or folders of one run's ranks): the steps' time and shares, before and
    after."""
    import json
    import sys

    from tuneadvisor.commands.inputs import trace_progress
    from tuneadvisor.profile.trace.diff import changes, render_text
    from tuneadvisor.profile.trace.reader import read_trace_set

    before, after = (read_trace_set([p], trace_progress()) for p in paths)
    rows = changes(before, after)
    if fmt == "json":
        out = {"before": paths[0], "after": paths[1],
               "changes": [{"what": r.what, "before": r.before, "after": r.after,
                            "change": r.delta} for r in rows]}  # fmt: skip
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return 0
    from tuneadvisor.present.terminal_safe import name_safe, terminal_safe

    # a folder's name is a file's: one line, no control character (a forged line, an escape)
    sys.stdout.write(f"before: {name_safe(paths[0], 4096)}\nafter:  {name_safe(paths[1], 4096)}\n")
    sys.stdout.write(terminal_safe(render_text(rows)))
    return 0
