"""``tuneadvisor run NAME [SETTINGS]``: relaunch a bundled training script with explicit
settings or with a report's advice, here (emulated allocation) or through sbatch.

Only argparse is imported at start-up; the launch machinery loads when the command runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tuneadvisor.commands.inputs import add_inputs, has_inputs, inputs_of, seconds
from tuneadvisor.commands.relaunch_options import add_settings_arguments, relaunch_request
from tuneadvisor.errors import EXIT_INTERRUPTED
from tuneadvisor.files import is_regular_file
from tuneadvisor.numbers import is_finite_number

if TYPE_CHECKING:
    from rich.console import Console

    from tuneadvisor.relaunch.records import RunRecord
    from tuneadvisor.relaunch.requests import RelaunchRequest
    from tuneadvisor.relaunch.runner import RunRequest
    from tuneadvisor.relaunch.settings import Settings

EXIT_RUN_FAILED = 1
PROFILERS = ("line", "torch")
BUNDLED_NAMES = "mnist_single, mnist_ddp, mnist_torchrun, cifar100_wrn"
HELP = "relaunch a bundled training script (here, or with --submit through sbatch)"
DESCRIPTION = (
    "Run a bundled training script with explicit settings or with the advice "
    "of a report (--from REPORT.json, or the same inputs as `report`). Runs are recorded "
    "in the runs folder."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME", help="bundled script: " + BUNDLED_NAMES)
    add_settings_arguments(parser, submit=True)
    parser.add_argument("--label", help="a name for this run in comparisons")
    parser.add_argument(
        "--profile",
        nargs="?",
        const="line",
        choices=PROFILERS,
        metavar="line|torch",
        help="line (the default): run under kernprof -l, one .lprof per rank; torch: "
        "torch.profiler traces of a few steps (wait 1, warmup 1, active 3), one .pt.trace.json.gz "
        "per rank; either is recorded with the run (one profiler at a time: each would time "
        "the other)",
    )
    parser.add_argument(
        "--no-watch",
        dest="watch",
        action="store_false",
        help="do not sample the run with `tuneadvisor watch` (no metrics.jsonl)",
    )
    parser.add_argument(
        "--max-restarts", type=int, default=0, metavar="N", help="torchrun: elastic restarts"
    )
    parser.add_argument("--submit", action="store_true", help="submit through sbatch instead")
    parser.add_argument(
        "--wait",
        type=seconds,
        metavar="S",
        help="with --submit: wait up to S seconds for the job, then record its results",
    )
    add_inputs(parser)


class ProgressView:
    """A rich progress bar fed by the training's progress events (stderr, terminals only);
    elsewhere one plain line per epoch."""

    def __init__(self, console: Console, label: str, settings: Settings, live: bool) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )
        from rich.table import Column

        self.console = console
        self.settings = settings
        self.live = live
        # fits 100 columns: the name, a short bar, and the last logged step's rate named as
        # such (the run's own figure is its steady window's, in its last line)
        self.progress = Progress(
            TextColumn("[bold]{task.description}", table_column=Column(max_width=24)),
            BarColumn(bar_width=20),
            MofNCompleteColumn(),
            TextColumn("steps · last {task.fields[rate]} samples/s · loss {task.fields[loss]}"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
            disable=not live,
            # the time left needs two updates within the period: a slow CPU run logs every
            # 40 s or more (10 steps of 4 s), and rich's 30 s showed -:--:-- to its end
            speed_estimate_period=600.0,
        )
        self.task = self.progress.add_task(label, total=None, rate="-", loss="-")
        self._trained = 0  # steps of the epochs ended: the bar's count at an epoch's end

    def __enter__(self) -> ProgressView:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def __call__(self, event: Mapping[str, Any]) -> None:
        from tuneadvisor.relaunch.runner import expected_steps

        kind = event.get("event")
        if kind == "start":
            self.progress.update(self.task, total=expected_steps(event, self.settings))
        elif kind == "step":
            # the training program's own line: a step or loss of any JSON type shows as "-"
            rate, step, loss = event.get("samples_per_s"), event.get("step"), event.get("loss")
            self.progress.update(
                self.task,
                completed=int(step) if is_finite_number(step) else 0,
                rate=f"{rate:,.0f}" if is_finite_number(rate) else "-",
                loss=f"{loss:.4f}" if is_finite_number(loss) else "-",
            )
        elif kind in ("epoch", "end"):
            # the steps after the last logged one: an epoch's end counts them (the bar
            # stopped at 91 of 100 steps where the events log every 10)
            steps = event.get("steps")
            if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0:
                self._trained = steps if kind == "end" else self._trained + steps
                self.progress.update(self.task, completed=self._trained)
        if kind == "epoch":
            said = event.get("accuracy")  # null where nothing was evaluated (the test mode)
            accuracy = f"{100 * float(said):.1f} %" if isinstance(said, int | float) else "-"
            line = (
                f"epoch {event.get('epoch')}: accuracy {accuracy}"
                f", test loss {event.get('test_loss')}" + _epoch_rate(event.get("samples_per_s"))
            )
            if self.live:
                self.progress.console.print(line)
            else:
                self.console.print(line, highlight=False)
        elif kind in ("resume", "killed"):
            self.console.print(f"{kind}: {dict(event)}", highlight=False)


def _epoch_rate(rate: object) -> str:
    """An epoch's own rate, named as such: the run's figure is its steady window's."""
    if not isinstance(rate, int | float) or isinstance(rate, bool):
        return ""
    return f", this epoch {rate:,.1f} samples/s"


