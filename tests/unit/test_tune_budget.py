"""`tune` says what its time budget left out, and how much each setting's runs differ
(issue 24, point 10): `tune --budget 120` skipped its batch, AMP and pin stages without a
word and wrote `"stopped": null`; the table gave a spread without saying that one run per
setting has none over repeats. The runner is replaced by recorded outcomes that take 10 s
each on the tuner's clock."""

from __future__ import annotations

import dataclasses
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from rich.console import Console

from tuneadvisor.commands.tune import _print_result
from tuneadvisor.relaunch.bundled import bundled
from tuneadvisor.relaunch.records import RunRecord
from tuneadvisor.relaunch.runner import RunRequest
from tuneadvisor.relaunch.settings import Settings
from tuneadvisor.tune import tuner as tune_mod
from tuneadvisor.tune.tuner import TuneOptions, Tuner, summary_lines, write_tune_summary

TRIAL_S = 10.0


class TimedRuns:
    """run_local's stand-in: each run takes TRIAL_S on the shared clock; its rate is the
    next of ``rates`` (round and round), the same over its steps."""

    def __init__(self, rates: Sequence[float]) -> None:
        self.now = 0.0
        self.rates = rates
        self.calls: list[Settings] = []

    def clock(self) -> float:
        return self.now

    def __call__(self, req: RunRequest, on_event: object = None) -> RunRecord:
        self.now += TRIAL_S
        self.calls.append(req.settings)
        rate = self.rates[(len(self.calls) - 1) % len(self.rates)]
        steps = [{"step": i, "samples_per_s": rate, "step_time_s": 64 / rate} for i in range(1, 16)]
        return RunRecord.from_json(
            {"kind": "tuneadvisor-run", "id": f"run{len(self.calls)}", "status": "completed",
             "steps": steps}
        )  # fmt: skip


def tuner(tmp_path: Path, runs: TimedRuns, **options: object) -> Tuner:
    base = Settings(cpus_per_task=1, gpus=1, knobs={"num_workers": 0, "batch_size": 64})
    request = RunRequest(bundled("mnist_single"), base, tmp_path, "python", tmp_path)
    return Tuner(request, TuneOptions(**options), clock=runs.clock)  # type: ignore[arg-type]


def test_stages_the_budget_never_reached_are_named_in_text_and_tune_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = TimedRuns([100.0])
    monkeypatch.setattr(tune_mod, "run_local", runs)
    # the base (10 s) and one workers trial (20 s) fit 25 s; a third trial would not
    result = tuner(tmp_path, runs, budget_s=25.0, max_cores=1).run()
    assert len(runs.calls) == 2
    assert result.skipped == ["batch", "amp", "pin"] and result.cut_short == []
    assert result.stopped == (
        "time budget of 25 s reached (20 s used, a trial takes about 10 s): not run: batch, "
        "amp, pin; a larger --budget gives them time"
    )
    assert f"stopped: {result.stopped}" in summary_lines(result)
    written = json.loads(write_tune_summary(tmp_path, result, {}).read_text())
    assert written["stopped"] == result.stopped
    assert written["skipped"] == ["batch", "amp", "pin"]


def test_a_stage_the_budget_ends_midway_is_cut_short(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = TimedRuns([100.0, 101.0])  # no worker setting pays: the walk goes on
    monkeypatch.setattr(tune_mod, "run_local", runs)
    result = tuner(tmp_path, runs, budget_s=35.0, max_cores=4, stages=("workers", "amp")).run()
    assert result.cut_short == ["workers"] and result.skipped == ["amp"]
    assert result.stopped is not None and "cut short: workers; not run: amp" in result.stopped


def test_a_budget_that_fits_every_stage_says_nothing_about_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = TimedRuns([100.0])
    monkeypatch.setattr(tune_mod, "run_local", runs)
    result = tuner(tmp_path, runs, budget_s=1000.0, max_cores=1).run()
    assert [c.knobs.get("pin_memory") for c in runs.calls][-1] is True  # pin ran last
    assert result.stopped is None and result.skipped == [] and result.cut_short == []


def table_text(result: tune_mod.TuneResult) -> str:
    console = Console(file=io.StringIO(), width=160, color_system=None)
    _print_result(console, "mnist_single", result)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(out, str)
    return out


def test_each_setting_shows_its_lowest_and_highest_repeat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = TimedRuns([90.0, 110.0, 100.0])  # each setting's three repeats
    monkeypatch.setattr(tune_mod, "run_local", runs)
    result = tuner(tmp_path, runs, repeats=3, stages=("amp",)).run()
    assert [t.rate_range for t in result.trials] == [
        pytest.approx((90.0, 110.0)),
        pytest.approx((90.0, 110.0)),
    ]
    text = table_text(result)
    assert "repeats" in text and "90.0-110.0" in text
    assert not any("no spread over repeats" in line for line in summary_lines(result))
    written = json.loads(write_tune_summary(tmp_path, result, {}).read_text())
    assert written["base"]["range"] == pytest.approx([90.0, 110.0]) and written["repeats"] == 3


def test_one_repeat_says_there_is_no_spread_over_repeats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = TimedRuns([100.0])
    monkeypatch.setattr(tune_mod, "run_local", runs)
    result = tuner(tmp_path, runs, stages=("amp",)).run()
    assert [t.rate_range for t in result.trials] == [None, None]
    assert "one run" in table_text(result)
    assert any("no spread over repeats" in line for line in summary_lines(result))
    written = json.loads(write_tune_summary(tmp_path, result, {}).read_text())
    assert written["base"]["range"] is None and written["repeats"] == 1


def test_the_trials_table_at_100_columns_keeps_each_figure_with_its_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33 §4: `tune` wrapped `%` onto a line of its own at 100 columns."""
    runs = TimedRuns([90.0, 110.0, 100.0])
    monkeypatch.setattr(tune_mod, "run_local", runs)
    result = tuner(tmp_path, runs, repeats=3, stages=("amp",)).run()
    # the settings as long as a report's: 8 cpu, 1 gpu, workers 7, batch 128, amp, input high
    long = Settings(cpus_per_task=8, gpus=1, knobs={"num_workers": 7, "batch_size": 128,
                    "amp": True, "input_cost": "high"})  # fmt: skip
    base = dataclasses.replace(long, knobs={**long.knobs, "amp": False})
    result.trials = [dataclasses.replace(t, settings=base if t.stage == "base" else long)
                     for t in result.trials]  # fmt: skip
    result.best = result.trials[-1]
    console = Console(file=io.StringIO(), width=100, color_system=None)
    _print_result(console, "mnist_single", result)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert rows and all(not re.search(r"│\s+%\s+│", line) for line in rows), out
    assert all(len(line) <= 100 for line in out.splitlines())
    # one line a trial: no "amp *" wrapped onto a line of its own; what all share said once
    assert len(rows) == len(result.trials), out
    assert "amp *" in rows[-1] and "every trial: 8 cpu" in out and "workers 7" in out
