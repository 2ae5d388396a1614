"""Closed-loop tuning: short trials over the knobs the findings point at, measured in
samples/s after a warm-up, repeated, stopping at the knee within a time budget.

Stages, each starting from the best so far: workers with cores (``--cpus-per-task`` and
``--num-workers`` together), then batch size, then mixed precision, then pinned memory (GPUs
only). A change is kept only when it beats the best so far by ``min_gain`` (5 %): advice that
does not pay off on the measured hardware is dropped, with the numbers that show it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tuneadvisor.files import write_atomic
from tuneadvisor.relaunch.allocation import available_cores
from tuneadvisor.relaunch.records import RunRecord
from tuneadvisor.relaunch.requests import RelaunchRequest
from tuneadvisor.relaunch.runner import RunRequest, run_local
from tuneadvisor.relaunch.settings import Settings, render_job_script
from tuneadvisor.relaunch.submit import launch_line
from tuneadvisor.relaunch.watcher import tuneadvisor_command

# knobs that only shape a trial; the winning job script leaves them out
TRIAL_ONLY = ("max_steps", "log_interval", "max_eval_batches", "epochs")


@dataclass(frozen=True)
class TuneOptions:
    budget_s: float = 300.0
    warmup_steps: int = 3
    measure_steps: int = 10
    repeats: int = 1
    min_gain: float = 0.05
    stages: tuple[str, ...] = ("workers", "batch", "amp", "pin")  # some of STAGES, in order
    max_cores: int | None = None  # default: the cores this process may use


STAGES = ("workers", "batch", "amp", "pin")


@dataclass(frozen=True)
class TuneRequest:
    """``tune``: the relaunch to tune, how the trials run, where the winning job goes."""

    relaunch: RelaunchRequest
    options: TuneOptions = field(default_factory=TuneOptions)
    output: str | None = None  # the winning job script (None: in the tune folder)


@dataclass(frozen=True)
class Trial:
    stage: str
    settings: Settings
    rates: tuple[float, ...]  # samples/s of each repeat (median of its measured steps)
    runs: tuple[str, ...]  # run ids
    ok: bool

    @property
    def rate(self) -> float | None:
        return statistics.median(self.rates) if self.rates else None

    def to_json(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "settings": self.settings.describe(),
            "cpus_per_task": self.settings.cpus_per_task,
            "knobs": dict(self.settings.knobs),
            "samples_per_s": self.rate,
            "repeats": list(self.rates),
            "runs": list(self.runs),
            "ok": self.ok,
        }


@dataclass
class TuneResult:
    base: Trial | None = None
    best: Trial | None = None
    trials: list[Trial] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)  # kept / dropped, with numbers
    stopped: str | None = None  # why it stopped early, if it did

    def to_json(self) -> dict[str, Any]:
        return {
            "base": self.base.to_json() if self.base else None,
            "best": self.best.to_json() if self.best else None,
            "gain": (self.best.rate / self.base.rate - 1.0)
            if self.best and self.base and self.best.rate and self.base.rate
            else None,
            "trials": [t.to_json() for t in self.trials],
            "decisions": self.decisions,
            "stopped": self.stopped,
        }


def measured_rate(record: RunRecord, warmup_steps: int) -> float | None:
    """Median samples/s of the steps after the warm-up."""
    steps = record.steps
    measured = [s for s in steps if s.step > warmup_steps] or steps[1:]
    rates = [float(s.samples_per_s) for s in measured if s.samples_per_s]
    return statistics.median(rates) if rates else None


def _why_cores(start: Trial, best: Trial, tried: Sequence[Trial]) -> str:
    """When only the cores changed, say so: the gain is compute threads, not the input
    pipeline, and what more workers gave on those cores."""
    workers = base_workers(start.settings)
    if base_workers(best.settings) != workers:
        return ""
    more = [
        t for t in tried
        if t.settings.cpus_per_task == best.settings.cpus_per_task
        and base_workers(t.settings) > workers and t.rate
    ]  # fmt: skip
    top = max(more, key=lambda t: t.rate or 0.0, default=None)
    said = (
        f"; more workers on those cores did not pay ({top.settings.describe()}: "
        f"{_pct(top.rate, best.rate)})"
        if top
        else ""
    )
    return f" with the same {workers} workers: the cores run PyTorch's compute threads{said}"


def _pct(new: float | None, old: float | None) -> str:
    if not new or not old:
        return "n/a"
    return f"{100.0 * (new / old - 1.0):+.1f} %"


def base_workers(settings: Settings) -> int:
    return int(str(settings.knobs.get("num_workers", settings.cpus_per_task)))


def worker_candidates(base: Settings, cores: int) -> list[tuple[int, int]]:
    """(cpus-per-task, workers) pairs in growing order, up to the cores there are: with c
    cores, the base's own workers (more cores alone: PyTorch's compute threads follow
    --cpus-per-task, so a CPU-bound run may gain from cores without any worker), c-1 workers
    leaving one core for the main process, and c workers oversubscribing by one."""
    here = (base.cpus_per_task, base_workers(base))
    pairs: list[tuple[int, int]] = []
    for c in range(1, max(1, cores) + 1):
        same = (here[1],) if c > here[0] else ()
        for w in (*same, c - 1, c):
            if (c, w) not in pairs:
                pairs.append((c, w))
    return [p for p in pairs if p != here]


class Tuner:
    def __init__(
        self,
        request: RunRequest,
        options: TuneOptions,
        *,
        on_trial: Callable[[Trial], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.request = request
        self.options = options
        self.on_trial = on_trial
        self.clock = clock
        self.result = TuneResult()
        self._started = clock()
        self._last_trial_s = 0.0

    def _trial_settings(self, settings: Settings) -> Settings:
        o = self.options
        return settings.with_knobs(
            max_steps=o.warmup_steps + o.measure_steps, log_interval=1, max_eval_batches=1,
            epochs=settings.knobs.get("epochs") or 1000,
        )  # fmt: skip

    def _time_left(self) -> bool:
        elapsed = self.clock() - self._started
        return elapsed + self._last_trial_s <= self.options.budget_s

    def trial(self, stage: str, settings: Settings) -> Trial | None:
        if not self._time_left():
            self.result.stopped = (
                f"time budget of {self.options.budget_s:g} s reached before the {stage} stage "
                "was done"
            )
            return None
        rates: list[float] = []
        runs: list[str] = []
        ok = True
        t0 = self.clock()
        for _ in range(self.options.repeats):
            # no sampler beside a trial: its start-up would land in the measured steps
            req = replace(
                self.request, settings=self._trial_settings(settings), profile=False,
                watch=False, label=f"tune {stage}: {settings.describe()}",
            )  # fmt: skip
            record = run_local(req)
            runs.append(record.id)
            rate = measured_rate(record, self.options.warmup_steps) if record.ok else None
            if rate is None:
                ok = False
                break
            rates.append(rate)
        self._last_trial_s = (self.clock() - t0) / max(1, len(runs))
        trial = Trial(stage, settings, tuple(rates), tuple(runs), ok)
        self.result.trials.append(trial)
        if self.on_trial is not None:
            self.on_trial(trial)
        return trial

    def _better(self, trial: Trial | None, best: Trial) -> bool:
        if trial is None or not trial.ok or trial.rate is None or best.rate is None:
            return False
        return trial.rate >= best.rate * (1.0 + self.options.min_gain)

    def run(self, advice: Mapping[str, object] | None = None) -> TuneResult:
        base_settings = self.request.settings
        base = self.trial("base", base_settings)
        if base is None or not base.ok:
            self.result.stopped = "the base run failed: nothing to tune against"
            return self.result
        self.result.base = base
        best = base
        stages = self.options.stages
        if "workers" in stages:
            best = self._workers(best)
        if "batch" in stages and self._time_left():
            best = self._one_change(best, "batch", self._batch_change(best.settings))
        if "amp" in stages and self._time_left():
            best = self._one_change(best, "amp", best.settings.with_knobs(amp=True))
        if "pin" in stages and self._time_left():
            if best.settings.gpus:
                best = self._one_change(best, "pin", best.settings.with_knobs(pin_memory=True))
            else:
                self.result.decisions.append(
                    "pinned memory: not tried, no GPU in this run (it only speeds up "
                    "host-to-GPU copies)"
                )
        self.result.best = best
        self._judge_advice(advice or {}, base, best)
        return self.result

    def _workers(self, best: Trial) -> Trial:
        cores = self.options.max_cores or len(available_cores())
        start = best
        misses = 0
        tried: list[Trial] = []
        for cpus, workers in worker_candidates(best.settings, cores):
            settings = replace(start.settings, cpus_per_task=cpus).with_knobs(num_workers=workers)
            trial = self.trial("workers", settings)
            if trial is None:
                break
            tried.append(trial)
            if self._better(trial, best):
                best, misses = trial, 0
            else:
                misses += 1
                if misses >= 2 and best is not start:  # past the knee
                    break
        if best is start:
            top = max((t for t in tried if t.rate), key=lambda t: t.rate or 0.0, default=None)
            self.result.decisions.append(
                f"workers and cores: kept {start.settings.describe()} "
                f"({start.rate:,.1f} samples/s); the best other setting, "
                + (
                    f"{top.settings.describe()}, gave {_pct(top.rate, start.rate)}"
                    if top
                    else "none ran"
                )
                + f", below the {100 * self.options.min_gain:.0f} % a change must gain"
            )
        else:
            self.result.decisions.append(
                f"workers and cores: {best.settings.describe()} gives "
                f"{best.rate:,.1f} samples/s, {_pct(best.rate, start.rate)} against "
                f"{start.settings.describe()}" + _why_cores(start, best, tried)
            )
        return best

    def _batch_change(self, settings: Settings) -> Settings:
        size = int(str(settings.knobs.get("batch_size") or 64))
        return settings.with_knobs(batch_size=size * 2)

    def _one_change(self, best: Trial, stage: str, settings: Settings) -> Trial:
        trial = self.trial(stage, settings)
        if trial is None:
            return best
        what = {
            "batch": f"batch size {settings.knobs.get('batch_size')}",
            "amp": "mixed precision",
            "pin": "pinned memory",
        }[stage]
        if self._better(trial, best):
            self.result.decisions.append(
                f"{what}: kept, {trial.rate:,.1f} against {best.rate:,.1f} samples/s "
                f"({_pct(trial.rate, best.rate)})"
                + (
                    " (a larger batch changes the optimization: check the accuracy)"
                    if stage == "batch"
                    else ""
                )
            )
            return trial
        self.result.decisions.append(
            f"{what}: dropped, "
            + (
                f"{trial.rate:,.1f} against {best.rate:,.1f} samples/s "
                f"({_pct(trial.rate, best.rate)})"
                if trial.ok
                else "the trial failed"
            )
        )
        return best

    def _judge_advice(self, advice: Mapping[str, object], base: Trial, best: Trial) -> None:
        """Say, with numbers, which of the report's suggestions the measurements bore out."""
        for key, value in advice.items():
            if key == "cpus_per_task":
                have: object = best.settings.cpus_per_task
            else:
                have = best.settings.knobs.get(key)
            if have == value:
                continue
            similar = [
                t
                for t in self.result.trials
                if (
                    t.settings.cpus_per_task
                    if key == "cpus_per_task"
                    else t.settings.knobs.get(key)
                )
                == value
                and t.rate
            ]
            if similar:
                top = max(similar, key=lambda t: t.rate or 0.0)
                self.result.decisions.append(
                    f"advice {key} = {value}: dropped, its best trial gave {top.rate:,.1f} "
                    f"samples/s against {best.rate:,.1f} for {best.settings.describe()}"
                )
            else:
                self.result.decisions.append(
                    f"advice {key} = {value}: not tried on this machine (out of its cores or "
                    "the time budget)"
                )


