"""`run --from REPORT` sizes for the machine it runs on (issue 31 §1): the report sized for
an assumed 64-core node; the processes run here, on these cores."""

from __future__ import annotations

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
