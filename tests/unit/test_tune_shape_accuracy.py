"""tune's words agree with what it measured (issue 33 §3): a winner whose accuracy dropped is
flagged with both figures, and a tune started from a report whose cores this machine does not
have keeps the report's cores, workers and GPUs in the job it writes, saying why."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from tuneadvisor.relaunch.bundled import bundled
from tuneadvisor.relaunch.records import RunRecord
from tuneadvisor.relaunch.runner import RunRequest
from tuneadvisor.relaunch.settings import Settings
from tuneadvisor.tune import tuner as tune_mod
from tuneadvisor.tune.tuner import TuneOptions, Tuner, winning_settings

Key = tuple[int, int, int, bool]  # cores, workers, batch, amp


class FakeRuns:
    """Stands in for run_local: each setting's samples/s and test accuracy, measured once."""

    def __init__(self, outcomes: Mapping[Key, tuple[float, float]]) -> None:
        self.outcomes = outcomes

    def __call__(self, req: RunRequest, on_event: object = None) -> RunRecord:
        s = req.settings
        key = (s.cpus_per_task, int(str(s.knobs.get("num_workers"))),
               int(str(s.knobs.get("batch_size", 64))), bool(s.knobs.get("amp")))  # fmt: skip
        rate, accuracy = self.outcomes[key]
        steps = [{"step": i, "samples_per_s": rate} for i in range(1, 8)]
        return RunRecord.from_json({
            "kind": "tuneadvisor-run", "id": "r", "status": "completed", "steps": steps,
            "summary": {"final_accuracy": accuracy},
        })  # fmt: skip


def _request(tmp_path: Path, settings: Settings) -> RunRequest:
    return RunRequest(bundled("mnist_single"), settings, tmp_path, "python", tmp_path)


def test_a_winner_that_trains_worse_is_flagged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tune_mod, "run_local", FakeRuns({
        (1, 0, 64, False): (100.0, 0.46), (1, 0, 128, False): (180.0, 0.28),
        (1, 0, 128, True): (100.0, 0.28),
    }))  # fmt: skip
    base = Settings(cpus_per_task=1, knobs={"num_workers": 0, "batch_size": 64})
    options = TuneOptions(max_cores=1, stages=("batch", "amp"))
    result = Tuner(_request(tmp_path, base), options).run()
    assert result.best is not None and result.best.settings.knobs["batch_size"] == 128
    flagged = [d for d in result.decisions if d.startswith("check the winner's accuracy")]
    assert flagged and "28.0 % after its trial against 46.0 % for the base" in flagged[0]
    assert result.to_json()["best"]["accuracy"] == 0.28


def test_a_winner_that_trains_as_well_is_not_flagged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tune_mod, "run_local", FakeRuns({
        (1, 0, 64, False): (100.0, 0.46), (1, 0, 128, False): (180.0, 0.45),
        (1, 0, 128, True): (100.0, 0.45),
    }))  # fmt: skip
    base = Settings(cpus_per_task=1, knobs={"num_workers": 0, "batch_size": 64})
    result = Tuner(_request(tmp_path, base), TuneOptions(max_cores=1, stages=("batch",))).run()
    assert not any(d.startswith("check the winner's accuracy") for d in result.decisions)


def test_a_tune_from_a_report_keeps_its_job_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes = {(c, w, 64, False): (200.0 - 10 * c + w, 0.5) for c in range(1, 9)
                for w in range(0, 9)}  # fmt: skip
    monkeypatch.setattr(tune_mod, "run_local", FakeRuns(outcomes))
    # what `--from report.json` gives: 8 cores, 7 workers and the job's GPU, with reasons
    report = Settings(cpus_per_task=8, gpus=1, knobs={"num_workers": 7, "batch_size": 64},
                      because={"num_workers": ("dataloader-bound",),
                               "sbatch.cpus-per-task": ("dataloader-bound",)})  # fmt: skip
    options = TuneOptions(max_cores=2, stages=("workers",))
    result = Tuner(_request(tmp_path, report), options).run()
    winner = winning_settings(result)
    assert winner is not None
    assert (winner.cpus_per_task, winner.knobs["num_workers"], winner.gpus) == (8, 7, 1)
    said = [d for d in result.decisions if d.startswith("job shape:")]
    assert said and "this machine has 2" in said[0]


def test_a_tune_without_a_report_writes_what_it_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes = {(c, w, 64, False): (100.0 + 30 * c + w, 0.5) for c in range(1, 3)
                for w in range(0, 3)}  # fmt: skip
    monkeypatch.setattr(tune_mod, "run_local", FakeRuns(outcomes))
    base = Settings(cpus_per_task=1, knobs={"num_workers": 0, "batch_size": 64})
    result = Tuner(_request(tmp_path, base), TuneOptions(max_cores=2, stages=("workers",))).run()
    winner = winning_settings(result)
    assert winner is not None and winner.cpus_per_task == 2 and result.kept_shape is None
