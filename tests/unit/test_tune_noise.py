"""tune keeps a change only beyond the measured spread, and starts from a prediction's
setting when it has one (issue 21): synthetic step series stand in for the trials."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuneadvisor.advisor.prediction import Prediction, Span
from tuneadvisor.relaunch.bundled import bundled
from tuneadvisor.relaunch.records import RunRecord
from tuneadvisor.relaunch.runner import RunRequest
from tuneadvisor.relaunch.settings import Settings
from tuneadvisor.runrecord.measured import Step
from tuneadvisor.runrecord.window import Window, window
from tuneadvisor.tune import tuner as tune_mod
from tuneadvisor.tune.gain import Rate, judge
from tuneadvisor.tune.tuner import (
    TuneOptions,
    Tuner,
    predicted_candidates,
    trial_spread,
    write_tune_summary,
)

Key = tuple[int, int, bool]  # cpus-per-task, workers, amp
WARMUP = 3


class FakeSeries:
    """Stands in for run_local: each setting's steps after the warm-up, in samples/s (one
    series per repeat, taken in turn); the warm-up steps are slow, as real ones are."""

    def __init__(self, series: Mapping[Key, Sequence[Sequence[float]]]) -> None:
        self.series = series
        self.calls: list[RunRequest] = []

    def __call__(self, req: RunRequest, on_event: object = None) -> RunRecord:
        s = req.settings
        key = (s.cpus_per_task, int(str(s.knobs.get("num_workers"))), bool(s.knobs.get("amp")))
        runs = self.series.get(key, ())
        seen = sum(1 for c in self.calls if _key(c) == key)
        self.calls.append(req)
        rates = list(runs[seen % len(runs)]) if runs else []
        warm = [r / 5 for r in rates[:WARMUP]]
        steps = [
            {"step": i + 1, "samples_per_s": r, "step_time_s": 64 / r}
            for i, r in enumerate([*warm, *rates])
        ]
        data: dict[str, Any] = {
            "kind": "tuneadvisor-run", "id": f"run{len(self.calls)}",
            "status": "completed" if rates else "failed", "steps": steps,
        }  # fmt: skip
        if req.prediction is not None:
            data["prediction"] = req.prediction.as_json()
        return RunRecord.from_json(data)


def _window(rates: Sequence[float]) -> Window:
    """A series' steady window as the tuner reads it (64 samples a step, 64/r s each)."""
    found = window([Step(i, r, 64 / r, {}) for i, r in enumerate(rates, 1)])
    assert found is not None
    return found


def _harmonic(rates: Sequence[float]) -> float:  # samples over seconds of equal batches
    return len(rates) / sum(1 / r for r in rates)


def _key(req: RunRequest) -> Key:
    s = req.settings
    return s.cpus_per_task, int(str(s.knobs.get("num_workers"))), bool(s.knobs.get("amp"))


def _request(tmp_path: Path, settings: Settings) -> RunRequest:
    return RunRequest(bundled("mnist_single"), settings, tmp_path, "python", tmp_path)


BASE = Settings(cpus_per_task=1, knobs={"num_workers": 0, "batch_size": 64})
# +-8 % step to step around 100 samples/s: one 10-step trial of a noisy machine
NOISY = [92.0, 108.0, 100.0, 95.0, 105.0, 90.0, 110.0, 100.0, 97.0, 103.0]


def _run_amp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, amp: Sequence[float]) -> Any:
    fake = FakeSeries({(1, 0, False): [NOISY], (1, 0, True): [amp]})
    monkeypatch.setattr(tune_mod, "run_local", fake)
    options = TuneOptions(stages=("amp",), warmup_steps=WARMUP, measure_steps=len(NOISY))
    return Tuner(_request(tmp_path, BASE), options).run()