def _step_ms(step_s: float | None) -> str:
    if not step_s:
        return " (after the warm-up)"
    return f" (step {1000 * step_s:,.1f} ms, after the warm-up)"


def print_record(console: Console, record: RunRecord, said: Sequence[str] = ()) -> None:
    """The run's last lines: its figures, where its files are, and its notes but those in
    ``said`` (the settings' notes, said before the run: once is enough)."""
    s = record.summary
    rate = record.samples_per_s
    console.print(
        f"[bold]{record.id}[/]: {record.status}, "
        f"{record.describe()}; "
        + (f"{rate:,.1f} samples/s{_step_ms(record.step_s)}, " if rate else "")
        + (
            f"final accuracy {100 * s.final_accuracy:.1f} %, "
            if s.final_accuracy is not None
            else ""
        )
        + f"record {record.path}",
        highlight=False,
        soft_wrap=True,
    )
    used = record.sampled
    if used.get("cores_used") is not None:
        settings = record.settings
        console.print(
            f"  used: {used['cores_used']:.2f} cores on average"
            + (f" (p95 {used['cores_used_p95']:.2f})" if "cores_used_p95" in used else "")
            + f" of {settings.ntasks * settings.cpus_per_task} asked"
            + (f", peak RSS {used['max_rss_mib']:,.0f} MiB" if "max_rss_mib" in used else "")
            + (f", GPU {used['gpu_util_pct']:.0f} %" if "gpu_util_pct" in used else ""),
            highlight=False,
            soft_wrap=True,
        )
    profiles = [str(p) for p in record.profile_paths() if is_regular_file(p)]
    if len(profiles) > 1:
        console.print(
            f"  profiles (one per rank): tuneadvisor report {' '.join(profiles)}",
            highlight=False,
            soft_wrap=True,
        )
    traces = [str(p) for p in record.trace_paths() if p.is_file()]
    if traces:
        console.print(
            f"  torch.profiler traces: tuneadvisor report {' '.join(traces)}",
            highlight=False,
            soft_wrap=True,
        )
    _print_prediction(console, record)
    for note in record.notes:
        if note not in said:
            console.print(f"  note: {note}", highlight=False, soft_wrap=True)


