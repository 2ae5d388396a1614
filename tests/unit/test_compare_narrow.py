"""compare at 100 columns (issue 33 §4): run ids are not all cut to the same ``20261206…``,
and no figure is split from its unit onto a line of its own."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from tests.unit.test_relaunch_prediction import PREDICTION
from tuneadvisor.compare.tables import load_item, short_labels, tables
from tuneadvisor.relaunch.settings import Settings

IDS = ("20261206-064512-mnist_single-a1b2", "20261206-065010-mnist_single-c3d4")


def test_short_labels_keep_what_tells_runs_apart() -> None:
    shown, form = short_labels(list(IDS))
    assert shown == ["064512-a1b2", "065010-c3d4"]
    assert form == "20261206-TIME-mnist_single-SUFFIX"
    other = ["20261205-064512-mnist_ddp-a1b2", IDS[1]]
    assert short_labels(other) == (other, None)  # nothing shared: shown whole
    assert short_labels(["before", "after"]) == (["before", "after"], None)
    assert short_labels([IDS[0]]) == ([IDS[0]], None)


def _run(
    folder: Path, rid: str, cpus: int, rate: float, *, label: str | None = None, gpus: int = 0
) -> Path:
    run = folder / rid
    run.mkdir()
    steps = [{"event": "step", "step": i, "step_time_s": 64 / rate, "samples_per_s": rate}
             for i in range(1, 12)]  # fmt: skip
    data = {
        "kind": "tuneadvisor-run", "schema": 1, "id": rid, "name": "mnist_single",
        "status": "completed", "start": {"device": "cpu"}, "steps": steps,
        **({"label": label, "prediction": PREDICTION.as_json()} if label else {}),
        "settings": Settings(cpus_per_task=cpus, mem="6G", gpus=gpus,
                             knobs={"num_workers": cpus - 1, "batch_size": 64,
                                    "input_cost": "high"}).to_json(),
        "summary": {"final_accuracy": 0.46},
        "epochs": [{"epoch": 1, "train_loss": 2.342, "accuracy": 0.141}],
        "resources": {"cores_used": 0.9 * cpus, "max_rss_mib": 1400.0},
        "paths": {"profiles": [], "metrics": []},
    }  # fmt: skip
    (run / "run.json").write_text(json.dumps(data))
    return run


def test_compare_at_100_columns(tmp_path: Path) -> None:
    items = [load_item(str(_run(tmp_path, rid, c, r)))
             for rid, c, r in zip(IDS, (1, 8), (120.0, 480.0), strict=True)]  # fmt: skip
    console = Console(width=100, record=True)
    for table in tables(items):
        console.print(table)
    text = console.export_text()
    assert "064512-a1b2" in text and "065010-c3d4" in text
    assert "20261206…" not in text and "…" not in text
    for line in text.splitlines():
        assert len(line) <= 100
        # a unit alone at the start of a cell: its figure is on the line above
        assert not re.search(r"│\s+(%\)|%|ms|MiB)\s+│", line), line


def _shown_at(width: int, items: list[object]) -> str:
    console = Console(width=width, record=True)
    for table in tables(items):  # type: ignore[arg-type]
        console.print(table)
    return console.export_text()


def test_every_table_is_readable_at_100_columns_with_long_labels(tmp_path: Path) -> None:
    """Tune trials' labels (long words, not run ids) and a run --from a report that asked for a
    GPU on a CPU machine, with its prediction: each table names a run by its row's # in the
    throughput table, the prediction's setting as `run` words it, every unit in a heading."""
    runs = [
        _run(tmp_path, IDS[0], 1, 120.0, label="tune base: 1 cpu, workers 0, batch 64"),
        _run(tmp_path, IDS[1], 4, 480.0, label="tune workers: 4 cpu, workers 3", gpus=1),
    ]
    text = _shown_at(100, [load_item(str(r)) for r in runs])
    assert "…" not in text
    for line in text.splitlines():
        assert len(line) <= 100
        assert not re.search(r"│\s+(%\)|%|ms|MiB|rounds)\s+│", line), line
    rows = [line for line in text.splitlines() if line.startswith("│ #")]
    # the resources, the prediction and the per-epoch rows: #1, #2 in each
    assert [r.split("│")[1].strip() for r in rows] == ["#1", "#2"] * 3
    assert "4 cpu, workers 3" in rows[3]  # not "cpus_per_task 4, num_workers 3"
    assert "cpus_per_task" not in text
    assert "GPU (1 asked)" in text and "1 gpu" not in text
    wide = _shown_at(220, [load_item(str(r)) for r in runs])
    assert "tune workers: 4 cpu, workers 3" in wide and "…" not in wide


