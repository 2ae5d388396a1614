"""One run, one number (issue 33 §1): a run's throughput and step time are those of its steady
window (runrecord/window.py), and every face prints that figure for one run record: run's last
line, run.json's summary, compare's text and JSON, tune, the run facts the report and the TUI
read, and the check against the prediction. Other figures are labelled for what they are."""

from __future__ import annotations

import json
import re
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from tuneadvisor.advisor.prediction import Prediction, Span
from tuneadvisor.cli import main
from tuneadvisor.commands.run import ProgressView, print_record
from tuneadvisor.compare.tables import load_item, tables
from tuneadvisor.relaunch.measurements import Measurements
from tuneadvisor.relaunch.predicted import check
from tuneadvisor.relaunch.records import RunRecord, read_record
from tuneadvisor.relaunch.settings import Settings
from tuneadvisor.tune.tuner import steady_window

BATCH = 64
PREDICTION = Prediction(
    setting={"cpus_per_task": 2, "num_workers": 1},
    step_s=Span(0.010, 0.011, 0.012),
    speedup=Span(1.0, 1.1, 1.2),
    samples_per_s=Span(BATCH / 0.012, BATCH / 0.011, BATCH / 0.010),
    basis=("a test",),
)


def _events(times: list[float]) -> list[dict[str, Any]]:
    """Progress events as the bundled scripts write them: a start, a step event each step,
    an epoch and an end event whose rate is over the whole training (warm-up included)."""
    steps = [
        {"event": "step", "epoch": 1, "step": i + 1, "step_time_s": t,
         "samples_per_s": BATCH / t, "loss": 1.0}
        for i, t in enumerate(times)
    ]  # fmt: skip
    total = BATCH * len(times)
    return [
        {"event": "start", "batch_size": BATCH},
        *steps,
        {"event": "epoch", "epoch": 1, "accuracy": 0.5, "samples_per_s": 1234.5},
        {"event": "end", "steps": len(times), "samples": total,
         "samples_per_s": total / sum(times), "train_time_s": sum(times)},
    ]  # fmt: skip


def _record(folder: Path, times: list[float]) -> Path:
    """run.json as ``run`` writes it: the summary from the gathered events."""
    gathered = Measurements()
    for event in _events(times):
        gathered.add(event)
    data = {
        "kind": "tuneadvisor-run", "schema": 1, "id": "one", "name": "mnist_single",
        "label": "one", "status": "completed",
        "settings": Settings(cpus_per_task=2, knobs={"num_workers": 1}).to_json(),
        "start": gathered.start, "summary": gathered.summary().to_json(),
        "steps": gathered.steps, "epochs": gathered.epochs,
        "prediction": PREDICTION.as_json(),
        "paths": {"profiles": [], "metrics": []},
    }  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(json.dumps(data))
    return folder


def _figures(record: RunRecord, folder: Path) -> dict[str, tuple[float | None, float | None]]:
    """(samples/s, step seconds) as each face has them."""
    out = StringIO()
    with redirect_stdout(out):
        assert main(["compare", "--format", "json", str(folder)]) == 0
    (row,) = json.loads(out.getvalue())["items"]
    steady = steady_window(record, 3)
    checked = check(record)
    assert steady is not None and checked is not None and checked.samples_per_s is not None
    return {
        "record": (record.samples_per_s, record.step_s),
        "run.json summary": (record.summary.samples_per_s, record.summary.step_time_s),
        "compare json": (row["samples_per_s"], row["step_time_s"]),
        "compare json summary": (row["summary"]["samples_per_s"], row["summary"]["step_time_s"]),
        "tune": (steady.samples_per_s, steady.step_s),
        "prediction check": (
            checked.samples_per_s.value,
            checked.step_s.value if checked.step_s else None,
        ),
        "run facts (report, TUI)": (record.facts()["run.samples_per_s"], record.step_s),
    }


# bursty steps: most at the device's pace, some waiting for the next batch, so that the
# median of per-step rates, the window's rate and the whole training's rate all differ
BURSTY = [0.5, 0.3, 0.2, 0.01, 0.01, 0.05, 0.01, 0.01, 0.06, 0.01, 0.01, 0.05, 0.01, 0.012]


