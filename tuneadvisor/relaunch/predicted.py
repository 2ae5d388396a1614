"""A run against what was predicted for it: the report's ``advice.prediction`` read for a
relaunch, the steady-state step time and samples/s measured with their spread, and, when the
run lands outside the predicted range, the finding ``prediction-missed`` with what differed
from the prediction's assumptions (cores, CPU binding, warm-up, CPU starvation, storage
where its evidence shows it), or that it was better than predicted.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tuneadvisor.advisor.prediction import Prediction, Span
from tuneadvisor.relaunch.saved_report import prediction_of
from tuneadvisor.relaunch.storage_evidence import idle_reason
from tuneadvisor.runrecord.measured import Step
from tuneadvisor.runrecord.record import RunRecord
from tuneadvisor.runrecord.window import WARMUP_STEPS, steady_window

FINDING_ID = "prediction-missed"
SLOW_WARMUP = 1.5  # the first steps this much slower than the rest: a warm-up that shows
IDLE_CORES = 0.5  # under this share of the cores asked in use: the loop waited on something
STARVED = 0.9  # under this share of the cores allowed in use: the run did not get its cores
BUSY_NODE = 0.9  # the machine's cores this busy: other processes held what the run lacked
STARVED_OTHERS = 0.1  # others' load under this many cores' worth: the counters' noise


def record_prediction(record: RunRecord) -> Prediction | None:
    """The prediction a run recorded, read as a saved report's is (None for runs without
    one, older records included)."""
    return prediction_of(record.prediction, record.path, "run record: ")


@dataclass(frozen=True)
class Measure:
    """A steady-state figure: over the steady window (samples over seconds, seconds over
    steps: relaunch/window.py) and its spread (relative half-width: 0.05 = within +-5 %)."""

    value: float
    spread: float
    n: int

    def as_json(self) -> dict[str, float | int]:
        return {"value": self.value, "spread": self.spread, "n": self.n}


@dataclass(frozen=True)
class PredictionCheck:
    """One run against its prediction."""

    prediction: Prediction
    step_s: Measure | None
    samples_per_s: Measure | None
    reasons: tuple[str, ...]  # what differed, when it missed

    @property
    def missed(self) -> bool:
        return _outside(self.prediction.step_s, self.step_s) or _outside(
            self.prediction.samples_per_s, self.samples_per_s
        )

    def verdict(self) -> str:
        if self.step_s is None and self.samples_per_s is None:
            return "not measured"
        return "missed" if self.missed else "within the range"

    def finding(self) -> str | None:
        """``prediction-missed``'s text, or None when the run landed in the range."""
        if not self.missed:
            return None
        measured = self.step_s
        said = (
            f"step time {_ms(measured.value)} (+-{100 * measured.spread:.0f} %) against "
            f"{_span_ms(self.prediction.step_s)} predicted"
            if measured is not None
            else "samples/s outside the predicted range"
        )
        why = "; ".join(self.reasons) if self.reasons else "none of the known causes showed"
        return f"{said}: {why}"

    def as_json(self) -> dict[str, Any]:
        return {
            "predicted": self.prediction.as_json(),
            "measured": {
                "step_s": self.step_s.as_json() if self.step_s else None,
                "samples_per_s": self.samples_per_s.as_json() if self.samples_per_s else None,
            },
            "verdict": self.verdict(),
            "finding": (
                {"id": FINDING_ID, "text": self.finding(), "reasons": list(self.reasons)}
                if self.missed
                else None
            ),
        }


def _outside(span: Span | None, measured: Measure | None) -> bool:
    return span is not None and measured is not None and not span.contains(measured.value)


def _ms(seconds: float) -> str:
    return f"{1000 * seconds:.1f} ms"


def _span_ms(span: Span) -> str:
    return f"{1000 * span.low:.1f}-{1000 * span.high:.1f} ms"


def check(
    record: RunRecord, usage: Mapping[str, float] | None = None, warmup: int = WARMUP_STEPS
) -> PredictionCheck | None:
    """The run against the prediction it recorded (None without one), over the steps after
    ``warmup``. ``usage``: what ``watch`` sampled beside it (default: what the record kept)."""
    prediction = record_prediction(record)
    if prediction is None:
        return None
    # samples over seconds of the steady window, not the median of per-step rates (window.py)
    steady = steady_window(record.steps, warmup)
    step_s = (
        Measure(steady.step_s, steady.spread, steady.steps) if steady and steady.step_s else None
    )
    rate = Measure(steady.samples_per_s, steady.spread, steady.steps) if steady else None
    result = PredictionCheck(prediction, step_s, rate, ())
    if not result.missed:
        return result
    sampled = dict(usage if usage is not None else record.sampled)
    return PredictionCheck(
        prediction, step_s, rate, tuple(miss_reasons(record, prediction, sampled))
    )