def winning_settings(result: TuneResult) -> Settings | None:
    if result.best is None:
        return None
    settings = result.best.settings
    knobs = {k: v for k, v in settings.knobs.items() if k not in TRIAL_ONLY}
    return replace(settings, knobs=knobs)


def write_tune_summary(folder: Path, result: TuneResult, extra: Mapping[str, Any]) -> Path:
    import json

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tune.json"
    path.write_text(json.dumps({**extra, **result.to_json()}, indent=2, default=str) + "\n")
    return path


def summary_lines(result: TuneResult) -> Sequence[str]:
    lines = [*result.decisions]
    if result.stopped:
        lines.append(f"stopped: {result.stopped}")
    return lines


def advice_to_judge(settings: Settings) -> dict[str, object]:
    """What the advice set (the knobs it gave a reason for, and its cores): the trials say
    whether it paid off on this machine."""
    advice: dict[str, object] = {k: v for k, v in settings.knobs.items() if k in settings.because}
    if any(k.startswith("sbatch.cpus-per-task") for k in settings.because):
        advice["cpus_per_task"] = settings.cpus_per_task
    return advice


def write_winning_job(req: RunRequest, winner: Settings, job: Path) -> None:
    """The winner as a job script, as ``run --submit`` writes it (the job records itself);
    an InputError naming the file when it cannot be written."""
    text = render_job_script(
        winner,
        name=req.spec.name,
        launch=launch_line(replace(req, settings=winner)),
        workdir=Path.cwd(),
        output="slurm-%j.out",
        watch=tuneadvisor_command(),
    )
    write_atomic(job, text.encode())
