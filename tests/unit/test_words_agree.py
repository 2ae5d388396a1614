"""Words and numbers that agree (issue 33 §3) in the bundled example's report: one figure for
one memory efficiency, "1 core" not "1 cores", and the memory note saying which way --mem
went."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tuneadvisor.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mnist"


@pytest.fixture
def report(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", "100")
    code = main([
        "report", str(EXAMPLE / "24752610.lprof"), "--job", str(EXAMPLE / "mnist.sbatch"),
        "--seff", str(EXAMPLE / "seff-24752610.txt"),
    ])  # fmt: skip
    assert code == 0
    return capsys.readouterr().out


def test_one_memory_efficiency_one_figure(report: str) -> None:
    shares = set(re.findall(r"memory efficiency ([\d.]+) %|used share \(%\): ([\d.]+)", report))
    figures = {a or b for a, b in shares}
    assert len(figures) == 1, figures


def test_one_core_is_one_core(report: str) -> None:
    assert not re.search(r"\b1 cores\b", report)
    assert "1 core per node" in report


def test_the_memory_note_says_which_way_mem_went(report: str) -> None:
    assert "-#SBATCH --mem=8G" in report and "+#SBATCH --mem=6G" in report
    assert "--mem raised to 6G" not in report
    assert "--mem lowered from 8G to 6G" in report


def _cpu_run(folder: Path, name: str, gpus: int, rate: float, device: str) -> Path:
    import json

    from tuneadvisor.relaunch.settings import Settings

    run = folder / name
    run.mkdir(parents=True)
    steps = [{"event": "step", "step": i + 1, "step_time_s": 64 / rate, "samples_per_s": rate}
             for i in range(8)]  # fmt: skip
    data = {
        "kind": "tuneadvisor-run", "schema": 1, "id": name, "name": "mnist_single",
        "label": name, "status": "completed",
        "settings": Settings(cpus_per_task=2, gpus=gpus).to_json(),
        "start": {"device": device, "batch_size": 64}, "steps": steps,
        "summary": {}, "paths": {"profiles": [], "metrics": []},
    }  # fmt: skip
    (run / "run.json").write_text(json.dumps(data))
    return run


@pytest.mark.parametrize("device", ["cpu", "cuda:0"])
def test_a_run_without_a_gpu_is_not_labelled_or_plotted_at_one(tmp_path: Path, device: str) -> None:
    from rich.console import Console

    from tuneadvisor.compare.plots import panels
    from tuneadvisor.compare.tables import load_item, tables

    items = [load_item(str(_cpu_run(tmp_path, n, g, r, device)))
             for n, g, r in (("a", 1, 100.0), ("b", 2, 150.0))]  # fmt: skip
    console = Console(width=200, record=True)
    for table in tables(items):
        console.print(table)
    text = console.export_text()
    drawn = {p.title: p for p in panels(items)}
    if device == "cpu":
        assert "1 gpu" not in text and "no GPU (1 asked)" in text
        assert "Throughput against GPUs" not in drawn  # both at 0 GPUs: no line
    else:
        assert "1 gpu" in text and "no GPU" not in text
        assert drawn["Throughput against GPUs"].series[0].x == [1.0, 2.0]
