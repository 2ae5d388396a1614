"""``tuneadvisor tune --job JOBSCRIPT``: the request from the arguments, the progress line on
stderr, and the ledger (text or JSON) on stdout."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from tuneadvisor.errors import InputError

if TYPE_CHECKING:
    from tuneadvisor.tune.job_grid import JobSetting
    from tuneadvisor.tune.job_ledger import SettingResult
    from tuneadvisor.tune.job_tune import JobTuneRequest, JobTuneResult

MAX_STEPS = 100_000
MAX_REPEATS = 20
MAX_BUDGET_MIN = 43_200  # 30 days: a queue that waits longer is not waiting for a tune


def job_request(args: argparse.Namespace) -> JobTuneRequest:
    from tuneadvisor.tune.job_tune import JobTuneRequest

    if args.name is not None:
        raise InputError(None, "tune: give a bundled script's NAME or --job JOBSCRIPT, not both")
    steps = 30 if args.steps is None else args.steps
    repeats = 2 if args.repeats is None else args.repeats
    if not 3 <= steps <= MAX_STEPS:
        raise InputError(
            None, f"--steps: from 3 to {MAX_STEPS} with --job (the probe times 3 windows)"
        )
    if not 1 <= repeats <= MAX_REPEATS:
        raise InputError(None, f"--repeats: from 1 to {MAX_REPEATS}")
    minutes = 30.0 if args.budget is None else args.budget
    if not 0 < minutes <= MAX_BUDGET_MIN:
        raise InputError(
            None,
            f"--budget: minutes with --job (the wait for the array), above 0 and up to "
            f"{MAX_BUDGET_MIN} (30 days), not {minutes:g}",
        )
    return JobTuneRequest(
        job=args.job, steps=steps, repeats=repeats, budget_s=60.0 * minutes,
        min_gain=args.min_gain / 100.0, output=args.output, force=args.force,
        submit_winner=args.submit_winner, spread=args.spread, early=not args.sweep,
    )  # fmt: skip


def run_job(args: argparse.Namespace) -> int:
    from tuneadvisor.present.terminal_safe import terminal_safe
    from tuneadvisor.slurm.client import SlurmClient
    from tuneadvisor.tune.job_tune import tune_job

    request = job_request(args)

    def progress(line: str) -> None:
        print(terminal_safe(line), file=sys.stderr, flush=True)

    client = SlurmClient()
    result = tune_job(request, client, progress)
    when = _time_to_result(result, request, client)
    if args.format == "json":
        json.dump({**as_json(result), "time_to_result": _when_json(when)}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for line in [*ledger_lines(result), *_when_lines(when)]:
            print(terminal_safe(line))
    return 0


if TYPE_CHECKING:  # the ledger's time to result, in the functions below
    from tuneadvisor.slurm.client import SlurmClient
    from tuneadvisor.workspace.time_to_result import TimeToResult


def _time_to_result(
    result: JobTuneResult, request: JobTuneRequest, client: SlurmClient
) -> TimeToResult:
    """The job as written and the winner written: when each would start and end."""
    from pathlib import Path

    from tuneadvisor.tune.job_finish import ledger_time_to_result
    from tuneadvisor.workspace.apply import tuned_name

    job = Path(request.job)
    out = Path(request.output) if request.output else tuned_name(job)
    return ledger_time_to_result(result, job, out if result.best is not None else None, client)


def _when_lines(when: TimeToResult) -> list[str]:
    from tuneadvisor.present.time_to_result import time_to_result_lines

    missing = tuple(item.why for item in when.not_read)
    return time_to_result_lines(
        when.steps, when.now, when.tuned, when.verdict, missing, tuned_label="winner"
    )


def _when_json(when: TimeToResult) -> dict[str, Any]:
    from tuneadvisor.present.time_to_result import time_to_result_json

    not_known = [item.why for item in when.not_read]
    return time_to_result_json(
        when.steps, when.now, when.tuned, when.verdict, not_known, tuned_key="winner"
    )


def _setting(r: SettingResult) -> str:
    return r.setting.describe()


def _rate(r: SettingResult) -> str:
    if r.rate is None:
        return "failed"
    return f"{r.rate.median:,.1f} +-{100 * r.rate.spread:.1f} %"


def _predicted(result: JobTuneResult, r: SettingResult) -> str:
    p = result.prediction
    if p is None or p.samples_per_s is None or result.grid.predicted != r.setting:
        return "-"
    s = p.samples_per_s
    return f"{s.low:,.0f}-{s.high:,.0f}"


def _verdict(result: JobTuneResult, r: SettingResult) -> str:
    if r is result.results[0]:
        return "start (the job as written)"
    if r.rate is None or r.verdict is None:
        return "no measurement"
    if r is result.best:
        return f"{100 * r.verdict.gain:+.1f} %: kept (the winner)"
    if r.verdict.kept:
        return f"{100 * r.verdict.gain:+.1f} %: beyond the noise, not the fastest"
    return r.verdict.why()


def ledger_lines(result: JobTuneResult) -> list[str]:
    from tuneadvisor.tune.job_tune import WORKERS_HOW

    lines = [
        f"job array {result.job_id}: {result.plan.tasks} trials of {result.plan.steps} steps "
        f"({len(result.grid.settings)} settings x {result.plan.repeats} repeats, interleaved, "
        + (
            f"{result.plan.parallel} at a time, one per node: --exclusive"
            if result.plan.parallel > 1
            else "one at a time: %1"
        )
        + "); trials in "
        + str(result.folder),
    ]
    if result.start_estimate:
        lines.append(f"at submission, sbatch --test-only said: {result.start_estimate}")
    lines.append(WORKERS_HOW)
    for why in result.grid.left_out:
        lines.append(f"left out: {why}")
    rows = [("setting", "samples/s", "predicted", "node", "verdict")]
    for r in result.results:
        rows.append((_setting(r), _rate(r), _predicted(result, r), ",".join(r.hosts) or "-",
                     _verdict(result, r)))  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        lines.append(
            "  ".join(c.ljust(w) for c, w in zip(row[:4], widths, strict=True)) + "  " + row[4]
        )
    for task in result.tasks:
        if task.failed:
            lines.append(f"trial {task.task} ({task.setting.describe()}) failed: {task.failed}")
    lines += _decision_lines(result)
    if result.best is None:
        lines.append("no change beats the start beyond both spreads: nothing written")
    else:
        lines.append(f"winner: {result.best.setting.describe()}")
    lines += list(result.written)
    if result.winner_job_id:
        lines.append(f"submitted batch job {result.winner_job_id}")
    lines += [f"note: {n}" for n in result.notes]
    return lines


def _decision_lines(result: JobTuneResult) -> list[str]:
    """How many trials the decision took, and why each setting got no more runs."""
    o, planned = result.outcome, result.plan.tasks
    if o is None:
        return []
    left = len(o.cancelled) + len(o.stopped)
    stopped = f", {len(o.stopped)} of them stopped while running" if o.stopped else ""
    if o.decided:
        lines = [f"decided after {o.started} of {planned} trials: {o.decided}; "
                 f"the {left} left cancelled{stopped}"]  # fmt: skip
    elif not o.early:
        lines = [f"every trial ran: {o.started} of {planned} (a plain sweep)"]
    elif left:
        lines = [f"{o.started} of {planned} trials ran, {left} cancelled{stopped}"]
    else:
        lines = [f"no early decision: all {planned} trials ran (settings within the noise)"]
    lines += [f"not repeated: {s.describe()}: {why}" for s, why in _not_repeated(result)]
    return lines


def _not_repeated(result: JobTuneResult) -> list[tuple[JobSetting, str]]:
    """Each setting given fewer runs than planned, and why."""
    o = result.outcome
    if o is None:
        return []
    found = list(o.not_repeated.items())
    if o.decided and result.best is not None:
        for r in result.results[1:]:
            runs = sum(1 for t in r.tasks if t.rates)
            if r is not result.best and r.setting not in o.not_repeated and r.rate:
                found.append((r.setting, f"within the noise of the winner after {runs} "
                                         f"run{'s' if runs != 1 else ''}"))  # fmt: skip
    return found


def as_json(result: JobTuneResult) -> dict[str, Any]:
    trials = []
    for task in result.tasks:
        mine = next(r for r in result.results if r.setting == task.setting)
        trials.append({
            "array_task_id": task.task,
            "setting": task.setting.as_json(),
            "node": task.host,
            "samples_per_s": (
                {"median": mine.rate.median, "spread": mine.rate.spread} if mine.rate else None
            ),
            "task_samples_per_s": list(task.rates),
            "predicted_samples_per_s": (
                result.prediction.samples_per_s.as_json()
                if result.prediction and result.prediction.samples_per_s
                and result.grid.predicted == task.setting else None
            ),
            "failed": task.failed,
        })  # fmt: skip
    return {
        "job_id": result.job_id,
        "folder": str(result.folder),
        "start": result.grid.start.as_json(),
        "left_out": list(result.grid.left_out),
        "start_estimate": result.start_estimate or None,
        "trials": trials,
        "winner": result.best.setting.as_json() if result.best else None,
        "written": list(result.written),
        "winner_job_id": result.winner_job_id,
        "decision": _decision_json(result),
    }


def _decision_json(result: JobTuneResult) -> dict[str, Any] | None:
    o = result.outcome
    if o is None:
        return None
    return {
        "early": o.early,
        "trials_planned": result.plan.tasks,
        "trials_started": o.started,
        "cancelled": list(o.cancelled),
        "stopped_while_running": list(o.stopped),
        "why": o.decided,
        "not_repeated": [{"setting": s.as_json(), "why": why} for s, why in _not_repeated(result)],
        "wall_s": round(o.wall_s, 1),
    }
