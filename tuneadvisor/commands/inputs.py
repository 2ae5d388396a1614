"""The options every evidence-reading command shares, declared once, and the one request
they make (argparse only here: building the parser stays fast)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from tuneadvisor.errors import InputError
from tuneadvisor.files import is_directory
from tuneadvisor.numbers import is_ascii_number

if TYPE_CHECKING:
    from tuneadvisor.workspace.inputs import Inputs


# The longest time any option in seconds takes (about three years): beyond it, what is
# counted from it (rounds in a --window, a deadline) leaves the range of a C integer.
MAX_SECONDS = 1e8


def seconds(text: str) -> float:
    """An argparse type for a time in seconds: a finite number up to ``MAX_SECONDS``
    (``float`` alone takes ``nan``, ``inf`` and ``1e400``; each ended in a traceback)."""
    return _finite(text, "seconds", MAX_SECONDS)


def finite(text: str) -> float:
    """An argparse type for a finite number (a speed, a percentage)."""
    return _finite(text, "a number", 1e30)


def _finite(text: str, what: str, most: float) -> float:
    if not is_ascii_number(text):  # float() takes "٣" and "1_0" too
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number")
    value = float(text)
    if not math.isfinite(value) or abs(value) > most:
        raise argparse.ArgumentTypeError(f"{text!r}: {what} are a finite number up to {most:g}")
    return value


def add_rules_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rules",
        metavar="DIR",
        action="append",
        default=[],
        help="an extra folder of rule files (repeatable; overrides rules of the same id)",
    )


def add_inputs(parser: argparse.ArgumentParser) -> None:
    """PROFILE..., --job, --script, --metrics, --log, --probe, --seff, --scontrol, --sacct,
    --jobid, --site, --rules, --source-root: what `report`, `open`, `apply` and `run` read."""
    parser.add_argument(
        "profiles",
        nargs="*",
        metavar="PROFILE",
        help="line_profiler output: .lprof files (several = one per rank, merged) "
        "or the text table `python -m line_profiler` printed; or torch.profiler traces: "
        ".json/.json.gz files or folders of them (one per rank)",
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
        help="GPU metrics: an nvidia-smi --query-gpu --format=csv log, a "
        "`tuneadvisor watch --record` file, `dcgmi dmon` output or dcgm-exporter text "
        "(repeatable)",
    )
    parser.add_argument(
        "--metrics-columns",
        metavar="LIST",
        help="the --query-gpu list of nvidia-smi logs written with --format=csv,noheader "
        "(e.g. timestamp,index,utilization.gpu,memory.used); a log with a header uses its own",
    )
    parser.add_argument(
        "--log",
        metavar="FILE",
        dest="logs",
        action="append",
        default=[],
        help="the job's output log (slurm-JOBID.out; repeatable: stdout and stderr), read "
        "for why it died; with --jobid, the StdOut and StdErr Slurm reports are read too",
    )
    parser.add_argument(
        "--probe",
        metavar="FILE",
        help="the JSON a bundled training script's --probe FILE wrote: the step with one "
        "batch on the device, the input pipeline per worker count and the real loop, timed",
    )
    parser.add_argument("--seff", metavar="FILE", help="saved `seff JOBID` output")
    parser.add_argument(
        "--scontrol",
        metavar="FILE",
        help="saved `scontrol show job -o JOBID` output: the job as it ran (sbatch's "
        "command-line options over the script's #SBATCH lines), once Slurm has forgotten it",
    )
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
    add_rules_option(parser)
    parser.add_argument(
        "--source-root",
        metavar="DIR",
        action="append",
        default=[],
        help="where to look for the profiled source when the recorded paths do not exist "
        "here (repeatable)",
    )


def add_queue_option(parser: argparse.ArgumentParser) -> None:
    """--queue, of `report` and `apply`: Slurm is asked only when the user says so."""
    parser.add_argument(
        "--queue",
        action="store_true",
        help="ask Slurm when the job script, as written and as tuned, would start "
        "(sbatch --test-only: nothing is submitted) and, with the run's steps and step time, "
        "when each would end",
    )


def has_inputs(args: argparse.Namespace) -> bool:
    return bool(
        args.profiles or args.job or args.jobid or args.seff or args.sacct or args.logs
        or args.probe or args.scontrol
    )  # fmt: skip


def inputs_of(args: argparse.Namespace) -> Inputs:
    """The one request of every evidence-reading command; nothing is read yet."""
    from pathlib import Path

    from tuneadvisor.workspace.inputs import Inputs, split_profiles

    profiles, traces = split_profiles(args.profiles)
    inputs = Inputs(
        profiles=profiles,
        traces=traces,
        job=args.job,
        source_roots=tuple(args.source_root),
        script=args.script,
        metrics=tuple(args.metrics),
        metrics_columns=args.metrics_columns,
        seff=args.seff,
        sacct=args.sacct,
        jobid=args.jobid,
        site=args.site,
        rules=tuple(args.rules),
        # Slurm asked for the job's start is asked for its node shape too (sinfo)
        cluster=getattr(args, "submit", False) or getattr(args, "queue", False),
        logs=tuple(args.logs),
        probe=args.probe,
        scontrol=args.scontrol,
        queue=getattr(args, "queue", False),
    )
    if inputs.is_empty():
        raise InputError(
            None,
            f"{args.command}: give at least one profile (.lprof), --job, --log, --probe or --jobid",
        )
    if inputs.metrics_columns is not None and not inputs.metrics_columns.strip(" ,"):
        raise InputError(None, "--metrics-columns: give the --query-gpu list, e.g. "
                         "timestamp,index,utilization.gpu,memory.used")  # fmt: skip
    for root in inputs.source_roots:
        if not is_directory(Path(root)):
            raise InputError(root, "--source-root is not a directory")
    return inputs


def trace_progress() -> Callable[[int, int], None] | None:
    """Where stderr is a terminal, the bytes of the traces read so far on one line of it
    (a gigabyte trace takes a while); None elsewhere (logs and pipes stay clean)."""
    import sys

    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        pct = 100 * done // total if total else 100
        end = "\n" if done >= total else ""
        sys.stderr.write(f"\rreading traces: {pct:3d} % of {total / 2**20:.0f} MiB{end}")
        sys.stderr.flush()

    return show
