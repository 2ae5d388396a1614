"""The options `run` and `tune` share: the allocation, the training knobs, the data set and
the interpreter (argparse only: building the parser stays fast), and the request they make.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tuneadvisor.errors import InputError

if TYPE_CHECKING:
    from tuneadvisor.relaunch.requests import RelaunchRequest, SettingsOverrides


def add_settings_arguments(parser: argparse.ArgumentParser, *, submit: bool = False) -> None:
    """The allocation and the training knobs (shared by ``run`` and ``tune``); ``submit``:
    the command has --submit (``run``), so the help may name it (``tune`` has none)."""
    where = "; #SBATCH with --submit" if submit else ", and the winning job script's #SBATCH"
    alloc = parser.add_argument_group(
        f"allocation (emulated here{where}; unset: the bundled job's own, or --from's advice)"
    )
    alloc.add_argument("--cpus-per-task", type=int, metavar="N", help="cores per task")
    alloc.add_argument("--ntasks", type=int, metavar="N", help="tasks (DDP ranks), all nodes")
    alloc.add_argument(
        "--nodes",
        type=int,
        metavar="N",
        help="nodes (with --submit; tasks spread evenly)" if submit else "nodes",
    )
    alloc.add_argument("--ntasks-per-node", type=int, metavar="N", help="tasks on each node")
    alloc.add_argument("--gpus", type=int, metavar="N", help="GPUs (--gres=gpu:N)")
    alloc.add_argument("--mem", metavar="SIZE", help="memory per node, as sbatch spells it")
    alloc.add_argument("--time", metavar="LIMIT", help="time limit, as sbatch spells it")
    knobs = parser.add_argument_group(
        "training knobs (the bundled scripts' flags; unset: the script's default, or --from's "
        "advice)"
    )
    knobs.add_argument("--num-workers", type=int, metavar="N")
    knobs.add_argument("--batch-size", type=int, metavar="N")
    knobs.add_argument("--pin-memory", action=argparse.BooleanOptionalAction, default=None)
    knobs.add_argument("--persistent-workers", action=argparse.BooleanOptionalAction, default=None)
    knobs.add_argument("--prefetch-factor", type=int, metavar="N")
    knobs.add_argument("--amp", action=argparse.BooleanOptionalAction, default=None)
    knobs.add_argument("--max-steps", type=int, metavar="N")
    knobs.add_argument("--epochs", type=int, metavar="N")
    knobs.add_argument("--input-cost", metavar="LEVEL", help="none, low, medium, high or pixels")
    knobs.add_argument("--max-eval-batches", type=int, metavar="N")
    knobs.add_argument("--log-interval", type=int, metavar="N")
    knobs.add_argument(
        "--extra",
        action="append",
        default=[],
        metavar="ARG",
        help="one more argument for the training script, e.g. --extra=--lr=0.5 (repeatable)",
    )
    data = parser.add_argument_group("data and interpreter")
    data.add_argument("--data-dir", metavar="DIR", help="the data set's folder (default: ./data)")
    data.add_argument(
        "--synthetic",
        type=int,
        metavar="N",
        help="make (once) and use a synthetic data set of N training images, kept in the "
        "runs folder",
    )
    data.add_argument(
        "--python",
        metavar="PY",
        help="interpreter with torch (default: $TUNEADVISOR_TORCH_PYTHON, else this one)",
    )
    parser.add_argument(
        "--runs", metavar="DIR", help="runs folder (default: $TUNEADVISOR_RUNS_DIR or ./runs)"
    )
    parser.add_argument(
        "--from",
        dest="from_report",
        metavar="REPORT.json",
        help="start from this report's advice (`tuneadvisor report --format json`)",
    )
    parser.add_argument(
        "--no-progress", action="store_true", help="no progress bar, one line per epoch"
    )


def settings_overrides(args: argparse.Namespace) -> SettingsOverrides:
    """The settings flags given; a count below 1 (GPUs: below 0) is one InputError line."""
    from tuneadvisor.relaunch.requests import SettingsOverrides
    from tuneadvisor.relaunch.settings import KNOBS

    counts = {"cpus_per_task": args.cpus_per_task, "ntasks": args.ntasks, "gpus": args.gpus,
              "nodes": args.nodes, "ntasks_per_node": args.ntasks_per_node}  # fmt: skip
    for key, value in counts.items():
        least = 0 if key == "gpus" else 1
        if value is not None and value < least:
            raise InputError(None, f"--{key.replace('_', '-')} must be at least {least}")
    return SettingsOverrides(
        cpus_per_task=args.cpus_per_task,
        ntasks=args.ntasks,
        nodes=args.nodes,
        ntasks_per_node=args.ntasks_per_node,
        gpus=args.gpus,
        mem=args.mem,
        time=args.time,
        knobs={key: vars(args)[key] for key in KNOBS if vars(args)[key] is not None},
        extra=tuple(args.extra),
    )


def relaunch_request(args: argparse.Namespace) -> RelaunchRequest:
    """What the options shared by ``run`` and ``tune`` ask for (``run`` adds its own)."""
    from tuneadvisor.relaunch.requests import RelaunchRequest

    return RelaunchRequest(
        name=args.name,
        overrides=settings_overrides(args),
        from_report=args.from_report,
        python=args.python,
        runs=args.runs,
        data_dir=args.data_dir,
        synthetic=args.synthetic,
    )