def test_every_face_prints_the_same_figure_for_one_run(tmp_path: Path) -> None:
    folder = _record(tmp_path / "one", BURSTY)
    record = read_record(folder)
    rate, step = record.samples_per_s, record.step_s
    assert rate is not None and step is not None
    # the figure is not one of the others a run has: the median, the whole training's
    assert abs(rate - record.summary.samples_per_s_median) > 1  # type: ignore[operator]
    assert abs(rate - record.summary.samples_per_s_overall) > 1  # type: ignore[operator]
    for face, (r, s) in _figures(record, folder).items():
        assert r is not None and abs(r - rate) < 1e-3 * rate, face
        assert s is not None and abs(s - step) < 1e-9, face

    shown = f"{rate:,.1f}"
    console = Console(width=300, record=True)
    print_record(console, record)
    last = console.export_text()
    assert f"{shown} samples/s (step {1000 * step:,.1f} ms" in last
    compared = "".join(_text(t) for t in tables([load_item(str(folder))]))
    assert shown in compared and f"{1000 * step:.1f} ms" in compared
    # no other rate of the run in compare's throughput table
    rates = {m for m in re.findall(r"\b\d[\d,]*\.\d\b", compared.split("Resources")[0])}
    assert rates <= {shown, f"{1000 * step:.1f}", "100.0", "1.00", "50.0"}


def test_an_epochs_rate_is_named_as_the_epochs(tmp_path: Path) -> None:
    console = Console(width=200, record=True)
    view = ProgressView(console, "run", Settings(), live=False)
    view({"event": "epoch", "epoch": 1, "accuracy": 0.5, "test_loss": 0.7, "samples_per_s": 689.7})
    assert "this epoch 689.7 samples/s" in console.export_text()


def _text(renderable: Any) -> str:
    console = Console(width=200, record=True)
    console.print(renderable)
    return console.export_text()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.001, 2.0), min_size=1, max_size=40))
def test_the_figure_is_one_for_any_steps(tmp_path_factory: Any, times: list[float]) -> None:
    folder = _record(tmp_path_factory.mktemp("run"), times)
    record = read_record(folder)
    figures = _figures(record, folder)
    rate = record.samples_per_s
    assert rate is not None
    for face, (r, _) in figures.items():
        assert r is not None and abs(r - rate) <= 1e-3 * rate, face


def test_the_progress_bar_fits_100_columns_and_names_its_rate() -> None:
    """Issue 33 §4: the bar was cut at 100 columns; its rate is the last logged step's."""
    console = Console(width=100, file=StringIO(), force_terminal=True, color_system=None)
    view = ProgressView(console, "mnist_single", Settings(), live=True)
    view.progress.update(view.task, total=1400, completed=321, rate="1,234", loss="2.3012")
    table = view.progress.make_tasks_table(view.progress.tasks)
    (line,) = console.render_lines(table, console.options)
    text = "".join(segment.text for segment in line).rstrip()
    assert len(text) <= 100 and "…" not in text
    assert "321/1400 steps · last 1,234 samples/s · loss 2.3012" in text
    assert text.endswith("-:--:--")  # the time left, whole


def test_the_progress_bar_ends_at_the_steps_trained() -> None:
    """The events log every 10 steps: a run of 100 steps left its bar at 91 of 100; the epoch
    and end events count the steps after the last logged one."""
    console = Console(width=100, file=StringIO(), force_terminal=True, color_system=None)
    view = ProgressView(console, "mnist_single", Settings(), live=True)
    view({"event": "start", "epochs": 2, "train_samples": 6400, "batch_size": 64})
    view.progress.update(view.task, total=200)
    for step in (1, 11, 91):
        view({"event": "step", "step": step, "steps": 10, "samples_per_s": 10.0, "loss": 1.0})
    view({"event": "epoch", "epoch": 1, "steps": 100, "accuracy": 0.5, "samples_per_s": 9.0})
    assert view.progress.tasks[0].completed == 100
    view({"event": "step", "step": 101, "steps": 10, "samples_per_s": 10.0, "loss": 1.0})
    assert view.progress.tasks[0].completed == 101
    view({"event": "end", "steps": 200, "samples": 12800, "samples_per_s": 9.0})
    assert view.progress.tasks[0].completed == 200
