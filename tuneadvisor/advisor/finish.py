"""Time to result: how long the run is (its steps times the step time, each a range), and,
given when the scheduler would start it, when it would end.

A user wants the earliest result, not the fastest job: a larger request may wait longer in
the queue than it saves. The steps come from the training script's own options (and a
profile of whole epochs); the step time of the job as written is the measured one, the
tuned one the prediction's. Where a piece is missing the line says which, and no time is
given (pure: the start times are asked of Slurm by the workspace)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tuneadvisor.advisor.fact_view import FactView
from tuneadvisor.advisor.prediction import Prediction, Span
from tuneadvisor.advisor.sizing import StepModel
from tuneadvisor.advisor.steptime import (
    PROFILE_SPREAD,
    PROFILER_OVERHEAD,
    TRACE_OVERHEAD,
    measured_spread,
)
from tuneadvisor.records import record

if TYPE_CHECKING:  # a start time is only ever given to finish(): datetime costs every report
    from datetime import datetime

NO_STEP_TIME = (
    "the step time: nothing timed the run's steps (a line_profiler profile, a torch.profiler "
    "trace, a probe, or a watch recording with its run record gives it)"
)
NO_SCRIPT = (
    "the run's steps or epochs: no training script was read (the job script's launch line, "
    "or --script, names it)"
)
NO_LENGTH = (
    "the run's steps or epochs: the training script has no --max-steps or --epochs option "
    "the scan could read (a launch line passing a number for one gives them)"
)


@record
class Steps:
    """The steps the run takes, and how that was read."""

    count: int
    how: str
    at_most: bool = False  # an epoch count may end it sooner (an epoch's steps not known)


@record
class RunLength:
    """The run's length in seconds, as written and with the plan; what is missing for
    either (each one line: the piece, then what would give it)."""

    steps: Steps | None
    now_s: Span | None
    tuned_s: Span | None
    missing: tuple[str, ...] = ()


@record
class Finish:
    """One script's time to result: when the scheduler would start it, and its end as a
    range (the run's length added to the start)."""

    start: datetime
    run_s: Span
    end_low: datetime
    end: datetime
    end_high: datetime


def run_steps(v: FactView) -> Steps | str:
    """The run's steps, or the line saying which piece is missing."""
    max_steps, epochs, per = v.script.max_steps, v.script.epochs, v.profile.epoch_steps
    capped = f"{max_steps} steps ({v.script.max_steps__how})" if max_steps else ""
    if epochs and per:
        by_epochs = epochs * per
        if max_steps and max_steps <= by_epochs:
            return Steps(max_steps, capped)
        return Steps(
            by_epochs,
            f"{epochs} epochs ({v.script.epochs__how}) of {per} steps (the profile's whole epochs)",
        )
    if max_steps:
        if epochs:  # fewer epochs than max_steps may end it first: at most
            epochs_text = f"{epochs} epoch{'s' if epochs > 1 else ''}"
            return Steps(max_steps, f"at most {capped}: {epochs_text} may end it sooner",
                         at_most=True)  # fmt: skip
        return Steps(max_steps, capped)
    if epochs:
        return (
            f"the steps of an epoch: {epochs} epoch{'s were' if epochs > 1 else ' was'} read "
            f"({v.script.epochs__how}), but nothing timed a whole epoch (a line_profiler "
            "profile of one gives its steps)"
        )
    return NO_LENGTH if v.script.dataloaders is not None else NO_SCRIPT


def measured_step(model: StepModel, v: FactView) -> Span | None:
    """The measured run's step, as the prediction spans its own: the measured spread either
    way, and on the fast side the run without the profiler's cost. Where the model made no
    budget (the run's workers not known, say), the step a trace, probe or profile timed,
    with the spread and the instrument's cost the model assumes for it."""
    budget = model.budget
    faster: float | None = None
    if budget is not None and budget.step_s is not None:
        step, spread, overhead = budget.step_s, budget.spread, budget.overhead
        if v.alloc.cpus_per_task is not None:  # its workers' cost under the profiler too
            faster = budget.faster_measured()
    elif v.trace.step_s:
        step, overhead = v.trace.step_s, TRACE_OVERHEAD
        measured = v.trace.step_spread
        spread = measured_spread(measured) if measured is not None else PROFILE_SPREAD
    elif v.probe.loop_step_s:
        step, overhead = v.probe.loop_step_s, 0.0
        measured = v.probe.loop_step_spread
        spread = measured_spread(measured) if measured is not None else PROFILE_SPREAD
    elif v.profile.step_s:
        step, spread, overhead = v.profile.step_s, PROFILE_SPREAD, PROFILER_OVERHEAD
    else:
        return None
    if faster is None:
        faster = 1.0 / (1.0 - overhead)
    return Span(step * max(1.0 - spread, 0.0) / faster, step, step * (1 + spread))


def times(steps: int, step: Span) -> Span:
    """``steps`` steps of ``step`` seconds each."""
    return Span(steps * step.low, steps * step.expected, steps * step.high)


def run_length(v: FactView, model: StepModel, prediction: Prediction | None) -> RunLength:
    steps = run_steps(v)
    step = measured_step(model, v)
    missing = [steps] if isinstance(steps, str) else []
    if step is None:
        missing.append(NO_STEP_TIME)
    if isinstance(steps, str) or step is None:
        return RunLength(None if isinstance(steps, str) else steps, None, None, tuple(missing))
    tuned = times(steps.count, prediction.step_s) if prediction is not None else None
    return RunLength(steps, times(steps.count, step), tuned)


def finish(start: datetime, run_s: Span) -> Finish | None:
    """The end of a run of ``run_s`` started at ``start``; None past the calendar's end
    (a run of centuries is said as too long, not as an overflow)."""
    try:
        from datetime import timedelta  # here: a report without start times never loads it

        ends = [start + timedelta(seconds=s) for s in (run_s.low, run_s.expected, run_s.high)]
    except OverflowError:
        return None
    return Finish(start, run_s, *ends)


def _span(seconds: float) -> str:
    if abs(seconds) < 90:
        return f"{abs(seconds):.0f} s"
    minutes = round(abs(seconds) / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


# Two asks a moment apart on an idle cluster both start "now": a start this much later is
# the asking, not the queue.
SAME_START_S = 60.0


def verdict(now: Finish, tuned: Finish, which: str = "tuned") -> str:
    """Which script gives the result first: a larger request that waits longer in the queue
    than it saves in run time is said as such. ``which``: the other script's adjective
    ("tuned", the ledger's "winning")."""
    waits = (tuned.start - now.start).total_seconds()
    waits = 0.0 if abs(waits) < SAME_START_S else waits
    saves = now.run_s.expected - tuned.run_s.expected
    if waits > 0 and waits >= saves:
        return (
            f"the {which} request waits {_span(waits)} longer to start than the job as written "
            f"and saves {_span(saves) if saves > 0 else 'nothing'} of run time: the job as "
            "written gives the result first"
        )
    gain = (now.end - tuned.end).total_seconds()
    if gain <= 0:
        return f"the {which} script gives the result no sooner than the job as written"
    overlap = tuned.end_high >= now.end_low
    return (
        f"the {which} script gives the result about {_span(gain)} sooner"
        + (" (the two ranges overlap)" if overlap else "")
        + (f", after waiting {_span(waits)} longer to start" if waits > 0 else "")
    )
