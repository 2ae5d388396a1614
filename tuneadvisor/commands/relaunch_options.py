"""The options `run` and `tune` share: the allocation, the training knobs, the data set and
the interpreter (argparse only: building the parser stays fast)."""

from __future__ import annotations

import argparse


def add_settings_arguments(parser: argparse.ArgumentParser) -> None:
    """The allocation and the training knobs (shared by ``run`` and ``tune``)."""
    alloc = parser.add_argument_group("allocation (emulated here; #SBATCH with --submit)")
    alloc.add_argument("--cpus-per-task", type=int, metavar="N", help="cores per task")
    alloc.add_argument("--ntasks", type=int, metavar="N", help="tasks (DDP ranks), all nodes")
    alloc.add_argument(
        "--nodes", type=int, metavar="N", help="nodes (with --submit; tasks spread evenly)"
    )
    alloc.add_argument("--ntasks-per-node", type=int, metavar="N", help="tasks on each node")
    alloc.add_argument("--gpus", type=int, metavar="N", help="GPUs (--gres=gpu:N)")
    alloc.add_argument("--mem", metavar="SIZE", help="memory per node, as sbatch spells it")
    alloc.add_argument("--time", metavar="LIMIT", help="time limit, as sbatch spells it")
    knobs = parser.add_argument_group("training knobs (the bundled scripts' flags)")
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
