"""The run record beside a profile (`tuneadvisor run` wrote both) gives the step-time model
the profiled run's batch size, which a scan of the bundled scripts cannot see (it is set
through a helper), so a prediction has samples/s and not only a step time."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tuneadvisor.cli import main
from tuneadvisor.runrecord import RECORD_NAME

PROFILE = REPO / "examples" / "mnist" / "24752610.lprof"
SOURCE = REPO / "examples" / "mnist" / "mnist_classify.py"


def record(batch: int | None, times: list[float]) -> dict[str, Any]:
    steps = [
        {"event": "step", "step": i, "step_time_s": t, "samples_per_s": (batch or 64) / t}
        for i, t in enumerate(times, 1)
    ]
    return {
        "kind": "tuneadvisor-run", "id": "r1", "status": "completed", "steps": steps,
        "settings": {"cpus_per_task": 1, "knobs": {"num_workers": 1}},
        "start": {"batch_size": batch} if batch else {},
    }  # fmt: skip


def report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["report", str(tmp_path / PROFILE.name), "--format", "json"]) == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def test_the_run_records_batch_size_gives_samples_per_s(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(PROFILE, tmp_path)
    shutil.copy(SOURCE, tmp_path)
    (tmp_path / RECORD_NAME).write_text(json.dumps(record(None, [0.5] * 6)))
    without = report(tmp_path, capsys)["advice"]
    (tmp_path / RECORD_NAME).write_text(json.dumps(record(32, [0.9, 0.7, 0.6, 0.5, 0.5, 0.5])))
    advice = report(tmp_path, capsys)["advice"]
    assert advice["facts"]["run.batch_size"] == 32
    # steady window (after 3 steps): 3 x 32 samples over 1.5 s
    assert advice["facts"]["run.samples_per_s"] == pytest.approx(64.0)
    prediction = advice["prediction"]
    assert prediction["samples_per_s"]["expected"] == pytest.approx(
        32 / prediction["step_s"]["expected"]
    )
    assert any("the run record beside the evidence" in b for b in prediction["basis"])
    # a record that does not say its batch size: the step time, and no rate
    assert without["prediction"]["samples_per_s"] is None
    assert without["prediction"]["step_s"] == prediction["step_s"]
