"""``tuneadvisor report``: the analysis as text, markdown or JSON on stdout."""

from __future__ import annotations

import argparse
import sys

from tuneadvisor.commands.inputs import add_inputs, add_queue_option, inputs_of, trace_progress

HELP = "print the analysis (text, markdown or JSON)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_inputs(parser)
    add_queue_option(parser)
    parser.add_argument(
        "--format",
        choices=("text", "markdown", "json"),
        default="text",
        help="output format (default: text)",
    )


def run(args: argparse.Namespace) -> int:
    from tuneadvisor.workspace.load import load_workspace

    workspace = load_workspace(inputs_of(args), progress=trace_progress())
    if args.format == "json":
        import json

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
