"""Closed-loop tuning: short trials over the knobs the findings point at, measured in
samples/s after a warm-up, repeated, stopping at the knee within a time budget.

Stages, each starting from the best so far: workers with cores (``--cpus-per-task`` and
``--num-workers`` together), then batch size, then mixed precision, then pinned memory (GPUs
only). A change is kept only when it beats the best so far by ``min_gain`` (5 %) and by
more than the measured spread of both (tune/gain.py): advice that does not pay off on
the measured hardware, or whose gain is within the noise, is dropped, with the numbers.

Given a prediction (the report's, ``--from REPORT``), the workers stage starts at its
setting and tries one step either side of it instead of walking up from the start; that
trial's record keeps the prediction beside its measurement.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tuneadvisor.advisor.prediction import Prediction
from tuneadvisor.files import write_atomic
from tuneadvisor.relaunch.local_allocation import available_cores, describe_here, gpus_here
from tuneadvisor.relaunch.predicted import check
from tuneadvisor.relaunch.records import RunRecord
from tuneadvisor.relaunch.requests import RelaunchRequest
from tuneadvisor.relaunch.runner import RunRequest, run_local
from tuneadvisor.relaunch.settings import Settings, render_job_script
from tuneadvisor.relaunch.submit import launch_line
from tuneadvisor.relaunch.watcher import tuneadvisor_command
from tuneadvisor.runrecord.window import Window
from tuneadvisor.runrecord.window import steady_window as window_of
from tuneadvisor.tune.gain import Rate, Verdict, judge


def _here(settings: Settings) -> str:
    """The settings as a trial here has them: no "1 gpu" on a machine without one."""
    return describe_here(settings, gpus_here())


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
    rates: tuple[float, ...]  # samples/s of each repeat (over its steady window)
    runs: tuple[str, ...]  # run ids
    ok: bool
    spread: float = 0.0  # relative: of the steady steps and of the repeats (trial_spread)
    accuracy: float | None = None  # test accuracy after the trial's steps (its last repeat)

    @property
    def rate(self) -> float | None:
        return statistics.median(self.rates) if self.rates else None

    @property
    def measured(self) -> Rate | None:
        rate = self.rate
        return Rate(rate, self.spread) if rate else None

    @property
    def rate_range(self) -> tuple[float, float] | None:
        """Lowest and highest samples/s over its repeats; None with fewer than two (one run
        has no spread over repeats, only that of its own steady steps)."""
        return (min(self.rates), max(self.rates)) if len(self.rates) > 1 else None

    def to_json(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "settings": self.settings.describe(),
            "cpus_per_task": self.settings.cpus_per_task,
            "knobs": dict(self.settings.knobs),
            "samples_per_s": self.rate,
            "repeats": list(self.rates),
            "range": list(self.rate_range) if self.rate_range else None,  # min, max
            "spread": self.spread,
            "accuracy": self.accuracy,
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
    skipped: list[str] = field(default_factory=list)  # stages not run: out of the budget
    cut_short: list[str] = field(default_factory=list)  # stages the budget ended midway
    repeats: int = 1  # runs per setting
    prediction: Prediction | None = None  # what the trials started from, if anything
    predicted: dict[str, Any] | None = None  # that setting's trial against it (predicted.py)
    # the started-from report's cores and workers, kept in the job where this machine had
    # fewer cores than they need (the trials could not measure them)
    kept_shape: dict[str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "prediction": self.prediction.as_json() if self.prediction else None,
            "predicted_check": self.predicted,
            "base": self.base.to_json() if self.base else None,
            "best": self.best.to_json() if self.best else None,
            "gain": (self.best.rate / self.base.rate - 1.0)
            if self.best and self.base and self.best.rate and self.base.rate
            else None,
            "trials": [t.to_json() for t in self.trials],
            "decisions": self.decisions,
            "stopped": self.stopped,
            "skipped": self.skipped,
            "cut_short": self.cut_short,
            "repeats": self.repeats,
            "kept_shape": self.kept_shape,
        }


# a winner whose accuracy after its trial is this much (absolute) below the base's is flagged
ACCURACY_DROP = 0.05


def steady_window(record: RunRecord, warmup_steps: int) -> Window | None:
    """Samples over seconds of the steps after the warm-up (the steady-state window), with
    the spread of its blocks (relaunch/window.py: not the median of per-step rates, which
    follows the fast steps of bursty workers): the figure every command prints for the run."""
    return window_of(record.steps, warmup_steps)


def measured_rate(record: RunRecord, warmup_steps: int) -> float | None:
    """Samples/s over the steps after the warm-up."""
    found = steady_window(record, warmup_steps)
    return found.samples_per_s if found is not None else None


def trial_spread(windows: Sequence[Window]) -> float:
    """A trial's relative spread: the larger of its repeats' own (their blocks') and of how
    far the repeats disagree (the half-range of their rates): a setting measured once is as
    noisy as its window, one measured several times as noisy as its repeats disagree."""
    if not windows:
        return 0.0
    rates = [w.samples_per_s for w in windows]
    middle = statistics.median(rates)
    between = (max(rates) - min(rates)) / 2 / middle if len(rates) > 1 else 0.0
    return max(max(w.spread for w in windows), between)


def setting_pair(settings: Settings) -> tuple[int, int]:
    return settings.cpus_per_task, base_workers(settings)


def predicted_candidates(
    base: Settings, setting: Mapping[str, int], cores: int
) -> list[tuple[int, int]]:
    """(cpus-per-task, workers) pairs around the prediction's setting: the setting itself
    first, then one step either side (a worker more or fewer on its cores; a core more or
    fewer with a worker alongside), within the cores there are."""
    c = min(max(1, setting.get("cpus_per_task", base.cpus_per_task)), max(1, cores))
    w = max(0, setting.get("num_workers", base_workers(base)))
    around = [(c, w), (c, w - 1), (c, w + 1), (c - 1, w - 1), (c + 1, w + 1)]
    pairs: list[tuple[int, int]] = []
    for cpus, workers in around:
        if 1 <= cpus <= cores and 0 <= workers <= cpus and (cpus, workers) not in pairs:
            pairs.append((cpus, workers))
    return [p for p in pairs if p != setting_pair(base)]


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
        f"; more workers on those cores did not pay ({_here(top.settings)}: "
        f"{_pct(top.rate, best.rate)})"
        if top
        else ""
    )
    same = f"{workers} worker{'' if workers == 1 else 's'}"
    return f" with the same {same}: the cores run PyTorch's compute threads{said}"


def _spread(trial: Trial) -> str:
    return f" +-{100 * trial.spread:.1f} %" if trial.spread else ""


def _aims_at_workers(prediction: Prediction | None) -> dict[str, int] | None:
    """The prediction's workers and cores, when it sets either."""
    if prediction is None:
        return None
    aimed = {k: v for k, v in prediction.setting.items() if k in ("cpus_per_task", "num_workers")}
    return aimed or None


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

    def trial(
        self, stage: str, settings: Settings, prediction: Prediction | None = None
    ) -> Trial | None:
        if not self._time_left():
            ran = any(t.stage == stage for t in self.result.trials)
            cut = self.result.cut_short if ran else self.result.skipped
            if stage not in cut:
                cut.append(stage)
            return None
        rates: list[float] = []
        windows: list[Window] = []
        runs: list[str] = []
        ok = True
        accuracy: float | None = None
        t0 = self.clock()
        for _ in range(self.options.repeats):
            # no sampler beside a trial: its start-up would land in the measured steps
            req = replace(
                self.request, settings=self._trial_settings(settings), profile=False,
                watch=False, label=f"tune {stage}: {_here(settings)}",
                prediction=prediction,
            )  # fmt: skip
            record = run_local(req)
            if record.interrupted:  # Ctrl-C: tuning stops here, no trial counted, no winner
                raise KeyboardInterrupt
            runs.append(record.id)
            steady = steady_window(record, self.options.warmup_steps) if record.ok else None
            if steady is None:
                ok = False
                break
            windows.append(steady)
            rates.append(steady.samples_per_s)
            accuracy = record.summary.final_accuracy
            if prediction is not None and self.result.predicted is None:
                found = check(record, warmup=self.options.warmup_steps)
                self.result.predicted = found.as_json() if found is not None else None
        self._last_trial_s = (self.clock() - t0) / max(1, len(runs))
        trial = Trial(
            stage, settings, tuple(rates), tuple(runs), ok, trial_spread(windows), accuracy
        )
        self.result.trials.append(trial)
        if self.on_trial is not None:
            self.on_trial(trial)
        return trial

    def _verdict(self, trial: Trial | None, best: Trial) -> Verdict | None:
        new = trial.measured if trial is not None and trial.ok else None
        old = best.measured
        return judge(old, new, self.options.min_gain) if new and old else None

    def _better(self, trial: Trial | None, best: Trial) -> bool:
        verdict = self._verdict(trial, best)
        return verdict is not None and verdict.kept

    def run(
        self, advice: Mapping[str, object] | None = None, prediction: Prediction | None = None
    ) -> TuneResult:
        """The stages; with ``prediction`` (a report's), workers start at its setting."""
        self.result.prediction = prediction
        self.result.repeats = self.options.repeats
        base_settings = self.request.settings
        base = self.trial("base", base_settings)
        if base is None or not base.ok:
            self.result.stopped = (
                f"time budget of {self.options.budget_s:g} s: no time for the base run"
                if base is None
                else "the base run failed: nothing to tune against"
            )
            return self.result
        self.result.base = base
        best = base
        stages = self.options.stages
        if "workers" in stages:
            best = self._workers(best, prediction)
        for stage in (s for s in ("batch", "amp", "pin") if s in stages):
            if stage == "pin" and not best.settings.gpus:
                self.result.decisions.append(
                    "pinned memory: not tried, no GPU in this run (it only speeds up "
                    "host-to-GPU copies)"
                )
            elif stage == "batch":
                best = self._one_change(best, "batch", self._batch_change(best.settings))
            elif stage == "amp":
                best = self._one_change(best, "amp", best.settings.with_knobs(amp=True))
            else:
                best = self._one_change(best, "pin", best.settings.with_knobs(pin_memory=True))
        self.result.best = best
        self._flag_accuracy(base, best)
        self._keep_the_shape(best)
        self._judge_advice(advice or {}, base, best)
        self._say_what_the_budget_left_out()
        return self.result

    def _flag_accuracy(self, base: Trial, best: Trial) -> None:
        """A winner that trains worse is said to, with both accuracies: faster is no gain if
        the model learns less in the same steps (a larger batch, mixed precision)."""
        if best is base or best.accuracy is None or base.accuracy is None:
            return
        if best.accuracy < base.accuracy - ACCURACY_DROP:
            self.result.decisions.append(
                f"check the winner's accuracy: {100 * best.accuracy:.1f} % after its trial "
                f"against {100 * base.accuracy:.1f} % for the base ({_here(best.settings)} "
                f"against {_here(base.settings)}): faster, but it trains worse in as many "
                "steps"
            )

    def _keep_the_shape(self, best: Trial) -> None:
        """A tune started from a report whose cores this machine does not have: the job keeps
        the report's cores and workers (the trials could not measure them) and says so."""
        shape = self.request.settings
        cores = self.options.max_cores or len(available_cores())
        if "sbatch.cpus-per-task" not in shape.because or shape.cpus_per_task <= cores:
            return
        if best.settings.cpus_per_task >= shape.cpus_per_task:
            return
        workers = base_workers(shape)
        self.result.kept_shape = {"cpus_per_task": shape.cpus_per_task, "num_workers": workers}
        self.result.decisions.append(
            f"job shape: the report's {shape.cpus_per_task} cores and {workers} workers kept "
            f"in the job script: this machine has {cores}, so the trials measured "
            f"{best.settings.cpus_per_task} and could not measure them"
        )

    def _say_what_the_budget_left_out(self) -> None:
        """Stages the budget ended or never reached: named in ``stopped`` with the time
        (a stage left out without a word reads as a stage that found nothing)."""
        r = self.result
        if not (r.skipped or r.cut_short):
            return
        parts = []
        if r.cut_short:
            parts.append(f"cut short: {', '.join(r.cut_short)}")
        if r.skipped:
            parts.append(f"not run: {', '.join(r.skipped)}")
        used = self.clock() - self._started
        r.stopped = (
            f"time budget of {self.options.budget_s:g} s reached ({used:.0f} s used, a trial "
            f"takes about {self._last_trial_s:.0f} s): {'; '.join(parts)}; a larger --budget "
            "gives them time"
        )

    def _workers(self, best: Trial, prediction: Prediction | None = None) -> Trial:
        cores = self.options.max_cores or len(available_cores())
        start = best
        misses = 0
        tried: list[Trial] = []
        aimed = _aims_at_workers(prediction)
        if aimed is not None:
            pairs = predicted_candidates(best.settings, aimed, cores)
            self.result.decisions.append(
                "workers and cores: started from the prediction's setting "
                + ", ".join(f"{k} {v}" for k, v in sorted(aimed.items()))
                + " and tried one step either side"
            )
        else:
            pairs = worker_candidates(best.settings, cores)
        for cpus, workers in pairs:
            settings = replace(start.settings, cpus_per_task=cpus).with_knobs(num_workers=workers)
            # the prediction's own setting records it beside its measurement
            predicted = aimed is not None and (cpus, workers) == pairs[0]
            trial = self.trial("workers", settings, prediction if predicted else None)
            if trial is None:
                break
            tried.append(trial)
            if self._better(trial, best):
                best, misses = trial, 0
            elif aimed is None:
                misses += 1
                if misses >= 2 and best is not start:  # past the knee
                    break
        if best is start:
            top = max((t for t in tried if t.rate), key=lambda t: t.rate or 0.0, default=None)
            verdict = self._verdict(top, start)
            self.result.decisions.append(
                f"workers and cores: kept {_here(start.settings)} "
                f"({start.rate:,.1f} samples/s{_spread(start)}); the best other setting, "
                + (
                    f"{_here(top.settings)}, gave " + verdict.why()
                    if top and verdict
                    else "none ran"
                )
            )
        else:
            self.result.decisions.append(
                f"workers and cores: {_here(best.settings)} gives "
                f"{best.rate:,.1f} samples/s, {_pct(best.rate, start.rate)} against "
                f"{_here(start.settings)}" + _why_cores(start, best, tried)
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
        verdict = self._verdict(trial, best)
        if verdict is not None and verdict.kept:
            self.result.decisions.append(
                f"{what}: kept, {trial.rate:,.1f} against {best.rate:,.1f} samples/s "
                f"({_pct(trial.rate, best.rate)}, beyond the measured spread "
                f"+-{100 * verdict.noise:.1f} %)"
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
                f"{trial.rate:,.1f} against {best.rate:,.1f} samples/s ({verdict.why()})"
                if verdict is not None
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
                    f"samples/s against {best.rate:,.1f} for {_here(best.settings)}"
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
    if result.kept_shape is not None:  # the report's cores and workers, not this machine's
        knobs["num_workers"] = result.kept_shape["num_workers"]
        settings = replace(settings, cpus_per_task=result.kept_shape["cpus_per_task"])
    return replace(settings, knobs=knobs)


def write_tune_summary(folder: Path, result: TuneResult, extra: Mapping[str, Any]) -> Path:
    import json

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tune.json"
    path.write_text(json.dumps({**extra, **result.to_json()}, indent=2, default=str) + "\n")
    return path


def summary_lines(result: TuneResult) -> Sequence[str]:
    lines = [*result.decisions]
    if result.repeats == 1 and result.trials:
        lines.append(
            "one run per setting: no spread over repeats; each spread is that of the run's "
            "own steady steps (--repeats 3 measures how much runs differ)"
        )
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
