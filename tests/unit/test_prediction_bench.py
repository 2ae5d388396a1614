"""The judgements bench/prediction_bench.py records (issue 21's numbers): the +-25 % test, the
samples/s derived from a predicted step time, the setting `apply` wrote, the time `tune` took
to reach a target and whether it kept a change inside the noise. No timing here."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.prediction_bench import (
    applied_setting,
    kept_within_noise,
    predicted_rate,
    time_to_reach,
    window_rate,
    within,
)

positive = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False)


def test_within_is_the_issues_plus_minus_25_percent() -> None:
    assert within(100.0, 125.0) and within(100.0, 75.0)
    assert not within(100.0, 126.0) and not within(100.0, 74.0)
    assert not within(0.0, 0.0)  # nothing predicted: no pass


@given(positive, st.floats(min_value=0.8, max_value=1.2))
def test_within_holds_inside_the_band(expected: float, factor: float) -> None:
    assert within(expected, expected * factor)


def test_predicted_rate_prefers_the_reports_samples_per_s() -> None:
    pred = {
        "samples_per_s": {"low": 90.0, "expected": 100.0, "high": 110.0},
        "step_s": {"low": 1.0, "expected": 2.0, "high": 4.0},
    }
    got = predicted_rate(pred, 32)
    assert (got.low, got.expected, got.high, got.derived) == (90.0, 100.0, 110.0, False)


@given(positive, positive, positive, st.integers(min_value=1, max_value=4096))
def test_derived_rate_keeps_its_order(a: float, b: float, c: float, batch: int) -> None:
    low, expected, high = sorted((a, b, c))
    got = predicted_rate(
        {"samples_per_s": None, "step_s": {"low": low, "expected": expected, "high": high}}, batch
    )
    # the longest step is the fewest samples
    assert got.derived and got.low <= got.expected <= got.high
    assert got.expected * expected == pytest.approx(batch)


def test_applied_setting_reads_the_sbatch_line_and_the_workers() -> None:
    follows = (
        "#SBATCH --cpus-per-task=4   # cores\npython t.py --num-workers ${SLURM_CPUS_PER_TASK:-1}\n"
    )
    assert applied_setting(follows) == (4, 4)
    fixed = "#SBATCH --cpus-per-task 3\npython t.py --num-workers 2 --epochs 1\n"
    assert applied_setting(fixed) == (3, 2)
    assert applied_setting("python t.py\n") == (None, None)


def test_time_to_reach_counts_up_to_the_first_trial_that_reaches() -> None:
    trials = [(100.0, 10.0), (None, 5.0), (180.0, 8.0), (200.0, 7.0)]
    assert time_to_reach(trials, 150.0) == 23.0
    assert time_to_reach(trials, 100.0) == 10.0
    assert time_to_reach(trials, 201.0) is None


def _trial(settings: str, rate: float, spread: float) -> dict[str, Any]:
    return {"settings": settings, "samples_per_s": rate, "spread": spread}


def test_kept_within_noise_compares_the_gain_to_both_spreads() -> None:
    base = _trial("1 cpu, workers 1", 100.0, 0.05)
    noisy = {"base": base, "best": _trial("2 cpu, workers 2", 108.0, 0.05)}
    clear = {"base": base, "best": _trial("2 cpu, workers 2", 130.0, 0.05)}
    kept = {"base": base, "best": base}
    assert kept_within_noise(noisy)[0]
    assert not kept_within_noise(clear)[0]
    assert not kept_within_noise(kept)[0]
    assert not kept_within_noise({"base": None, "best": None})[0]


def test_window_rate_is_samples_over_seconds_after_the_warmup() -> None:
    # bursts: a fast step and a slow one, 32 samples each; the warm-up step is left out
    steps = [
        {"step": 1, "step_time_s": 5.0, "samples_per_s": 6.4},
        {"step": 2, "step_time_s": 0.01, "samples_per_s": 3200.0},
        {"step": 3, "step_time_s": 0.31, "samples_per_s": 32 / 0.31},
    ]
    assert window_rate(steps, 1) == pytest.approx(64 / 0.32)
    assert window_rate(steps, 3) is None


def _case(kind: str, rate: tuple[float, float, float] | None, measured: float | None,
          speedup: tuple[float, float, float] | None = None,
          measured_speedup: float | None = None) -> Any:  # fmt: skip
    from bench.prediction_bench import Case, Predicted

    predicted = Predicted(*rate, derived=False) if rate else None
    setting = (2, 2) if rate else None
    return Case(kind, "medium", setting, None if rate else "no prediction: x", predicted,
                speedup, measured, measured_speedup)  # fmt: skip


def test_summarize_judges_each_evidence_kind_on_its_own() -> None:
    """Issue 31 §5: per kind, the share inside the range and the median errors of the
    expected samples/s and speedup; a kind without a prediction counts as such."""
    from bench.prediction_bench import summarize

    cases = [
        _case("profile", (80.0, 100.0, 120.0), 110.0, (1.6, 2.0, 2.4), 2.2),
        _case("profile", (80.0, 100.0, 120.0), 130.0, (1.6, 2.0, 2.4), 2.6),
        _case("trace", (40.0, 50.0, 60.0), 50.0, (0.9, 1.0, 1.1), 1.0),
        _case("recording", None, None),
    ]
    by_kind = {k.kind: k for k in summarize(cases)}
    assert list(by_kind) == ["profile", "trace", "recording"]  # KINDS order
    profile = by_kind["profile"]
    assert profile.cases == 2 and profile.inside == 0.5 and profile.inside_speedup == 0.5
    assert profile.error == pytest.approx(0.2)  # median of |+10 %| and |+30 %|
    assert profile.speedup_error == pytest.approx(0.2)
    assert by_kind["trace"].error == 0.0 and by_kind["trace"].inside == 1.0
    recording = by_kind["recording"]
    assert recording.cases == 0 and recording.no_prediction == 1 and recording.error is None


def test_a_case_measured_faster_than_the_range_is_outside() -> None:
    case = _case("probe", (80.0, 100.0, 120.0), 121.0, (1.0, 1.2, 1.4), 1.5)
    assert case.inside is False and case.inside_speedup is False
    assert case.error == pytest.approx(0.21) and case.speedup_error == pytest.approx(0.25)


def test_agreement_says_one_setting_and_whether_the_ranges_overlap() -> None:
    from bench.prediction_bench import agreement

    a = _case("profile", (80.0, 100.0, 120.0), 1.0, (1.6, 2.0, 2.4), 2.0)
    b = _case("trace", (80.0, 100.0, 120.0), 1.0, (2.2, 2.5, 2.8), 2.0)
    c = _case("probe", (80.0, 100.0, 120.0), 1.0, (2.5, 2.7, 2.9), 2.0)
    assert agreement([a, b]) == (
        "one setting (cpus 2 workers 2) from 2 kind(s); speedup ranges overlap 2.20-2.40x"
    )
    assert agreement([a, c]).endswith("speedup ranges do not overlap")
    assert agreement([_case("recording", None, None)]) == "no prediction"


def test_each_round_runs_the_baseline_and_each_setting_once_in_turned_order() -> None:
    from bench.prediction_bench import BASE, run_order

    first = run_order([(2, 2), (2, 1), (2, 2), BASE], 0)
    assert first == [BASE, (2, 1), (2, 2)]  # the baseline's own setting predicted: run once
    assert run_order([(2, 2), (2, 1)], 1) == first[::-1]
    assert run_order([], 3) == [BASE]


def test_each_case_is_judged_by_its_own_rounds_runs() -> None:
    """A prediction of round 2 against round 2's setting over round 2's baseline, never
    another round's (the node's speed drifts between rounds)."""
    from bench.prediction_bench import BASE, judge

    a = _case("profile", (80.0, 100.0, 120.0), None, (1.6, 2.0, 2.4))
    b = replace(a, round_no=1)
    rates = {(0, "medium", (2, 2)): 200.0, (0, "medium", BASE): 100.0,
             (1, "medium", (2, 2)): 150.0, (1, "medium", BASE): 50.0}  # fmt: skip
    ja, jb = judge([a, b, _case("trace", None, None)], rates)[:2]
    assert (ja.measured, ja.measured_speedup) == (200.0, 2.0)
    assert (jb.measured, jb.measured_speedup) == (150.0, 3.0)
    # a round whose baseline did not give a rate: a rate, no speedup
    (jc,) = judge([b], {(1, "medium", (2, 2)): 150.0})
    assert jc.measured == 150.0 and jc.measured_speedup is None and jc.inside_speedup is None


def test_drift_is_the_baselines_swing_and_each_against_its_rounds_measured_runs() -> None:
    from bench.prediction_bench import drift

    d = drift("medium", {0: 231.0, 1: 146.0, 2: 200.0}, {0: [200.0, 240.0], 2: [100.0]})
    assert d.baselines == (231.0, 146.0, 200.0)
    assert d.swing == pytest.approx((231 - 146) / 200)
    assert d.against_evidence == pytest.approx((231 / 220, 2.0))  # round 1 measured nothing
    assert drift("low", {}, {}).swing is None


def test_the_burners_burn_and_are_stopped_however_the_block_ends() -> None:
    import time

    import psutil

    from bench.prediction_bench import burners

    def failing(procs: list[Any]) -> None:
        assert len(procs) == 2
        deadline = time.monotonic() + 30  # each burns CPU (waited for, bounded)
        for proc in procs:
            while psutil.Process(proc.pid).cpu_times().user < 0.05:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.02)
        raise RuntimeError("the bench failed")

    seen: list[Any] = []
    with pytest.raises(RuntimeError), burners(2) as procs:  # noqa: PT012
        seen = procs
        failing(procs)
    assert len(seen) == 2 and all(p.returncode is not None for p in seen)  # killed, reaped
    with burners(0) as none:
        assert none == []


def test_the_loaded_sub_section_goes_after_the_idle_one_and_is_replaced_in_place() -> None:
    from bench.prediction_bench import BEGIN, END, LOAD_BEGIN, LOAD_END, place_section

    text = f"# B\n\n{BEGIN}\nidle\n{END}\n\n<!-- other:begin -->\nx\n<!-- other:end -->\n"
    once = place_section(text, f"{LOAD_BEGIN}\nloaded 1\n{LOAD_END}", LOAD_BEGIN, LOAD_END, END)
    assert once.index(END) < once.index("loaded 1") < once.index("<!-- other:begin -->")
    twice = place_section(once, f"{LOAD_BEGIN}\nloaded 2\n{LOAD_END}", LOAD_BEGIN, LOAD_END, END)
    assert "loaded 1" not in twice and twice.count(LOAD_BEGIN) == 1 and "idle" in twice


def test_others_of_reads_the_records_figure_and_nothing_else() -> None:
    from bench.prediction_bench import others_of

    assert others_of({"resources": {"cpu_others": {"others_cores": 0.93}}}) == 0.93
    assert others_of({"resources": {"cpu_others": {"not_read": {"others_cores": "x"}}}}) is None
    assert others_of({}) is None
