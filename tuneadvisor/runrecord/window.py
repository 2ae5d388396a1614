"""Throughput over a window of steps: the samples it delivered over the seconds it took, not the
median of per-step rates.

With several DataLoader workers the batches arrive in bursts: most steps run at the device's
pace and a few wait for the next burst, so the median of per-step rates follows the fast steps
(bench/prediction_bench.py: 1,238 samples/s by the median against 393 over the window, for 1
core and 3 workers, the same as 1 worker's 424). What a run delivers, and what a prediction or
a tuning decision is about, is samples over seconds. Its spread is that of contiguous blocks
of the window, each also samples over seconds.

``steady_window`` is a run's one throughput and step time: the steps after the first
``WARMUP_STEPS``. ``run``'s last line, run.json's summary, compare, tune, the run facts of the
report and the TUI, and the check against the prediction all print it; any other figure (an
epoch's rate, a per-step median, all samples over the whole training time) is labelled as such.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from tuneadvisor.numbers import MAX_NUMBER
from tuneadvisor.runrecord.measured import Step

BLOCKS = 4  # contiguous parts of the window whose rates give its spread
WARMUP_STEPS = 3  # steps left out at the start: start-up, first batches, workers starting


@dataclass(frozen=True)
class Window:
    samples_per_s: float  # samples / seconds over the window
    step_s: float | None  # seconds / steps over the window (None: no step times given)
    spread: float  # relative: half the range of the blocks' rates over the window's rate
    steps: int


def _intervals(steps: Sequence[Step], after: int = 0) -> list[tuple[float, float, int]]:
    """(samples, seconds, steps) of each progress event past step ``after``: an event reports
    the mean over the steps since the one before (every ``--log-interval`` steps).

    The steps an event covers: its own count where it gives one (the bundled scripts' ``steps``:
    the first event of a run covers one step, and one after an epoch's test the steps left
    over from the epoch before); else those since the event before it, and for the first
    event no more than its step number (a run that reports at step 1 has trained one step)."""
    numbers = [s.step for s in steps]
    gaps = [b - a for a, b in itertools.pairwise(numbers) if b > a]
    first = gaps[0] if gaps else 1  # the first event's own interval: as the next one's
    out: list[tuple[float, float, int]] = []
    previous: int | None = None
    for s in steps:
        if s.covers is not None and s.covers > 0:
            n = s.covers
        elif previous is not None and s.step > previous:
            n = s.step - previous
        else:
            n = min(first, s.step) if s.step > 0 else first
        previous = s.step
        if s.step <= after:
            continue
        if s.step_time_s and s.samples_per_s and s.step_time_s > 0 and s.samples_per_s > 0:
            seconds = float(s.step_time_s) * n
            samples = float(s.samples_per_s) * seconds
            # a product that underflows to 0 (1e-200 s x 1e-200/s) or passes any real figure
            # is no interval: the rate's division and the spread's need positive sums
            if _real(seconds) and _real(samples) and _real(float(s.samples_per_s)):
                out.append((samples, seconds, n))
    return out


def _real(value: float) -> bool:
    """Within any real figure's range either way: the sums and quotients stay positive."""
    return 1 / MAX_NUMBER <= value <= MAX_NUMBER


def _rate(part: Sequence[tuple[float, float, int]]) -> float:
    return sum(p[0] for p in part) / sum(p[1] for p in part)


def window(steps: Sequence[Step], after: int = 0) -> Window | None:
    """The rate, step time and spread of the events past step ``after`` (None: no step
    reported both figures). ``steps`` are all the run's events: what an event covers is told
    by the one before it, which a window leaves out."""
    parts = _intervals(steps, after)
    if not parts:
        return _rates_only([s for s in steps if s.step > after] or list(steps))
    rate = _rate(parts)
    step_s = sum(p[1] for p in parts) / sum(p[2] for p in parts)
    count = min(BLOCKS, len(parts) // 2)  # blocks of two events at least (one is a burst)
    size = len(parts) // count if count >= 2 else 0
    rates = [_rate(parts[i * size : (i + 1) * size]) for i in range(count)] if size else []
    spread = (max(rates) - min(rates)) / 2 / rate if rates else 0.0
    return Window(rate, step_s, spread, sum(p[2] for p in parts))


def steady_steps(steps: Sequence[Step], warmup: int = WARMUP_STEPS) -> list[Step]:
    """The steps after the warm-up (all but the first when the run was too short for it)."""
    after = [s for s in steps if s.step > warmup]
    return after or list(steps[1:]) or list(steps)


def steady_window(steps: Sequence[Step], warmup: int = WARMUP_STEPS) -> Window | None:
    """A run's throughput and step time: the window of the steps after the warm-up (all but
    the first event when the run was too short for it)."""
    if any(s.step > warmup for s in steps):
        after = warmup
    else:
        after = steps[0].step if len(steps) > 1 else (steps[0].step - 1 if steps else 0)
    # all the events go in: those before the window say where its first interval begins
    return window(steps, after)


def _rates_only(steps: Sequence[Step]) -> Window | None:
    """Events that give a rate and no step time (a script of the user's, an old record):
    the median of the rates is all there is, with half their interquartile range."""
    rates = sorted(
        float(s.samples_per_s) for s in steps if s.samples_per_s and _real(float(s.samples_per_s))
    )
    if not rates:
        return None
    middle = statistics.median(rates)
    if len(rates) >= 4:
        low, _, high = statistics.quantiles(rates, n=4, method="inclusive")
    else:
        low, high = rates[0], rates[-1]
    return Window(middle, None, (high - low) / 2 / middle, len(rates))
