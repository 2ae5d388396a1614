"""compare checks a prediction's speedup as an outsider does (issue 31 §5): the run of the
predicted setting against the runs of the measured setting beside it, the same job and
neither profiled. The speedup holds where the node's pace moved (samples/s then miss)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tuneadvisor.advisor.prediction import Prediction, Span
from tuneadvisor.cli import main
from tuneadvisor.compare.speedup_check import BETTER, INSIDE, MISSED, speedup_checks
from tuneadvisor.compare.tables import labelled, load_item, tables
from tuneadvisor.relaunch.predicted import FINDING_ID
from tuneadvisor.relaunch.settings import Settings

BATCH = 32
# measured: 1 worker on 1 core; predicted: 2 workers on 2 cores, 1.6-2.4x, 300-380 samples/s
PREDICTION = Prediction(
    setting={"cpus_per_task": 2, "num_workers": 2},
    step_s=Span(BATCH / 380, BATCH / 340, BATCH / 300),
    speedup=Span(1.6, 1.9, 2.4),
    samples_per_s=Span(300.0, 340.0, 380.0),
    baseline={"num_workers": 1, "cpus_per_task": 1},
)


def _run(
    folder: Path,
    rate: float,
    *,
    cores: int,
    workers: int,
    prediction: Prediction | None = None,
    profiled: bool = False,
    cost: str = "medium",
) -> Path:
    """A completed local run of ``rate`` samples/s, as run.json keeps it."""
    run = folder / f"run-{len(list(folder.iterdir())) if folder.exists() else 0}"
    run.mkdir(parents=True)
    step = BATCH / rate
    steps = [
        {"event": "step", "step": i + 1, "step_time_s": step, "samples_per_s": rate}
        for i in range(16)
    ]
    knobs = {"num_workers": workers, "input_cost": cost, "max_steps": 16}
    data: dict[str, Any] = {
        "kind": "tuneadvisor-run", "schema": 1, "id": run.name, "name": "mnist_single",
        "label": run.name, "status": "completed", "where": "local",
        "settings": Settings(cpus_per_task=cores, knobs=knobs).to_json(),
        "steps": steps, "summary": {"step_time_s_median": step},
        "resources": {"sampled": {}},
        "paths": {"profiles": ["p.lprof"] if profiled else [], "metrics": []},
    }  # fmt: skip
    if prediction is not None:
        data["prediction"] = prediction.as_json()
    (run / "run.json").write_text(json.dumps(data))
    return run


def _checks(*paths: Path) -> list[Any]:
    return speedup_checks(labelled([load_item(str(p)) for p in paths])[0])


def test_the_speedup_over_the_measured_setting_beside_it_is_judged(tmp_path: Path) -> None:
    """The node ran at another pace than in the measured run: 277 samples/s misses the
    300-380 range, but over the baselines beside it (median 146) the speedup is 1.90x: held."""
    bases = [_run(tmp_path, r, cores=1, workers=1) for r in (146.7, 142.7, 147.5)]
    tuned = _run(tmp_path, 277.0, cores=2, workers=2, prediction=PREDICTION)
    (c,) = _checks(*bases, tuned)
    assert c.measured == pytest.approx(277.0 / 146.7)
    assert c.verdict == INSIDE and c.finding() is None
    assert [b.key for b in c.baselines] == ["#1", "#2", "#3"]
    item = load_item(str(tuned))
    assert item.predicted is not None and item.predicted.missed  # samples/s: outside
    titles = [str(t.title) for t in tables([load_item(str(p)) for p in (*bases, tuned)])]
    assert "Speedup against the measured setting" in titles
    # why the samples/s missed, measured: the measured setting's pace here against the
    # measured run's (the prediction's expected samples/s over its expected speedup)
    assert c.measured_run_rate == pytest.approx(340.0 / 1.9)
    note = c.held_note()
    assert note is not None
    assert note.startswith("#4 run-3: the speedup held (1.89x within 1.60-2.40x)")
    assert "ran here at 146.7 samples/s, the measured run at 178.9 (-18%)" in note


def test_a_speedup_below_its_range_is_prediction_missed_naming_the_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _run(tmp_path, 231.0, cores=1, workers=1)
    tuned = _run(tmp_path, 350.0, cores=2, workers=2, prediction=PREDICTION)
    (c,) = _checks(base, tuned)
    assert c.verdict == MISSED and c.held_note() is None
    text = c.finding()
    assert text is not None and text.startswith("#2 run-1: speedup 1.52x against #1")
    assert main(["compare", str(base), str(tuned), "--no-plots"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"{FINDING_ID}: #2 run-1: speedup 1.52x against #1" in out
    assert main(["compare", str(base), str(tuned), "--format", "json"]) == 0
    (checked,) = json.loads(capsys.readouterr().out)["speedup_checks"]
    assert checked["verdict"] == MISSED and checked["baselines"] == [base.name]


def test_a_speedup_above_its_range_is_better_than_predicted(tmp_path: Path) -> None:
    base = _run(tmp_path, 100.0, cores=1, workers=1)
    tuned = _run(tmp_path, 300.0, cores=2, workers=2, prediction=PREDICTION)
    (c,) = _checks(base, tuned)
    assert c.verdict == BETTER and "better than predicted" in (c.finding() or "")


@pytest.mark.parametrize(
    "other",
    [
        {"profiled": True},  # its rate carries the profiler's cost
        {"cost": "high"},  # another job
        {"cores": 2},  # not the measured setting
    ],
)
def test_only_plain_runs_of_the_same_job_at_the_measured_setting_are_baselines(
    tmp_path: Path, other: dict[str, Any]
) -> None:
    kw: dict[str, Any] = {"cores": 1, "workers": 1, **other}
    base = _run(tmp_path, 146.0, **kw)
    tuned = _run(tmp_path, 277.0, cores=2, workers=2, prediction=PREDICTION)
    assert _checks(base, tuned) == []


def test_a_prediction_without_its_baseline_is_not_checked(tmp_path: Path) -> None:
    """A report from before the baseline was written: nothing to judge the speedup against."""
    old = Prediction(
        setting=PREDICTION.setting,
        step_s=PREDICTION.step_s,
        speedup=PREDICTION.speedup,
        samples_per_s=PREDICTION.samples_per_s,
    )
    base = _run(tmp_path, 146.0, cores=1, workers=1)
    tuned = _run(tmp_path, 277.0, cores=2, workers=2, prediction=old)
    assert _checks(base, tuned) == []
    assert Prediction.from_json(old.as_json()).baseline is None
    assert Prediction.from_json(PREDICTION.as_json()) == PREDICTION


@pytest.mark.parametrize("bad", [{"num_workers": -1}, {"num_workers": True}, [1, 2], "x"])
def test_a_malformed_baseline_in_a_report_is_refused(bad: object) -> None:
    data = {**PREDICTION.as_json(), "baseline": bad}
    with pytest.raises(ValueError, match=r"prediction\.baseline"):
        Prediction.from_json(data)
