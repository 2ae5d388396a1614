"""One real, short `run --from REPORT` on the CPU: the report's prediction lands in run.json
beside the measured steps, `run` says it, and `compare` checks it (issue 21)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_run_local import QUICK, _cli, _only_run
from tests.integration.test_training_mnist import _make_data, _need
from tuneadvisor.advisor.prediction import Prediction, Span

pytestmark = [pytest.mark.torch]

# wide enough that a tiny CPU run on a busy machine lands in it, except for its step time
# (a prediction of one microsecond a step: the run misses it, with its reasons)
PREDICTION = Prediction(
    setting={"cpus_per_task": 1, "num_workers": 0},
    step_s=Span(0.000001, 0.000002, 0.000003),
    speedup=Span(1.0, 1.0, 1.0),
)


def test_run_from_a_report_records_the_prediction_and_compare_checks_it(
    tmp_path: Path,
) -> None:
    python = _need("torch", "torchvision")
    mnist = tmp_path / "mnist"
    _make_data(python, mnist, 128, 32)
    report: dict[str, Any] = {
        "tool": {"name": "tuneadvisor", "version": "0.1.0", "schema": 1},
        "profile": None,
        "job": {"path": "mnist.sbatch", "directives": {"cpus-per-task": "1", "ntasks": "1"}},
        "findings": [],
        "advice": {
            "plan": {"sbatch": {}, "script": {}, "env": {}, "notes": []},
            "prediction": PREDICTION.as_json(),
            "no_prediction": None,
        },
    }
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    quick = [a if a != "3" else "6" for a in QUICK]  # 6 steps: 3 of warm-up, 3 measured
    proc = _cli(python, tmp_path, "run", "mnist_single", "--data-dir", str(mnist), "--from",
                str(path), "--no-watch", "--cpus-per-task", "1", "--num-workers", "0",
                *quick)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = _only_run(tmp_path / "runs")
    assert Prediction.from_json(run["prediction"]) == PREDICTION
    assert len(run["steps"]) == 6
    assert "predicted 0.0-0.0 ms a step; measured" in proc.stdout and "(missed)" in proc.stdout
    folder = tmp_path / "runs" / run["id"]
    cmp = _cli(python, tmp_path, "compare", str(folder), "--format", "json")
    assert cmp.returncode == 0, cmp.stderr
    (item,) = json.loads(cmp.stdout)["items"]
    checked = item["prediction"]
    assert checked["verdict"] == "missed" and checked["finding"]["id"] == "prediction-missed"
    assert checked["measured"]["step_s"]["n"] == 3  # the steps after the warm-up
