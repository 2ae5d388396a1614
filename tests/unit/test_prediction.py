"""A report's prediction, read back: what a relaunch checks its measurement against. A report
file may come from someone else, so anything but the shape written is refused, saying what."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuneadvisor.advisor.prediction import Prediction, Span

finite = st.floats(0, 1e9, allow_nan=False, allow_infinity=False)


@st.composite
def spans(draw: st.DrawFn) -> Span:
    low, expected, high = sorted(draw(st.lists(finite, min_size=3, max_size=3)))
    return Span(low, expected, high)


@given(
    st.dictionaries(st.sampled_from(["num_workers", "cpus_per_task"]), st.integers(0, 512)),
    spans(),
    spans(),
    st.none() | spans(),
    st.lists(st.text(max_size=40), max_size=3),
    st.none() | st.text(max_size=40),
)
def test_a_prediction_reads_back_as_written(
    setting: dict[str, int],
    step: Span,
    speedup: Span,
    samples: Span | None,
    basis: list[str],
    ceiling: str | None,
) -> None:
    written = Prediction(setting, step, speedup, samples, tuple(basis), ceiling)
    assert Prediction.from_json(written.as_json()) == written


@pytest.mark.parametrize(
    ("obj", "said"),
    [
        ([], "prediction: an object"),
        ({"setting": {"num_workers": -1}}, "prediction.setting"),
        ({"setting": {"num_workers": True}}, "prediction.setting"),
        ({"setting": {}, "step_s": {"low": 1, "expected": 0.5, "high": 2}}, "low <= expected"),
        ({"setting": {}, "step_s": {"low": 0, "expected": math.inf, "high": 2}}, "finite"),
        ({"setting": {}, "step_s": {"low": "1", "expected": 1, "high": 1}}, "numbers"),
        ({"setting": {}, "step_s": {"low": 1, "expected": 1}}, "prediction.step_s"),
    ],
)
def test_a_malformed_prediction_is_refused_saying_what(obj: object, said: str) -> None:
    with pytest.raises(ValueError, match=said.replace("(", r"\(")):
        Prediction.from_json(obj)