def _print_prediction(console: Console, record: RunRecord) -> None:
    """The report's prediction against this run's steady steps, and why it missed."""
    from tuneadvisor.relaunch.predicted import FINDING_ID, check

    result = check(record)
    if result is None or result.step_s is None:
        return
    span, measured = result.prediction.step_s, result.step_s
    console.print(
        f"  predicted {1000 * span.low:.1f}-{1000 * span.high:.1f} ms a step; measured "
        f"{1000 * measured.value:.1f} ms +-{100 * measured.spread:.0f} % "
        f"({result.verdict()})",
        highlight=False,
        soft_wrap=True,
    )
    finding = result.finding()
    if finding is not None:
        console.print(f"  {FINDING_ID}: {finding}", highlight=False, soft_wrap=True)


def run_request(args: argparse.Namespace) -> RelaunchRequest:
    """The request of ``run``: the shared options, the inputs whose advice it takes (when
    any are given), and how this run is made and recorded."""
    from dataclasses import replace

    inputs = inputs_of(args) if has_inputs(args) else None
    return replace(
        relaunch_request(args),
        inputs=inputs,
        label=args.label,
        profile=args.profile == "line",
        torch_profile=args.profile == "torch",
        watch=args.watch,
        submit=args.submit,
        max_restarts=args.max_restarts,
    )


def run(args: argparse.Namespace) -> int:
    request = run_request(args)
    from rich.console import Console

    from tuneadvisor.relaunch.requests import resolve_run
    from tuneadvisor.relaunch.runner import run_local, stderr_tail

    console = Console(stderr=True)
    req = resolve_run(request)
    req = _as_the_job_runs(req)
    for note in req.settings.notes:
        console.print(f"note: {note}", highlight=False)
    if request.submit:
        return _submit(req, args.wait, console)
    live = not args.no_progress and console.is_terminal
    from tuneadvisor.relaunch.local_allocation import describe_here, gpus_here

    # as the run will have them here: no "1 gpu" before a run on a machine without one
    label = request.label or f"{req.spec.name} ({describe_here(req.settings, gpus_here())})"
    if live:  # the settings once above the bar: in it they cut the bar at 100 columns
        console.print(label, highlight=False, soft_wrap=True)
    with ProgressView(console, request.label or req.spec.name, req.settings, live) as view:
        record = run_local(req, on_event=view)
    print_record(Console(), record, said=req.settings.notes)
    if record.interrupted:
        # Ctrl-C: the tasks' own KeyboardInterrupt tracebacks stay in their logs
        print(f"tuneadvisor: run {record.id} interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if not record.ok:
        tail = stderr_tail(record)
        print(f"tuneadvisor: run {record.id} {record.status}", file=sys.stderr)
        if tail:
            print(tail, file=sys.stderr)
        return EXIT_RUN_FAILED
    return 0


def _as_the_job_runs(req: RunRequest) -> RunRequest:
    """The run as long as the bundled job's (its ``--epochs``) unless told otherwise: the
    training script's own default is far longer (``tune`` sets its trials' length itself)."""
    from dataclasses import replace

    from tuneadvisor.relaunch.bundled import as_the_job_runs

    knobs = as_the_job_runs(req.spec, req.settings.knobs)
    return replace(req, settings=replace(req.settings, knobs=knobs))


def _submit(req: RunRequest, wait_s: float | None, console: Console) -> int:
    from rich.console import Console

    from tuneadvisor.relaunch.submit import complete_from_output, submitted_record, write_submission
    from tuneadvisor.slurm.client import SlurmClient

    client = SlurmClient()
    run_id, run_dir, job = write_submission(req)
    job_id = client.submit(job, chdir=str(run_dir.resolve()))
    record = submitted_record(req, run_id, run_dir, job, job_id)
    print(f"Submitted batch job {job_id}; record {record.path}")
    if wait_s:
        info = client.wait_finished(job_id, wait_s)
        state = getattr(info, "state", None) if info is not None else None
        acct = client.poll_accounting(job_id) if client.which("sacct") else None
        state = getattr(acct, "state", None) or state
        record = complete_from_output(record, str(state) if state else None)
        print_record(Console(), record, said=req.settings.notes)
        return 0 if record.ok else EXIT_RUN_FAILED
    return 0
