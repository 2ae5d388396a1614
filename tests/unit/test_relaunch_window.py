"""A run's throughput is the samples of its steady window over the seconds they took: with
bursty DataLoader workers the median of per-step rates follows the fast steps and overstated
what the run delivered (bench/prediction_bench.py: 1,238 against 393 samples/s)."""

from __future__ import annotations

import statistics
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuneadvisor.runrecord.measured import Step
from tuneadvisor.runrecord.window import window


def steps(times: list[float], batch: int = 64, every: int = 1) -> list[Step]:
    out = []
    for i, t in enumerate(times):
        event: dict[str, Any] = {"step": (i + 1) * every, "step_time_s": t}
        event["samples_per_s"] = batch / t
        out.append(Step((i + 1) * every, batch / t, t, event))
    return out


def test_bursty_workers_are_measured_over_the_window() -> None:
    # three fast steps at the device's pace, then one that waits for the next burst
    times = [0.02, 0.02, 0.02, 0.50] * 6
    found = window(steps(times))
    assert found is not None
    assert found.samples_per_s == pytest.approx(64 * len(times) / sum(times))  # ~114
    assert statistics.median(64 / t for t in times) == pytest.approx(3200)  # what it said
    assert found.step_s == pytest.approx(sum(times) / len(times))


def test_events_every_few_steps_weigh_by_their_steps() -> None:
    """With --log-interval 5 each event is the mean of 5 steps: the window still counts
    seconds and samples, whatever the interval."""
    once, every5 = window(steps([0.1] * 4)), window(steps([0.1] * 4, every=5))
    assert once is not None and every5 is not None
    assert once.samples_per_s == pytest.approx(every5.samples_per_s) == pytest.approx(640)
    assert every5.steps == 20


def test_a_steady_window_has_no_spread_and_drifting_one_has() -> None:
    steady = window(steps([0.05] * 12))
    drifting = window(steps([0.05] * 6 + [0.10] * 6))
    assert steady is not None and steady.spread == 0.0
    assert drifting is not None and drifting.spread > 0.3


def test_rates_without_step_times_fall_back_to_their_median() -> None:
    bare = [
        Step(i, r, None, {"step": i, "samples_per_s": r}) for i, r in enumerate([90, 100, 110], 1)
    ]
    found = window(bare)
    assert found is not None and found.samples_per_s == 100 and found.step_s is None
    assert window([]) is None


@given(st.lists(st.floats(0.001, 5.0), min_size=1, max_size=60))
def test_the_window_rate_lies_between_the_slowest_and_fastest_step(times: list[float]) -> None:
    found = window(steps(times))
    assert found is not None
    rates = [64 / t for t in times]
    assert min(rates) * (1 - 1e-9) <= found.samples_per_s <= max(rates) * (1 + 1e-9)
    assert found.spread >= 0.0


_ODD_FLOATS = st.one_of(
    st.floats(min_value=0.0, max_value=1e308, allow_nan=False, allow_subnormal=True),
    st.sampled_from([1e-200, 1e-320, 5e-324, 1e308, 1e30, 1e-30, 0.0]),
    st.none(),
)


@given(
    events=st.lists(
        st.tuples(st.integers(0, 10**6), _ODD_FLOATS, _ODD_FLOATS), min_size=1, max_size=20
    )
)
def test_any_rates_and_step_times_give_a_finite_window_or_none(
    events: list[tuple[int, float | None, float | None]],
) -> None:
    """Issue 34: a rate that underflows to 0 (1e-200 samples/s over 1e-200 s) raised a
    ZeroDivisionError; whatever the figures, the window is None or finite and positive."""
    steps = [Step(n, rate, secs, {}) for n, rate, secs in events]
    found = window(steps)
    if found is not None:
        assert 0 < found.samples_per_s < float("inf")
        assert 0 <= found.spread < float("inf")
        assert found.step_s is None or 0 < found.step_s < float("inf")
