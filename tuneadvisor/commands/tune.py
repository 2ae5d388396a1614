"""``tuneadvisor tune NAME``: short trials over the knobs, the winner written as a job script.
Only argparse loads at start-up."""

from __future__ import annotations

import argparse
from pathlib import Path

from tuneadvisor.commands.relaunch_options import add_settings_arguments

HELP = "short trials over the knobs; writes the winning job"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME", help="bundled script to tune")
    add_settings_arguments(parser)
    tune = parser.add_argument_group("trials")
    tune.add_argument(
        "--budget", type=float, default=300.0, metavar="S", help="time budget (default: 300 s)"
    )
    tune.add_argument("--steps", type=int, default=10, metavar="N", help="measured steps per trial")
    tune.add_argument("--warmup", type=int, default=3, metavar="N", help="warm-up steps per trial")
    tune.add_argument("--repeats", type=int, default=1, metavar="N", help="repeats per trial")
    tune.add_argument(
        "--min-gain", type=float, default=5.0, metavar="PCT",
        help="a change is kept only if it gains this much (default: 5 %%)",
    )  # fmt: skip
    tune.add_argument(
        "--stages",
        default="workers,batch,amp,pin",
        help="which knobs, in order (default: workers,batch,amp,pin)",
    )
    tune.add_argument("--max-cores", type=int, metavar="N", help="cores to try up to")
    parser.add_argument(
        "-o", "--output", metavar="JOB", help="winning job script (default: in the tune folder)"
    )


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from rich.console import Console
    from rich.table import Table

    from tuneadvisor.errors import InputError
    from tuneadvisor.files import write_atomic
    from tuneadvisor.relaunch.requests import build_request
    from tuneadvisor.relaunch.runner import new_run_dir
    from tuneadvisor.relaunch.settings import render_job_script
    from tuneadvisor.relaunch.submit import launch_line
    from tuneadvisor.relaunch.tune import (
        Trial,
        TuneOptions,
        Tuner,
        summary_lines,
        winning_settings,
        write_tune_summary,
    )
    from tuneadvisor.relaunch.watcher import tuneadvisor_command

    stages = tuple(s.strip() for s in args.stages.split(",") if s.strip())
    unknown = [s for s in stages if s not in ("workers", "batch", "amp", "pin")]
    if unknown:
        raise InputError(None, f"--stages: unknown stage {unknown[0]!r}")
    if args.steps < 1 or args.warmup < 0 or args.repeats < 1:
        raise InputError(None, "--steps and --repeats must be at least 1, --warmup 0 or more")
    req = build_request(args, args.name)
    tune_id, folder = new_run_dir(req.runs_root, f"tune-{req.spec.name}")
    req = replace(req, runs_root=folder / "trials")
    options = TuneOptions(
        budget_s=args.budget,
        warmup_steps=args.warmup,
        measure_steps=args.steps,
        repeats=args.repeats,
        min_gain=args.min_gain / 100.0,
        stages=stages,
        max_cores=args.max_cores,
    )
    console = Console()
    err = Console(stderr=True)

    def show(trial: Trial) -> None:
        rate = f"{trial.rate:,.1f} samples/s" if trial.rate else "failed"
        err.print(f"  {trial.stage:8} {trial.settings.describe():45} {rate}", highlight=False)

    advice = {k: v for k, v in req.settings.knobs.items() if k in req.settings.because}
    if any(k.startswith("sbatch.cpus-per-task") for k in req.settings.because):
        advice["cpus_per_task"] = req.settings.cpus_per_task
    err.print(f"tuning {req.spec.name} for at most {args.budget:g} s:", highlight=False)
    result = Tuner(req, options, on_trial=show).run(advice)

    table = Table(title=f"Trials of {req.spec.name}", title_justify="left")
    for col in ("stage", "settings", "samples/s", "against base"):
        table.add_column(col, justify="right" if col in ("samples/s", "against base") else "left")
    base_rate = result.base.rate if result.base else None
    for trial in result.trials:
        mark = " *" if trial is result.best else ""
        table.add_row(
            trial.stage,
            trial.settings.describe() + mark,
            f"{trial.rate:,.1f}" if trial.rate else "failed",
            f"{100 * (trial.rate / base_rate - 1):+.1f} %" if trial.rate and base_rate else "-",
        )
    console.print(table)
    for line in summary_lines(result):
        console.print(f"- {line}", highlight=False)
    winner = winning_settings(result)
    extra = {"id": tune_id, "name": req.spec.name, "options": vars(options) | {"stages": stages}}
    if winner is None:
        write_tune_summary(folder, result, extra)
        console.print("no winner: the base run failed", highlight=False)
        return 1
    job = Path(args.output) if args.output else folder / f"{req.spec.name}.tuned.sbatch"
    win_req = replace(req, settings=winner)
    text = render_job_script(
        winner,
        name=req.spec.name,
        launch=launch_line(win_req),
        workdir=Path.cwd(),
        output="slurm-%j.out",
        watch=tuneadvisor_command(),  # as `run --submit` writes it: the job records itself
    )
    write_atomic(job, text.encode())  # an InputError naming the file when it cannot
    summary = write_tune_summary(folder, result, {**extra, "job": str(job)})
    console.print(
        f"winner: {winner.describe()}; job script {job}; trials in {summary}", highlight=False
    )
    return 0
