"""``tuneadvisor tune NAME``: short trials over the knobs, the winner written as a job script.
Only argparse loads at start-up."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tuneadvisor.commands.inputs import MAX_SECONDS, finite
from tuneadvisor.commands.relaunch_options import add_settings_arguments, relaunch_request
from tuneadvisor.errors import EXIT_INTERRUPTED, InputError

if TYPE_CHECKING:
    from rich.console import Console

    from tuneadvisor.relaunch.runner import RunRequest
    from tuneadvisor.tune.tuner import Trial, TuneOptions, TuneRequest, TuneResult

HELP = "short trials over the knobs; writes the winning job"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "name", metavar="NAME", nargs="?", help="bundled script to tune (or --job JOBSCRIPT)"
    )
    add_settings_arguments(parser)
    tune = parser.add_argument_group("trials")
    tune.add_argument(
        "--budget",
        type=finite,
        metavar="T",
        help="time budget: seconds for the whole search (default: 300 s); with --job, "
        "MINUTES to wait for the array (default: 30 min), the tasks left then cancelled",
    )
    tune.add_argument(
        "--steps",
        type=int,
        metavar="N",
        help="measured steps per trial (default: 10), with --job 30",
    )
    tune.add_argument(
        "--warmup", type=int, default=3, metavar="N", help="warm-up steps per trial (default: 3)"
    )
    tune.add_argument(
        "--repeats", type=int, metavar="N",
        help="repeats per trial (default: 1; with --job 2, interleaved; with one, a trial's "
        "spread is that of its steps after the warm-up, and no setting has a spread over repeats)",
    )  # fmt: skip
    tune.add_argument(
        "--min-gain", type=finite, default=5.0, metavar="PCT",
        help="a change is kept only if it gains this much and more than the measured spread "
        "(default: 5 %%)",
    )  # fmt: skip
    tune.add_argument(
        "--stages",
        default="workers,batch,amp,pin",  # all of relaunch.tune.STAGES
        help="which knobs, in order (default: workers,batch,amp,pin)",
    )
    tune.add_argument(
        "--max-cores",
        type=int,
        metavar="N",
        help="cores to try up to (default: the cores this process may use)",
    )
    parser.add_argument(
        "-o", "--output", metavar="JOB",
        help="winning job script (default: in the tune folder; with --job, JOB.tuned.sbatch)",
    )  # fmt: skip
    own = parser.add_argument_group("your own job (on its cluster, as one Slurm job array)")
    own.add_argument(
        "--job", metavar="JOBSCRIPT",
        help="tune this job script and the training script it runs, unedited: one job array "
        "of short trials (the prediction's setting and its neighbours)",
    )  # fmt: skip
    own.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="the ledger's form (default: text)",
    )
    own.add_argument(
        "--submit-winner", action="store_true", help="submit the winning job script with sbatch"
    )
    own.add_argument("--force", action="store_true", help="overwrite -o when it exists")
    own.add_argument(
        "--sweep",
        action="store_true",
        help="run every trial of the array (a plain sweep): without it, a setting outside both "
        "spreads of the fastest gets no more runs and the tasks left once decided are cancelled",
    )
    own.add_argument(
        "--spread",
        action="store_true",
        help="run trials side by side, one per node of the partition (each node --exclusive), "
        "not one at a time",
    )


def tune_request(args: argparse.Namespace) -> TuneRequest:
    """The checked request of ``tune``: an unknown stage or a trial shorter than one step is
    one InputError line."""
    from tuneadvisor.tune.tuner import STAGES, TuneOptions, TuneRequest

    if args.name is None:
        raise InputError(None, "tune: give a bundled script's NAME, or --job JOBSCRIPT")
    stages = tuple(s.strip() for s in args.stages.split(",") if s.strip())
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise InputError(None, f"--stages: unknown stage {unknown[0]!r}")
    budget = 300.0 if args.budget is None else args.budget
    if not 0 < budget <= MAX_SECONDS:
        raise InputError(
            None, f"--budget: seconds above 0 and up to {MAX_SECONDS:g}, not {budget:g}"
        )
    steps = 10 if args.steps is None else args.steps
    repeats = 1 if args.repeats is None else args.repeats
    if steps < 1 or args.warmup < 0 or repeats < 1:
        raise InputError(None, "--steps and --repeats must be at least 1, --warmup 0 or more")
    options = TuneOptions(
        budget_s=budget,
        warmup_steps=args.warmup,
        measure_steps=steps,
        repeats=repeats,
        min_gain=args.min_gain / 100.0,
        stages=stages,
        max_cores=args.max_cores,
    )
    return TuneRequest(relaunch_request(args), options, output=args.output)


def run(args: argparse.Namespace) -> int:
    if args.job is not None:
        from tuneadvisor.commands.tune_job import run_job

        return run_job(args)
    from dataclasses import replace

    from rich.console import Console

    from tuneadvisor.relaunch.requests import resolve_run
    from tuneadvisor.relaunch.runner import new_run_dir
    from tuneadvisor.tune.tuner import winning_settings, write_tune_summary, write_winning_job

    request = tune_request(args)
    req = resolve_run(request.relaunch)
    tune_id, folder = new_run_dir(req.runs_root, f"tune-{req.spec.name}")
    req = replace(req, runs_root=folder / "trials")
    try:
        result = _trials(req, request.options)
    except KeyboardInterrupt:
        # nothing is written for an interrupted tune: no summary, no winning job script
        print(f"tuneadvisor: tune interrupted; its trials so far are in {folder}",
              file=sys.stderr)  # fmt: skip
        return EXIT_INTERRUPTED
    console = Console()
    _print_result(console, req.spec.name, result)
    winner = winning_settings(result)
    options = vars(request.options) | {"stages": request.options.stages}
    extra = {"id": tune_id, "name": req.spec.name, "options": options}
    if winner is None:
        write_tune_summary(folder, result, extra)
        console.print("no winner: the base run failed", highlight=False)
        return 1
    job = Path(request.output) if request.output else folder / f"{req.spec.name}.tuned.sbatch"
    write_winning_job(req, winner, job)
    summary = write_tune_summary(folder, result, {**extra, "job": str(job)})
    console.print(
        f"winner: {winner.describe()}; job script {job}; trials in {summary}", highlight=False
    )
    return 0


def _trials(req: RunRequest, options: TuneOptions) -> TuneResult:
    """The trials, each one line on stderr as it ends."""
    from rich.console import Console

    from tuneadvisor.relaunch.local_allocation import describe_here, gpus_here
    from tuneadvisor.tune.tuner import Tuner, advice_to_judge

    err = Console(stderr=True)
    gpus = gpus_here()  # as each trial will have it here: no "1 gpu" on a machine without one

    def show(trial: Trial) -> None:
        rate = (
            f"{trial.rate:,.1f} samples/s +-{100 * trial.spread:.1f} %, {_over_repeats(trial)}"
            if trial.rate
            else "failed"
        )
        # the figures first: on a narrow terminal only the settings' words wrap, never a
        # figure away from its unit
        err.print(f"  {trial.stage:8} {rate:48} {describe_here(trial.settings, gpus)}",
                  highlight=False)  # fmt: skip

    err.print(f"tuning {req.spec.name} for at most {options.budget_s:g} s:", highlight=False)
    if req.prediction is not None:
        err.print(
            "starting from the report's prediction: "
            + ", ".join(f"{k} {v}" for k, v in sorted(req.prediction.setting.items())),
            highlight=False,
        )
    return Tuner(req, options, on_trial=show).run(advice_to_judge(req.settings), req.prediction)


def _print_result(console: Console, name: str, result: TuneResult) -> None:
    """The trials as a table (the best marked *), then what was decided and why."""
    from rich.table import Table

    from tuneadvisor.relaunch.local_allocation import describe_parts_here, gpus_here
    from tuneadvisor.tune.tuner import summary_lines

    # what every trial shares goes under the table, each row shows what it changed: the
    # table fits 100 columns without wrapping a setting, a "%" or the best's mark
    gpus = gpus_here()
    words = [describe_parts_here(t.settings, gpus) for t in result.trials]
    shared = [w for w in words[0] if all(w in other for other in words)] if words else []
    table = Table(
        title=f"Trials of {name}",
        title_justify="left",
        caption=("every trial: " + ", ".join(shared) + "; " if shared else "") + "*: the best",
        caption_justify="left",
    )
    for col in ("stage", "settings", "samples/s", "spread", "over\nrepeats", "against\nbase"):
        figure = col not in ("stage", "settings")  # "+-3.1 %": never split from its unit
        table.add_column(col, justify="right" if figure else "left", no_wrap=figure)
    base_rate = result.base.rate if result.base else None
    for trial, own in zip(result.trials, words, strict=True):
        mark = " *" if trial is result.best else ""
        table.add_row(
            trial.stage + mark,
            ", ".join(w for w in own if w not in shared) or "-",
            f"{trial.rate:,.1f}" if trial.rate else "failed",
            f"+-{100 * trial.spread:.1f} %" if trial.rate else "-",
            _over_repeats(trial),
            f"{100 * (trial.rate / base_rate - 1):+.1f} %" if trial.rate and base_rate else "-",
        )
    console.print(table)
    for line in summary_lines(result):
        console.print(f"- {line}", highlight=False)


def _over_repeats(trial: Trial) -> str:
    """'118.2-131.0' samples/s, lowest to highest over the repeats; one run has no such
    spread, and says so."""
    if not trial.rate:
        return "-"
    low_high = trial.rate_range
    if low_high is None:
        return "one run"
    return f"{low_high[0]:,.1f}-{low_high[1]:,.1f}"
