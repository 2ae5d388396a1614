"""compare of runs at several world sizes and cores: the scaling computed from the runs
(speedup over each setting's smallest world size, efficiency = speedup / ranks ratio), and
the data each plot draws (loss at every logged step, throughput bars, step-time boxes)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tuneadvisor.cli import main
from tuneadvisor.compare.plots import panels, terminal_plots
from tuneadvisor.compare.tables import load_item, scale_points, scaling_table
from tuneadvisor.relaunch.settings import Settings

TRAIN = 768  # samples in the training set
BATCH = 32


def _ddp_run(
    folder: Path, ranks: int, nodes: int, cpus: int, rate: float, times: list[float]
) -> Path:
    """A finished mnist_ddp run over RANKS ranks: a step report every 2 steps with these
    step times, two epochs whose losses fall."""
    name = f"r{ranks}-c{cpus}"
    per_epoch = math.ceil(math.ceil(TRAIN / ranks) / BATCH)  # each rank's share, in batches
    steps = [
        {"event": "step", "epoch": 1 + (2 * (i + 1) - 1) // per_epoch, "step": 2 * (i + 1),
         "step_time_s": t, "samples_per_s": rate, "loss": 2.0 / (i + 1)}
        for i, t in enumerate(times)
    ]  # fmt: skip
    data: dict[str, Any] = {
        "kind": "tuneadvisor-run", "schema": 1, "id": name, "name": "mnist_ddp",
        "label": name, "status": "completed", "launcher": "srun",
        "settings": Settings(ntasks=ranks, nodes=nodes, cpus_per_task=cpus).to_json(),
        "start": {"world_size": ranks, "train_samples": TRAIN, "batch_size": BATCH},
        "summary": {"samples_per_s": rate, "final_accuracy": 0.8},
        "steps": steps,
        "epochs": [{"epoch": 1, "accuracy": 0.5, "train_loss": 1.0},
                   {"epoch": 2, "accuracy": 0.8, "train_loss": 0.5}],
        "paths": {"profiles": [], "metrics": []},
    }  # fmt: skip
    run = folder / name
    run.mkdir()
    (run / "run.json").write_text(json.dumps(data))
    return run


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    return [
        _ddp_run(tmp_path, 1, 1, 1, 100.0, [0.30, 0.32, 0.31, 0.35]),
        _ddp_run(tmp_path, 2, 1, 1, 180.0, [0.34, 0.36, 0.35, 0.40]),
        _ddp_run(tmp_path, 4, 2, 1, 300.0, [0.40, 0.41, 0.45, 0.43]),
        _ddp_run(tmp_path, 1, 1, 2, 150.0, [0.20, 0.21, 0.22]),
        _ddp_run(tmp_path, 3, 3, 2, 360.0, [0.25, 0.26, 0.27]),
    ]


def test_speedup_and_efficiency_are_computed_per_setting(runs: list[Path]) -> None:
    items = [load_item(str(p)) for p in runs]
    got = {(p.group, p.world_size): p for p in scale_points(items)}
    one, two = "1 cpu per task", "2 cpu per task"
    assert sorted(got) == [(one, 1), (one, 2), (one, 4), (two, 1), (two, 3)]
    four = got[(one, 4)]
    assert four.speedup == pytest.approx(300 / 100) and four.nodes == 2
    assert four.efficiency == pytest.approx(3.0 / 4)
    assert got[(two, 3)].efficiency == pytest.approx((360 / 150) / 3)
    assert got[(one, 1)].speedup == 1.0 and got[(one, 1)].efficiency == 1.0
    # a setting measured at one world size has no scaling to show
    assert scale_points(items[:1] + items[3:4]) == []
    console = Console(width=160, record=True)
    table = scaling_table(items)
    assert table is not None
    console.print(table)
    text = console.export_text()
    assert "3.00x" in text and "75 %" in text and "80 %" in text


def test_the_plots_draw_each_runs_steps_bars_and_scaling(runs: list[Path]) -> None:
    items = [load_item(str(p)) for p in runs]
    drawn = {p.title.split(" (")[0]: p for p in panels(items)}
    loss = drawn["Training loss"]
    # every logged step, at the epochs it had trained: more points than epochs
    (four,) = [s for s in loss.series if s.label == "r4-c1"]
    per_epoch = 768 // 4 // 32
    assert four.x == [2 / per_epoch, 4 / per_epoch, 6 / per_epoch, 8 / per_epoch]
    assert four.y == [2.0, 1.0, pytest.approx(2 / 3), 0.5]
    bars = drawn["Throughput per run"]
    assert bars.kind == "bars" and bars.categories == [i.label for i in items]
    assert bars.series[0].y == [100.0, 180.0, 300.0, 150.0, 360.0]
    against = drawn["Throughput against world size"]
    measured = {s.label: s for s in against.series if not s.reference}
    assert measured["1 cpu per task"].x == [1.0, 2.0, 4.0]
    assert measured["1 cpu per task"].y == [100.0, 180.0, 300.0]
    assert ("3.00x" in [n[2] for n in against.notes]) and len(against.notes) == 3
    eff = {s.label: s for s in drawn["Scaling efficiency"].series}
    assert eff["1 cpu per task"].y == [100.0, 90.0, 75.0]
    assert eff["linear"].reference and eff["linear"].x == [1.0, 2.0, 3.0, 4.0]
    assert set(eff["linear"].y) == {100.0}
    boxes = drawn["Step time distribution"]
    assert boxes.kind == "box" and boxes.categories[0] == "r1-c1"
    assert boxes.series[0].y == pytest.approx([320.0, 310.0, 350.0])  # the first report left out
    cores = drawn["Throughput against --cpus-per-task"]
    assert {s.label: s.y for s in cores.series}["mnist_ddp, 1 rank"] == [100.0, 150.0]
    text = terminal_plots(items, color=False)
    for title in ("Throughput per run", "Scaling efficiency", "Step time distribution"):
        assert title in text


def test_compare_json_carries_the_scaling_and_the_png_is_written(
    runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    plot = tmp_path / "scaling.png"
    assert main(["compare", *map(str, runs), "--format", "json", "--plot", str(plot)]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = [(r["group"], r["world_size"], r["efficiency"]) for r in out["scaling"]]
    assert ("1 cpu per task", 4, 0.75) in rows and len(rows) == 5
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_a_run_label_handed_over_is_shown_not_obeyed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run.json from someone else: its label's escape sequences and Rich markup are printed
    as they are written (issue 23, point 11), in the tables, the findings and the plots."""
    hostile = "\x1b]0;owned\x07[bold red]fast[/]\x1b[2J"
    folders = [
        _ddp_run(tmp_path, 1, 1, 1, 100.0, [0.30, 0.32, 0.31, 0.35]),
        _ddp_run(tmp_path, 2, 1, 1, 180.0, [0.34, 0.36, 0.35, 0.40]),
    ]
    record = folders[1] / "run.json"
    data = json.loads(record.read_text())
    data["label"] = hostile
    record.write_text(json.dumps(data))
    assert main(["compare", *map(str, folders)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b]0;owned\\x07[bold red]fast[/]" in out  # the label as written, visibly
    assert main(["compare", "--format", "json", *map(str, folders)]) == 0
    assert hostile in json.loads(capsys.readouterr().out)["items"][1]["label"]  # exact in JSON
