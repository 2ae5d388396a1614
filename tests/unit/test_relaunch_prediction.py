"""A relaunch records the report's prediction beside its measurement, and compare checks it:
predicted against measured, and ``prediction-missed`` saying what differed (issue 21)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuneadvisor.advisor.prediction import Prediction, Span
from tuneadvisor.cli import main
from tuneadvisor.compare.tables import findings, load_item, prediction_table, tables
from tuneadvisor.errors import InputError
from tuneadvisor.present.prediction_text import headline
from tuneadvisor.relaunch.predicted import FINDING_ID, check
from tuneadvisor.relaunch.records import RunRecord, read_record, write_record
from tuneadvisor.relaunch.requests import RelaunchRequest, advised_settings
from tuneadvisor.relaunch.saved_report import read_report
from tuneadvisor.relaunch.settings import Settings

BATCH = 64
# the report's plan: 4 cores, 3 workers; 20-25 ms a step (2,560-3,200 samples/s)
PREDICTION = Prediction(
    setting={"cpus_per_task": 4, "num_workers": 3},
    step_s=Span(0.020, 0.022, 0.025),
    speedup=Span(2.0, 2.3, 2.6),
    samples_per_s=Span(BATCH / 0.025, BATCH / 0.022, BATCH / 0.020),
    basis=("DataLoader wait per step 0.03 s: measured, the profile",),
)


def _steps(times: list[float]) -> list[dict[str, Any]]:
    return [
        {"event": "step", "step": i + 1, "step_time_s": t, "samples_per_s": BATCH / t}
        for i, t in enumerate(times)
    ]


def _record(
    folder: Path,
    times: list[float],
    *,
    cores: int = 4,
    sampled: dict[str, float] | None = None,
    prediction: dict[str, Any] | None = None,
    resources: dict[str, Any] | None = None,
) -> Path:
    """A local run of the plan's setting with these step times, as run.json keeps it."""
    run = folder / f"run-{len(list(folder.iterdir())) if folder.exists() else 0}"
    run.mkdir(parents=True)
    data = {
        "kind": "tuneadvisor-run", "schema": 1, "id": run.name, "name": "mnist_single",
        "label": run.name, "status": "completed", "where": "local",
        "settings": Settings(cpus_per_task=4, knobs={"num_workers": 3}).to_json(),
        "allocation": {"job_id": "1", "hostname": "h", "cores": [list(range(cores))],
                       "env": {}, "notes": []},
        "steps": _steps(times), "summary": {"step_time_s_median": sorted(times)[len(times) // 2]},
        "resources": {"sampled": sampled or {}, **(resources or {})},
        "prediction": PREDICTION.as_json() if prediction is None else prediction,
        "paths": {"profiles": [], "metrics": []},
    }  # fmt: skip
    (run / "run.json").write_text(json.dumps(data))
    return run


STEADY = [0.021, 0.022, 0.0225, 0.022, 0.0215, 0.022, 0.023, 0.022, 0.021, 0.022]


def test_a_run_records_its_prediction_and_reads_it_back(tmp_path: Path) -> None:
    record = read_record(_record(tmp_path, STEADY))
    assert Prediction.from_json(record.prediction) == PREDICTION
    copy = tmp_path / "copy"
    copy.mkdir()
    write_record(copy, record)
    assert read_record(copy) == record


@pytest.mark.parametrize("value", ["absent", None])
def test_an_older_record_without_a_prediction_still_loads(
    tmp_path: Path, value: str | None
) -> None:
    data: dict[str, Any] = {
        "kind": "tuneadvisor-run",
        "id": "old",
        "status": "completed",
        "steps": _steps(STEADY),
    }
    if value is None:
        data["prediction"] = None
    record = RunRecord.from_json(data)
    assert record.prediction is None and check(record) is None
    assert "prediction" not in record.to_json()


def test_a_recorded_prediction_that_is_not_one_is_an_error_naming_the_run(tmp_path: Path) -> None:
    run = _record(
        tmp_path, STEADY, prediction={**PREDICTION.as_json(), "setting": {"num_workers": -1}}
    )
    with pytest.raises(InputError) as caught:
        load_item(str(run))
    assert str(run / "run.json") in str(caught.value)
    assert "prediction.setting.num_workers: must be at least 0" in str(caught.value)


def _report(tmp_path: Path, prediction: object) -> Path:
    report: dict[str, Any] = {
        "tool": {"name": "tuneadvisor", "version": "0.1.0", "schema": 1},
        "profile": None,
        "job": {"path": "mnist.sbatch", "directives": {"cpus-per-task": "1"}},
        "findings": [],
        "advice": {
            "plan": {
                "sbatch": {"cpus-per-task": {"value": 4, "because": ["dataloader-bound"]}},
                "script": {"num_workers": {"value": 3, "because": ["dataloader-bound"]}},
                "env": {}, "notes": [],
            },
            "prediction": prediction,
            "no_prediction": None,
        },
    }  # fmt: skip
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    return path


def test_run_from_a_report_takes_its_prediction(tmp_path: Path) -> None:
    path = _report(tmp_path, PREDICTION.as_json())
    advised = advised_settings(RelaunchRequest("mnist_single", from_report=str(path)))
    assert advised.prediction == PREDICTION and advised.source == str(path)
    assert advised.settings is not None and advised.settings.cpus_per_task == 4
    none = _report(tmp_path, None)
    assert (
        advised_settings(RelaunchRequest("mnist_single", from_report=str(none))).prediction is None
    )


@pytest.mark.parametrize(
    "bad",
    [
        "fast",
        {**PREDICTION.as_json(), "step_s": {"low": 0.03, "expected": 0.02, "high": 0.04}},
        {**PREDICTION.as_json(), "setting": {"num_workers": True}},
        {**PREDICTION.as_json(), "basis": "measured"},
    ],
)
def test_run_from_a_report_with_a_malformed_prediction_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: object
) -> None:
    path = _report(tmp_path, bad)
    with pytest.raises(InputError):
        read_report(str(path))
    code = main(["run", "mnist_single", "--from", str(path), "--runs", str(tmp_path / "runs"),
                 "--data-dir", str(tmp_path)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and str(path) in err and "prediction" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "runs").exists()  # refused before anything ran


# --------------------------------------------------------------------------- the check


def test_a_run_inside_its_range_is_no_finding(tmp_path: Path) -> None:
    result = check(read_record(_record(tmp_path, [0.09, 0.05, 0.03, *STEADY])))
    assert result is not None and not result.missed and result.finding() is None
    assert result.step_s is not None and PREDICTION.step_s.contains(result.step_s.value)
    assert result.verdict() == "within the range"


def _missed(tmp_path: Path, times: list[float], **kw: Any) -> tuple[str, ...]:
    result = check(read_record(_record(tmp_path, times, **kw)))
    assert result is not None and result.missed
    text = result.finding()
    assert text is not None and "against 20.0-25.0 ms predicted" in text
    return result.reasons


SLOW = [0.040, 0.041, 0.039, 0.040, 0.042, 0.040, 0.041, 0.040]  # 40 ms: twice the range


def test_a_miss_with_fewer_cores_than_asked_says_so(tmp_path: Path) -> None:
    (reason,) = _missed(tmp_path, [0.04, 0.04, 0.04, *SLOW], cores=2)
    assert "fewer cores than the prediction assumed: 2 per task against cpus_per_task 4" in reason


def test_a_miss_with_workers_bound_to_one_cpu_says_so(tmp_path: Path) -> None:
    sampled = {"affinity_min_cpus": 1.0, "affinity_short_ranks": 1.0, "cores_used": 2.5}
    (reason,) = _missed(tmp_path, [0.04, 0.04, 0.04, *SLOW], sampled=sampled)
    assert "a rank and its 3 workers bound to 1 CPU" in reason and "of the 4" in reason


def test_a_miss_with_slow_first_steps_names_the_warm_up(tmp_path: Path) -> None:
    (reason,) = _missed(tmp_path, [0.4, 0.3, 0.2, *SLOW])
    assert "a warm-up: the first steps took 7.5x the steady ones" in reason


def test_a_miss_with_idle_cores_never_names_storage_without_storage_evidence(
    tmp_path: Path,
) -> None:
    (reason,) = _missed(tmp_path, [0.04, 0.04, 0.04, *SLOW], sampled={"cores_used": 1.2})
    assert "the run left cores idle: 1.20 of 4 in use" in reason
    assert "storage is not named" in reason and "comes from storage" not in reason


def test_a_miss_on_a_busy_machine_is_cpu_starvation(tmp_path: Path) -> None:
    """Issue 31 §4: the data in memory, other processes holding the CPUs: the run used fewer
    cores than it was allowed while the machine's were all busy."""
    sampled = {"cores_used": 1.2, "node_cores": 4.0, "node_busy_cores": 3.9}
    (reason,) = _missed(tmp_path, [0.04, 0.04, 0.04, *SLOW], sampled=sampled)
    assert reason.startswith("CPU starvation: the run used 1.20 of the 4 cores it was allowed")
    assert "98 % busy" in reason and "other processes held 2.70 cores" in reason
    assert "storage" not in reason


def _others(others: float, busy: float, used: float = 1.2) -> dict[str, Any]:
    """A local run's own measures: its cores used, and other load on its 4 CPUs."""
    return {
        "cpu_s": used * 10, "cores_used": used, "cores_allowed": 4,
        "cpu_others": {"allowed_cpus": [0, 1, 2, 3], "busy_cores": busy, "own_cores": used,
                       "others_cores": others, "wall_s": 10.0, "not_read": {}},
    }  # fmt: skip


def test_a_miss_of_a_run_without_watch_is_cpu_starvation_from_its_record(
    tmp_path: Path,
) -> None:
    """A --no-watch run has no samples: its record's own measure of other load names it."""
    (reason,) = _missed(tmp_path, [0.04, 0.04, 0.04, *SLOW], resources=_others(2.7, 3.9))
    assert reason.startswith("CPU starvation: the run used 1.20 of the 4 cores it was allowed")
    assert "other processes held 2.70 of the 4 CPUs it could use (98 % busy" in reason
    assert "storage" not in reason


def test_a_miss_on_cpus_of_its_own_is_no_starvation(tmp_path: Path) -> None:
    """Others held next to nothing (a Slurm job's own cores): idle cores, not starvation."""
    (reason,) = _missed(tmp_path, [0.04, 0.04, 0.04, *SLOW], resources=_others(0.02, 1.22))
    assert "starvation" not in reason and "the run left cores idle: 1.20 of 4" in reason


def test_a_miss_with_none_of_the_causes_says_none_showed(tmp_path: Path) -> None:
    result = check(read_record(_record(tmp_path, [0.04, 0.04, 0.04, *SLOW])))
    assert result is not None and result.reasons == ()
    assert "none of the known causes showed" in (result.finding() or "")


def test_a_faster_run_than_predicted_is_a_miss_too(tmp_path: Path) -> None:
    fast = [0.010, 0.011, 0.010, 0.010, 0.011, 0.010]
    result = check(read_record(_record(tmp_path, [0.01, 0.01, 0.01, *fast])))
    assert result is not None and result.missed


def test_a_faster_run_is_better_than_predicted_never_idle_workers(tmp_path: Path) -> None:
    fast = [0.010, 0.011, 0.010, 0.010, 0.011, 0.010]
    run = _record(tmp_path, [0.01, 0.01, 0.01, *fast], sampled={"cores_used": 0.5})
    result = check(read_record(run))
    assert result is not None and result.missed
    assert result.reasons[0].startswith("better than predicted: 10.3 ms a step, faster than")
    assert not any("idle" in r or "storage" in r for r in result.reasons)


def test_compare_shows_predicted_against_measured_and_the_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _record(tmp_path, [0.05, 0.05, 0.05, *STEADY])
    bad = _record(tmp_path, [0.04, 0.04, 0.04, *SLOW], cores=2)
    items = [load_item(str(good)), load_item(str(bad))]
    table = prediction_table(items)
    assert table is not None
    assert "Predicted against measured" in [str(t.title) for t in tables(items)]
    (line,) = findings(items)
    # the run as the tables name it: its row (#2) and its label
    assert line.startswith(f"#2 {bad.name}: step time 40.") and "fewer cores" in line
    assert main(["compare", str(good), str(bad), "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert "Predicted against measured" in out and "within the range" in out
    assert f"{FINDING_ID}: #2 {bad.name}" in " ".join(out.split())
    assert main(["compare", str(good), str(bad), "--format", "json"]) == 0
    good_json, bad_json = json.loads(capsys.readouterr().out)["items"]
    assert good_json["prediction"]["finding"] is None
    # the steady window's seconds over its steps: the mean step time, not the median
    assert good_json["prediction"]["measured"]["step_s"]["value"] == pytest.approx(
        sum(STEADY) / len(STEADY)
    )
    assert bad_json["prediction"]["finding"]["id"] == FINDING_ID
    assert bad_json["prediction"]["predicted"] == PREDICTION.as_json()


def test_the_missed_line_names_the_run_by_the_short_label_the_tables_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run ids that share their date and script: the tables and plots show ``143506-6fdf``,
    and so does ``prediction-missed`` (never the whole id, a line wrapped on a terminal)."""
    runs = []
    for run_id, times in (
        ("20261206-143506-mnist_single-6fdf", [0.05, 0.05, 0.05, *STEADY]),
        ("20261206-150211-mnist_single-a03c", [0.04, 0.04, 0.04, *SLOW]),
    ):
        made = _record(tmp_path, times, cores=2)
        data = json.loads((made / "run.json").read_text())
        data["id"] = data["label"] = run_id
        runs.append(made.rename(tmp_path / run_id))
        (tmp_path / run_id / "run.json").write_text(json.dumps(data))
    (line,) = findings([load_item(str(r)) for r in runs])
    assert line.startswith("#2 150211-a03c: step time 40.")
    assert main(["compare", *map(str, runs), "--no-plots"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"{FINDING_ID}: #2 150211-a03c: step time" in out
    assert "│ 150211-a03c" in out or " 150211-a03c " in out  # the table's own label
    assert "20261206-150211-mnist_single-a03c" not in out


def test_compare_without_predictions_has_no_such_table(tmp_path: Path) -> None:
    run = _record(tmp_path, STEADY)
    data = json.loads((run / "run.json").read_text())
    del data["prediction"]
    (run / "run.json").write_text(json.dumps(data))
    assert prediction_table([load_item(str(run))]) is None


@given(
    name=st.text(
        alphabet=st.sampled_from(["a", "{", "}", "1", "\x1b", "]", "\x07", "\x9b", "\n", "_"]),
        min_size=1,
        max_size=30,
    )
)
def test_a_setting_name_from_a_report_is_shown_as_text_never_obeyed(name: str) -> None:
    """Issue 34: a prediction's setting names come from a saved report (`run --from`) or a
    run record; ``{1}`` in one raised IndexError (used as a format string) and an escape
    reached the terminal. Shown: one line, no control character."""
    span = Span(0.1, 0.2, 0.3)
    shown = headline(Prediction({name: 4}, span, Span(1.0, 1.5, 2.0)))
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in shown), shown
