"""The bundled scripts' step events cover every optimizer step once (issue 33 §1: one run, one
number). Before, each epoch's test restarted the clock and dropped the steps trained since the
last event, and the next epoch's first event (one step long, with the DataLoader's start-up)
was weighed by the reader as a whole --log-interval: the events' seconds summed to 13.4 s for a
training of 10.0 s, and the run's steady window read 34 % under its end event's rate.

Here the scripts' ``Progress`` is driven on a clock of the test's, as the scripts drive it (the
clock restarted at each epoch, a test between epochs, an event every --log-interval batches),
and the window tuneadvisor reads from those events must give the training's own figures."""

from __future__ import annotations

import importlib.util
import json
import sys
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuneadvisor.relaunch.measurements import Measurements
from tuneadvisor.runrecord.json_fields import JsonFields
from tuneadvisor.runrecord.measured import Step
from tuneadvisor.runrecord.window import steady_window, window

TRAINING = Path(__file__).resolve().parents[2] / "training"
BATCH = 64


def _trainkit() -> ModuleType:
    pytest.importorskip("torch")
    name = "trainkit_under_test"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, TRAINING / "trainkit.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _train(
    epochs: list[list[float]], test_s: float, interval: int
) -> tuple[list[dict[str, Any]], float]:
    """The events ``Progress`` writes for these step times (seconds, per epoch), driven as
    mnist_single.main and train() drive it; and the training time (tests left out)."""
    clock = Clock()
    trainkit = _trainkit()
    out = StringIO()
    trained = 0.0
    with pytest.MonkeyPatch.context() as mp, redirect_stdout(out):
        mp.setattr(trainkit, "time", SimpleNamespace(perf_counter=clock))
        progress = trainkit.Progress(None)
        for epoch, times in enumerate(epochs, start=1):
            progress.restart_clock()
            for batch_idx, t in enumerate(times):
                clock.now += t
                trained += t
                progress.step(BATCH)
                if batch_idx % interval == 0:
                    progress.report(epoch, 1.0)
            clock.now += test_s  # the test after the epoch: not training
    lines = out.getvalue().splitlines()
    events = [json.loads(line.split(" ", 1)[1]) for line in lines if line.startswith("TUNEADV")]
    return events, trained


def _steps(events: list[dict[str, Any]]) -> list[Step]:
    return [Step.from_json(JsonFields(e, None)) for e in events if e["event"] == "step"]


def test_two_epochs_with_a_test_between_read_as_the_training_time() -> None:
    # 25 steps an epoch, an event every 10 batches (steps 1, 11, 21, 26, 36, 46), the first
    # step of each epoch 1 s (the DataLoader's workers starting), the others 0.1 s
    epoch = [1.0] + [0.1] * 24
    events, trained = _train([epoch, epoch], test_s=5.0, interval=10)
    steps = _steps(events)
    whole = window(steps)
    assert whole is not None and whole.step_s is not None
    # the last 4 steps are not reported yet
    assert whole.step_s * whole.steps == pytest.approx(trained - 4 * 0.1, abs=1e-4)
    assert whole.steps == 46
    assert [s.covers for s in steps] == [1, 10, 10, 5, 10, 10]
    # the steady window (after the first 3 steps): the events from step 11 on, steps 2-46,
    # the second epoch's slow first step in it
    steady = steady_window(steps)
    assert steady is not None and steady.step_s is not None
    assert steady.steps == 45
    assert steady.step_s == pytest.approx((trained - 4 * 0.1 - 1.0) / 45, rel=1e-4)


@given(
    epochs=st.lists(
        st.lists(st.floats(0.001, 2.0), min_size=1, max_size=30), min_size=1, max_size=4
    ),
    test_s=st.floats(0.0, 30.0),
    interval=st.integers(1, 12),
)
def test_the_events_cover_every_reported_step_once_over_its_own_time(
    epochs: list[list[float]], test_s: float, interval: int
) -> None:
    events, _ = _train(epochs, test_s, interval)
    steps = _steps(events)
    flat = [t for times in epochs for t in times]
    reported = steps[-1].step
    found = window(steps)
    assert found is not None and found.step_s is not None
    # the seconds of steps 1..reported, whatever the epochs and tests between them (the
    # events round to the microsecond)
    assert found.step_s * found.steps == pytest.approx(sum(flat[:reported]), rel=1e-3, abs=1e-4)
    assert sum(s.covers or 0 for s in steps) == reported
    assert found.samples_per_s == pytest.approx(BATCH * reported / sum(flat[:reported]), rel=1e-3)


def test_a_run_records_summary_is_its_training_over_the_steady_steps() -> None:
    """run.json's summary from those events: the steady window is the seconds of the steps
    after the warm-up over their count, each epoch's slow first step counted once."""
    epoch = [1.0] + [0.1] * 29
    events, _ = _train([epoch, epoch, epoch], test_s=2.0, interval=10)
    gathered = Measurements()
    gathered.add({"event": "start", "batch_size": BATCH})
    for event in events:
        gathered.add(event)
    summary = gathered.summary()
    # events at steps 1, 11, ..., 81: the window is the events from 11 on, steps 2-81
    flat = epoch * 3
    expected = sum(flat[1:81]) / 80
    assert summary.step_time_s == pytest.approx(expected, rel=1e-4)
    assert summary.samples_per_s == pytest.approx(BATCH / expected, rel=1e-4)


def test_an_old_record_s_first_event_at_step_1_is_one_step() -> None:
    """Records written before events said their steps: an event at step 1 has one step
    behind it, not the --log-interval of the events after it."""
    times = {1: 2.0, 11: 0.1, 21: 0.1}
    steps = [
        Step(n, BATCH / t, t, {"step": n, "step_time_s": t, "samples_per_s": BATCH / t})
        for n, t in times.items()
    ]
    found = window(steps)
    assert found is not None and found.step_s is not None
    assert found.steps == 21
    assert found.step_s == pytest.approx((2.0 + 20 * 0.1) / 21)