def test_runs_and_tune_trials_together_keep_the_ids_short_and_the_settings_once(
    tmp_path: Path,
) -> None:
    """The README's `compare runs/*-mnist_single-*`: runs beside a tune's trials (labelled
    "tune STAGE: SETTINGS"): the ids still lose their shared date, the trials their settings
    (the settings column says them), and nothing is cut at 100 columns."""
    assert short_labels([IDS[0], "tune base: 1 cpu", IDS[1]]) == (
        ["064512-a1b2", "tune base: 1 cpu", "065010-c3d4"],
        "20261206-TIME-mnist_single-SUFFIX",
    )
    words = Settings(cpus_per_task=4, knobs={"num_workers": 3, "batch_size": 64,
                     "input_cost": "high"}).describe()  # fmt: skip
    runs = [
        _run(tmp_path, IDS[0], 1, 120.0),
        _run(tmp_path, "trial-1", 4, 480.0, label=f"tune workers: {words}"),
    ]
    text = _shown_at(100, [load_item(str(r)) for r in runs])
    assert "064512-a1b2" in text and "…" not in text
    (row,) = [line for line in text.splitlines() if "tune workers" in line]
    assert row.split("│")[2].strip() == "tune workers"  # the run cell: no settings after it


def test_a_tunes_twelve_trials_fit_100_columns(tmp_path: Path) -> None:
    """Every table, the per-epoch one included (a column a run cut each to ``1056…``)."""
    runs = [_run(tmp_path, f"20261206-0645{n:02d}-mnist_single-a{n:03d}", 1 + n % 4, 100.0 + n)
            for n in range(12)]  # fmt: skip
    text = _shown_at(100, [load_item(str(r)) for r in runs])
    assert "Per epoch" in text and "…" not in text
    assert all(len(line) <= 100 for line in text.splitlines())
    assert "│ #12 " in text and "2.342 / 14.1 %" in text


def test_the_plots_name_runs_as_the_tables_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The terminal plots' legends and bars and compare.png's legends once used whole run ids
    (two of them run past 100 columns): the tables' short labels, the ids' form in the
    figure's title."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot
    from matplotlib.figure import Figure

    from tuneadvisor.compare.plots import terminal_plots, write_plot_file

    items = [load_item(str(_run(tmp_path, rid, c, r)))
             for rid, c, r in zip(IDS, (1, 8), (120.0, 480.0), strict=True)]  # fmt: skip
    text = terminal_plots(items, width=100, color=False)
    assert "064512-a1b2" in text and "065010-c3d4" in text
    assert not any(rid in text for rid in IDS)
    for line in text.splitlines():
        assert len(line) <= 100, line
    figures: list[Figure] = []
    real_close = pyplot.close
    # read the figure before it is closed
    monkeypatch.setattr(pyplot, "close", figures.append)
    write_plot_file(items, tmp_path / "compare.png")
    (fig,) = figures
    legends = [text.get_text() for ax in fig.axes if (legend := ax.get_legend()) is not None
               for text in legend.get_texts()]  # fmt: skip
    assert {"064512-a1b2", "065010-c3d4"} <= set(legends)
    assert not any(rid in legend for legend in legends for rid in IDS)
    title = fig.get_suptitle()
    assert title == "runs 20261206-TIME-mnist_single-SUFFIX"
    real_close(fig)


def test_a_run_of_many_epochs_is_shown_whole_within_100_columns(tmp_path: Path) -> None:
    """`run --epochs 12` then compare: twelve epoch columns cut every cell to ``2.30…`` at
    100 columns; in blocks of epochs each cell is whole and every line fits."""
    items = []
    for n, rid in enumerate(IDS):
        run = _run(tmp_path, rid, 1 + n, 120.0 * (1 + n))
        data = json.loads((run / "run.json").read_text())
        data["epochs"] = [
            {"epoch": e, "train_loss": 2.5 - 0.1 * e - 0.01 * n, "accuracy": 0.05 * e + 0.01 * n}
            for e in range(1, 13)
        ]
        (run / "run.json").write_text(json.dumps(data))
        items.append(load_item(str(run)))
    console = Console(width=100, record=True)
    for table in tables(items):
        console.print(table)
    text = console.export_text()
    assert "…" not in text
    for line in text.splitlines():
        assert len(line) <= 100, line
    for n in range(2):
        for e in range(1, 13):
            cell = f"{2.5 - 0.1 * e - 0.01 * n:.3f} / {100 * (0.05 * e + 0.01 * n):.1f} %"
            assert cell in text, cell
    assert all(f"epoch {e}" in text for e in range(1, 13))


def test_trials_of_one_stage_are_told_apart_in_the_legends(tmp_path: Path) -> None:
    """A tune's trials of one stage share a label (``tune workers``): each legend entry and
    bar says its row's number in the throughput table."""
    from tuneadvisor.compare.plots import panels

    runs = [_run(tmp_path, IDS[0], 1, 120.0), _run(tmp_path, IDS[1], 2, 150.0)]
    for run in runs:  # labelled as tune labels a trial: its stage, then its settings
        data = json.loads((run / "run.json").read_text())
        described = load_item(str(run)).run.settings.describe()  # type: ignore[union-attr]
        data["label"] = f"tune workers: {described}"
        (run / "run.json").write_text(json.dumps(data))
    items = [load_item(str(r)) for r in runs]
    drawn = panels(items)
    names = {s.label for p in drawn if p.kind == "line" for s in p.series}
    names |= {c for p in drawn if p.kind != "line" for c in p.categories}
    assert {"#1 tune workers", "#2 tune workers"} <= names
    assert "tune workers" not in names
