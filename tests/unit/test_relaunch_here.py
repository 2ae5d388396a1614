"""`run --from REPORT` sizes for the machine it runs on (issue 31 §1): the report sized for
an assumed 64-core node; the processes run here, on these cores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tuneadvisor.relaunch.here import sized_here
from tuneadvisor.relaunch.saved_report import SavedReport, parse_report
from tuneadvisor.relaunch.settings import Settings, settings_from_report

EXAMPLE = ["examples/mnist/24752610.lprof", "--job", "examples/mnist/mnist.sbatch"]


@pytest.fixture
def report(example_report: Any) -> Any:
    return example_report


def saved(report: Any) -> SavedReport:
    return parse_report(report, "r.json")


def test_a_two_core_machine_runs_the_models_two_core_setting(report: Any) -> None:
    settings = settings_from_report(Settings(), saved(report))
    prediction = saved(report).prediction
    assert prediction is not None and prediction.assumed_node is not None
    assert (settings.cpus_per_task, settings.knobs["num_workers"]) == (8, 7)
    here = sized_here(saved(report).facts, settings, prediction, 2)
    assert (here.settings.cpus_per_task, here.settings.knobs["num_workers"]) == (2, 2)
    assert here.prediction is not None
    assert here.prediction.setting == {"num_workers": 2, "cpus_per_task": 2}
    assert here.prediction.assumed_node is None  # this machine is known
    assert here.prediction.speedup.expected < prediction.speedup.expected
    note = here.settings.notes[-1]
    assert "this machine (2 cores)" in note and "--cpus-per-task 8" in note


def test_the_same_size_here_changes_nothing(report: Any) -> None:
    settings = settings_from_report(Settings(), saved(report))
    prediction = saved(report).prediction
    here = sized_here(saved(report).facts, settings, prediction, 64)
    assert here.settings == settings


def test_a_machine_where_nothing_helps_runs_the_measured_setting(report: Any) -> None:
    settings = settings_from_report(Settings(), saved(report))
    here = sized_here(saved(report).facts, settings, saved(report).prediction, 1)
    assert (here.settings.cpus_per_task, here.settings.knobs["num_workers"]) == (1, 1)
    assert here.prediction is None and "no gain" in here.settings.notes[-1]


def test_a_report_without_facts_is_run_as_it_says(report: Any) -> None:
    del report["advice"]["facts"]
    settings = settings_from_report(Settings(), saved(report))
    assert sized_here(saved(report).facts, settings, None, 2).settings == settings


def test_run_from_a_report_says_the_sizing_once_before_the_run_not_again_in_the_summary(
    report: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The note on what sizing here changed goes before the run (where it can still be
    stopped); the record keeps it, and the summary after the run does not repeat it."""
    import json

    from tuneadvisor.cli import main
    from tuneadvisor.relaunch import local_allocation, preflight, runner
    from tuneadvisor.relaunch.records import read_record

    saved_path = tmp_path / "report.json"
    saved_path.write_text(json.dumps(report))
    data = tmp_path / "data"
    (data / "MNIST" / "raw").mkdir(parents=True)
    (data / "MNIST" / "raw" / "train-images-idx3-ubyte").write_bytes(b"")
    monkeypatch.setattr(local_allocation, "available_cores", lambda: [0, 1])
    monkeypatch.setattr(preflight, "require_torch", lambda python: None)
    ran: list[Any] = []

    def run_local(req: Any, on_event: Any = None) -> Any:
        # run.json as the runner writes it: the settings' notes, then the run's own
        ran.append(req)
        folder = tmp_path / "runs" / "one"
        folder.mkdir(parents=True)
        record = {
            "kind": "tuneadvisor-run", "schema": 1, "id": "one", "name": req.spec.name,
            "status": "completed", "settings": req.settings.to_json(),
            "paths": {"profiles": [], "metrics": []},
            "notes": [*req.settings.notes, "a note of the run itself"],
        }  # fmt: skip
        (folder / "run.json").write_text(json.dumps(record))
        return read_record(folder)

    monkeypatch.setattr(runner, "run_local", run_local)
    args = ["run", "mnist_single", "--from", str(saved_path), "--no-watch", "--data-dir",
            str(data), "--runs", str(tmp_path / "runs")]  # fmt: skip
    assert main(args) == 0
    (req,) = ran
    (sized,) = [n for n in req.settings.notes if "this machine (2 cores)" in n]
    assert "--cpus-per-task 8" in sized  # what it changed from the report
    said = capsys.readouterr()
    before, summary = " ".join(said.err.split()), " ".join(said.out.split())  # unwrapped
    assert before.count("this machine (2 cores)") == 1
    assert "this machine" not in summary  # the summary (stdout) leaves it out
    assert "a note of the run itself" in summary  # the run's own notes are still said
    assert read_record(tmp_path / "runs" / "one").notes[0] == sized  # kept in the record