def test_a_six_percent_gain_inside_an_eight_percent_spread_is_noise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run_amp(monkeypatch, tmp_path, [r * 1.066 for r in NOISY])
    assert result.best is result.base
    (said,) = result.decisions
    base = _harmonic(NOISY)  # samples over seconds: 99.6, not the median's 100
    assert said.startswith(
        f"mixed precision: dropped, {1.066 * base:.1f} against {base:.1f} samples/s (+6.6 %"
    )
    assert "within the measured spread" in said and "noise" in said
    # four blocks of two steps: 99.0, 97.4, 96.7 and 104.8 samples/s, +-4 % around 99.6
    blocks = [_harmonic(NOISY[i : i + 2]) for i in range(0, 8, 2)]
    assert result.base.spread == pytest.approx((max(blocks) - min(blocks)) / 2 / base)


def test_a_gain_beyond_the_spread_is_kept_and_says_by_how_much(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _run_amp(monkeypatch, tmp_path, [r * 1.3 for r in NOISY])
    assert result.best is not result.base and result.best.settings.knobs["amp"] is True
    (said,) = result.decisions
    base = _harmonic(NOISY)
    assert (
        f"kept, {1.3 * base:.1f} against {base:.1f} samples/s (+30.0 %, beyond the measured spread"
        in said
    )


def test_a_quiet_machine_keeps_the_five_percent_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    quiet = [100.0, 100.5, 99.5, 100.0, 100.2, 99.8]
    fake = FakeSeries({(1, 0, False): [quiet], (1, 0, True): [[r * 1.04 for r in quiet]]})
    monkeypatch.setattr(tune_mod, "run_local", fake)
    result = Tuner(_request(tmp_path, BASE), TuneOptions(stages=("amp",))).run()
    (said,) = result.decisions
    assert result.best is result.base and "below the 5 % a change must gain" in said


def test_repeats_that_disagree_widen_the_spread() -> None:
    steady = _window([100.0, 100.0, 100.0, 100.0])
    assert trial_spread([steady]) == 0.0
    # two repeats, each steady, one 10 % above the other: +-5 % around 105
    assert trial_spread([steady, _window([110.0] * 4)]) == pytest.approx(5.0 / 105.0)
    assert trial_spread([]) == 0.0


@given(
    old=st.floats(1.0, 1e5),
    old_spread=st.floats(0.0, 0.5),
    new_spread=st.floats(0.0, 0.5),
    share=st.floats(-1.0, 0.999),  # inside: the float rounding of the edge itself aside
    min_gain=st.floats(0.0, 0.2),
)
def test_a_change_inside_the_spread_is_never_kept(
    old: float, old_spread: float, new_spread: float, share: float, min_gain: float
) -> None:
    """Whatever the rates, spreads and threshold: a gain the spreads could explain, or one
    below the threshold, is never kept; one beyond both always is."""
    gain = share * (old_spread + new_spread)  # anywhere inside +- the spreads
    verdict = judge(Rate(old, old_spread), Rate(old * (1 + gain), new_spread), min_gain)
    assert not verdict.kept
    beyond = 1.01 * max(min_gain, old_spread + new_spread) + 1e-6
    assert judge(Rate(old, old_spread), Rate(old * (1 + beyond), new_spread), min_gain).kept


@given(
    base=st.lists(st.floats(50.0, 150.0), min_size=4, max_size=20),
    jitter=st.lists(st.floats(-1.0, 1.0), min_size=4, max_size=20),
    share=st.floats(0.0, 0.999),
)
def test_tune_never_keeps_a_change_inside_the_measured_spread(
    base: list[float], jitter: list[float], share: float
) -> None:
    """End to end through the trials: the changed setting's steps are the base's shifted
    by a gain inside the spread the base and its own steps show."""
    spread = trial_spread([_window(base)])
    changed = [r * (1 + share * spread) for r in base]
    with pytest.MonkeyPatch.context() as mp:
        fake = FakeSeries({(1, 0, False): [base], (1, 0, True): [changed]})
        mp.setattr(tune_mod, "run_local", fake)
        options = TuneOptions(stages=("amp",), min_gain=0.0)
        result = Tuner(_request(Path("."), BASE), options).run()
    assert result.best is result.base


# --------------------------------------------------------------------------- a prediction


PREDICTED = Prediction(
    setting={"cpus_per_task": 4, "num_workers": 3},
    step_s=Span(0.30, 0.32, 0.36),
    speedup=Span(2.5, 2.8, 3.2),
    samples_per_s=Span(64 / 0.36, 64 / 0.32, 64 / 0.30),
)


def test_candidates_are_the_predicted_setting_then_one_step_either_side() -> None:
    assert predicted_candidates(BASE, PREDICTED.setting, 8) == [
        (4, 3), (4, 2), (4, 4), (3, 2), (5, 4),
    ]  # fmt: skip
    # the node's cores cap it: the setting itself comes down to them
    assert predicted_candidates(BASE, PREDICTED.setting, 3) == [(3, 3), (3, 2), (2, 2)]
    # the base itself is not tried again
    assert (1, 0) not in predicted_candidates(BASE, {"num_workers": 1, "cpus_per_task": 1}, 2)


def _flat(rate: float) -> list[list[float]]:
    return [[rate * f for f in (0.99, 1.0, 1.01, 1.0, 0.995, 1.005)]]


def test_tune_starts_from_the_prediction_and_records_it_on_that_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeSeries({
        (1, 0, False): _flat(60.0), (4, 3, False): _flat(190.0), (4, 2, False): _flat(170.0),
        (4, 4, False): _flat(193.0), (3, 2, False): _flat(150.0), (5, 4, False): _flat(230.0),
    })  # fmt: skip
    monkeypatch.setattr(tune_mod, "run_local", fake)
    options = TuneOptions(max_cores=8, stages=("workers",), warmup_steps=WARMUP)
    result = Tuner(_request(tmp_path, BASE), options).run(prediction=PREDICTED)
    tried = [_key(c)[:2] for c in fake.calls]
    assert tried == [(1, 0), (4, 3), (4, 2), (4, 4), (3, 2), (5, 4)]  # no walk from (1, 0)
    # only the prediction's own setting carries it into its run record
    assert [c.prediction for c in fake.calls] == [None, PREDICTED, None, None, None, None]
    assert result.best is not None and _key_of(result.best.settings) == (5, 4)
    said = "\n".join(result.decisions)
    assert "started from the prediction's setting cpus_per_task 4, num_workers 3" in said
    # (4, 4): +1.6 % over the predicted setting, inside the threshold: not kept over it
    assert result.predicted is not None and result.predicted["verdict"] == "within the range"
    summary = json.loads(write_tune_summary(tmp_path, result, {}).read_text())
    assert summary["prediction"] == PREDICTED.as_json()
    measured = summary["predicted_check"]["measured"]["samples_per_s"]["value"]
    assert measured == pytest.approx(_harmonic(_flat(190.0)[0]))


def _key_of(settings: Settings) -> tuple[int, int]:
    return settings.cpus_per_task, int(str(settings.knobs["num_workers"]))


def test_a_prediction_the_trial_misses_is_said_in_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeSeries({(1, 0, False): _flat(60.0), (4, 3, False): _flat(90.0)})
    monkeypatch.setattr(tune_mod, "run_local", fake)
    options = TuneOptions(max_cores=4, stages=("workers",), warmup_steps=WARMUP)
    result = Tuner(_request(tmp_path, BASE), options).run(prediction=PREDICTED)
    assert result.predicted is not None and result.predicted["verdict"] == "missed"
    assert result.predicted["finding"]["id"] == "prediction-missed"


def test_without_a_prediction_tune_walks_up_from_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    walk: Callable[[float], list[list[float]]] = _flat
    fake = FakeSeries({(1, 0, False): walk(60.0), (1, 1, False): walk(61.0)})
    monkeypatch.setattr(tune_mod, "run_local", fake)
    options = TuneOptions(max_cores=1, stages=("workers",))
    result = Tuner(_request(tmp_path, BASE), options).run()
    assert [_key(c)[:2] for c in fake.calls] == [(1, 0), (1, 1)]
    assert result.prediction is None and result.predicted is None