def miss_reasons(
    record: RunRecord, prediction: Prediction, usage: Mapping[str, float]
) -> list[str]:
    """What differed between the run and the prediction's assumptions, each with its
    numbers; empty when none of these showed. A run faster than the range says so first;
    storage is named only with storage evidence (relaunch/storage_evidence.py)."""
    reasons = []
    better = _better(record, prediction)
    if better is not None:
        reasons.append(better)
    asked = prediction.setting.get("cpus_per_task")
    got = _cores_per_task(record)
    if asked is not None and got is not None and got < asked:
        reasons.append(
            f"fewer cores than the prediction assumed: {got} per task against cpus_per_task {asked}"
        )
    workers = prediction.setting.get("num_workers")
    bound = usage.get("affinity_min_cpus")
    if bound is not None and bound <= 1 and (asked or 0) > 1:
        its = f"{workers} worker{'' if workers == 1 else 's'}"
        whose = f"a rank and its {its}" if workers else "a rank"
        reasons.append(
            f"{whose} bound to {bound:.0f} CPU (host.proc.affinity.min_cpus) of the "
            f"{asked} the setting has"
        )
    slow = _warmup_ratio(record.steps)
    if slow is not None and slow >= SLOW_WARMUP:
        reasons.append(
            f"a warm-up: the first steps took {slow:.1f}x the steady ones; measure after "
            f"step {WARMUP_STEPS} (steady-state window)"
        )
    if better is None:
        reasons += _cpu_reasons(record, asked, usage)
    return reasons


def _better(record: RunRecord, prediction: Prediction) -> str | None:
    """A run faster than the range's fast side: "better than predicted", with what the
    prediction assumed (the figures its basis calls assumed)."""
    steady = steady_window(record.steps)
    if steady is None or steady.step_s is None or steady.step_s >= prediction.step_s.low:
        return None
    assumed = [b for b in prediction.basis if "assumed" in b]
    what = f"; it assumed: {'; '.join(assumed)}" if assumed else ""
    return (
        f"better than predicted: {_ms(steady.step_s)} a step, faster than the range's "
        f"{_ms(prediction.step_s.low)}{what}"
    )


def _cpu_reasons(record: RunRecord, asked: int | None, usage: Mapping[str, float]) -> list[str]:
    """CPU starvation where the run used fewer cores than it was allowed while the machine
    was busy (other processes held the cores); otherwise the cores it left idle, said as
    such, without naming a cause the evidence does not show."""
    cpu = record.resources.cpu if record.resources is not None else None
    used = usage.get("cores_used")
    if used is None and cpu is not None:
        used = cpu.cores_used
    allowed = (asked or record.settings.cpus_per_task) * max(1, record.settings.ntasks)
    if cpu is not None and cpu.cores_allowed:
        allowed = min(allowed, cpu.cores_allowed)
    if used is None or not allowed or used >= STARVED * allowed:
        return []
    node, busy = usage.get("node_cores"), usage.get("node_busy_cores")
    if node and busy is not None and busy >= BUSY_NODE * node:
        others = max(0.0, busy - used)
        return [
            f"CPU starvation: the run used {used:.2f} of the {allowed} cores it was allowed "
            f"while the machine's {node:.0f} cores were {100 * busy / node:.0f} % busy "
            f"(other processes held {others:.2f} cores)"
        ]
    starved = _starved_by_record(record, used, allowed)
    if starved is not None:
        return [starved]
    if used < IDLE_CORES * allowed:
        io = record.resources.io if record.resources is not None else None
        steady = steady_window(record.steps)
        rate = steady.samples_per_s if steady is not None else None
        return [idle_reason(io, used, allowed, rate)]
    return []


def _starved_by_record(record: RunRecord, used: float, allowed: int) -> str | None:
    """CPU starvation from the run record's own measure of other load (a run without watch
    samples has it too): the CPUs the run could use were busy, and others held the rest."""
    others = record.resources.cpu_others if record.resources is not None else None
    if others is None or others.others_cores is None or not others.allowed_cpus:
        return None
    pool = len(others.allowed_cpus)
    busy = others.busy_cores if others.busy_cores is not None else used + others.others_cores
    if busy < BUSY_NODE * pool or others.others_cores < STARVED_OTHERS:
        return None
    return (
        f"CPU starvation: the run used {used:.2f} of the {allowed} cores it was allowed "
        f"while other processes held {others.others_cores:.2f} of the {pool} CPUs it could "
        f"use ({100 * busy / pool:.0f} % busy; measured, the run record)"
    )


def _cores_per_task(record: RunRecord) -> int | None:
    """The cores each task really had: the emulated allocation's (local runs), else the
    settings' --cpus-per-task."""
    if record.allocation is not None and record.allocation.cores:
        return min(len(c) for c in record.allocation.cores)
    return record.settings.cpus_per_task


def _warmup_ratio(steps: Sequence[Step]) -> float | None:
    """Median step time of the warm-up steps over that of the steady ones."""
    first = [float(s.step_time_s) for s in steps if s.step <= WARMUP_STEPS and s.step_time_s]
    rest = [float(s.step_time_s) for s in steps if s.step > WARMUP_STEPS and s.step_time_s]
    if not first or not rest:
        return None
    return statistics.median(first) / statistics.median(rest)
