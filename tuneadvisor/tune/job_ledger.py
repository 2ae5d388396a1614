"""The ledger of a tune of the user's own job: each task's probe file read into samples/s,
the settings' repeats pooled, each judged against the start (``gain.judge``: kept only beyond
both spreads), and a task that wrote no probe said why from its log (the job-log reader)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tuneadvisor.errors import InputError
from tuneadvisor.files import load_json_input
from tuneadvisor.runrecord.probe import parse_probe
from tuneadvisor.slurm.joblog.scan import scan_logs
from tuneadvisor.tune.gain import Rate, Verdict, judge
from tuneadvisor.tune.job_grid import JobSetting


@dataclass(frozen=True)
class TaskResult:
    task: int
    setting: JobSetting
    rates: tuple[float, ...]  # samples/s per measured window; () when the task failed
    host: str | None = None
    failed: str | None = None  # why, from its log


@dataclass(frozen=True)
class SettingResult:
    setting: JobSetting
    tasks: tuple[TaskResult, ...]
    rate: Rate | None  # None when no task of it measured anything
    verdict: Verdict | None = None  # against the start; None for the start itself

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(sorted({t.host for t in self.tasks if t.host}))


def read_task(folder: Path, task: int, setting: JobSetting) -> TaskResult:
    """Task ``task``'s probe file, or why it has none (its log's causes, else its last line)."""
    probe = folder / f"probe-{task}.json"
    if probe.is_file():
        try:
            data = load_json_input(probe, "probe file")
            read = parse_probe(data, probe)
        except InputError as exc:
            return TaskResult(task, setting, (), failed=str(exc))
        rates = tuple(read.batch_size / s for s in read.loop_step_s if s > 0)
        host = data.get("host") if isinstance(data.get("host"), str) else None
        return TaskResult(task, setting, rates, host=host)
    return TaskResult(task, setting, (), failed=_why(folder / f"task-{task}.out"))


def _why(log: Path) -> str:
    if not log.is_file():
        return f"no probe file and no log ({log.name}): the task did not run"
    found = scan_logs([log]).found
    if found:
        return "; ".join(s.quote() for s in found.values())
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError as exc:
        return f"no probe file; {log} unreadable ({exc.strerror})"
    last = "".join(c if c.isprintable() else " " for c in lines[-1])[:200] if lines else ""
    return f"no probe file (no DataLoader batches timed); {log.name} ends: {last or '(empty)'}"


def pooled(tasks: Sequence[TaskResult]) -> Rate | None:
    """Each repeat's median over its windows; the setting's median over its repeats. Its
    spread, relative to that median, is the larger of half the range of the repeats' medians
    (a repeat that ran slower) and the typical repeat's half range of its windows (steps that
    vary within a run): repeats that agree by chance do not hide windows that do not."""
    runs = [(statistics.median(t.rates), t.rates) for t in tasks if t.rates]
    if not runs:
        return None
    median = statistics.median(m for m, _ in runs)
    between = (max(m for m, _ in runs) - min(m for m, _ in runs)) / 2
    within = statistics.median((max(r) - min(r)) / 2 for _, r in runs)
    return Rate(median, max(between, within) / median)


def ledger(
    tasks: Sequence[TaskResult], settings: Sequence[JobSetting], min_gain: float
) -> tuple[SettingResult, ...]:
    """Each setting (the start first) with its pooled rate and its verdict against the start."""
    results = []
    for setting in settings:
        mine = tuple(t for t in tasks if t.setting == setting)
        results.append(SettingResult(setting, mine, pooled(mine)))
    start = results[0].rate
    if start is None:
        return tuple(results)
    return (
        results[0],
        *(
            SettingResult(
                r.setting, r.tasks, r.rate, judge(start, r.rate, min_gain) if r.rate else None
            )
            for r in results[1:]
        ),
    )


def winner(results: Sequence[SettingResult]) -> SettingResult | None:
    """The fastest setting whose gain over the start is beyond both spreads; None when no
    change is (the start stays: a change within the noise is never written)."""
    kept = [r for r in results[1:] if r.verdict is not None and r.verdict.kept and r.rate]
    return max(kept, key=lambda r: r.rate.median if r.rate else 0.0, default=None)
