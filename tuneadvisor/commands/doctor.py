"""`tuneadvisor doctor`: what tuneadvisor can and cannot see on this node (NVML and the GPUs,
Slurm and this shell's job, kernprof, the training interpreter's torch), one line per check
with what to do where one fails. A report: it exits 0 whatever it finds."""

from __future__ import annotations

import argparse

from tuneadvisor.commands.inputs import seconds
from tuneadvisor.errors import InputError

HELP = "what tuneadvisor can see on this node: GPUs, Slurm, kernprof, torch"
DESCRIPTION = (
    "Check what tuneadvisor can and cannot see here: NVML and the driver, the GPUs this "
    "process may use, per-process GPU queries, Slurm and the job this shell is in, kernprof, "
    "and the training interpreter's torch and CUDA. Run it first on a new site, on a login "
    "node and on a GPU node. Exits 0 whatever it finds."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--python",
        metavar="PY",
        help="the training interpreter to check (default: $TUNEADVISOR_TORCH_PYTHON, else "
        "this one), as `run` picks it",
    )
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=30.0,
        metavar="S",
        help="longest wait for any one command it runs (default: 30)",
    )


def run(args: argparse.Namespace) -> int:
    import json
    import os
    import socket
    import sys

    from tuneadvisor import __version__
    from tuneadvisor.present.site_checks import checks_json, render_checks
    from tuneadvisor.present.terminal_safe import terminal_safe
    from tuneadvisor.relaunch.bundled import torch_python
    from tuneadvisor.workspace.site_checks import run_checks

    if not args.timeout > 0:
        raise InputError(None, f"doctor: --timeout must be more than 0 (got {args.timeout:g})")
    python = torch_python(args.python)
    if args.python:
        source = "--python"
    elif os.environ.get("TUNEADVISOR_TORCH_PYTHON"):
        source = "$TUNEADVISOR_TORCH_PYTHON"
    else:
        source = "tuneadvisor's own"
    checks = run_checks(python, source, timeout_s=args.timeout)
    about = {"host": socket.gethostname(), "tuneadvisor": __version__, "python": sys.executable}
    if args.format == "json":
        print(json.dumps(checks_json(checks, about), indent=2))
    else:
        import shutil

        # A terminal gets lines wrapped at word breaks under their column; a pipe, whole lines.
        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
        print(terminal_safe(render_checks(checks, about, width)), end="")
    return 0
