"""compare with runs that did not complete (issue 33, point 2): an interrupted or failed run
is shown and marked, and is never the speedup's baseline nor a point of a trend (scaling,
throughput bars and lines); and run records given as files (``compare A/run.json
B/run.json``) are read as runs, told from torch.profiler traces by their content."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuneadvisor.cli import main
from tuneadvisor.compare.plots import panels
from tuneadvisor.compare.tables import baseline, load_item, scale_points
from tuneadvisor.relaunch.settings import Settings
from tuneadvisor.runrecord.record import is_run_record


def _run(folder: Path, name: str, status: str, rate: float, ranks: int = 1, cpus: int = 1) -> Path:
    steps = [{"event": "step", "epoch": 1, "step": 2 * (i + 1), "step_time_s": 0.1,
              "samples_per_s": rate, "loss": 1.0} for i in range(4)]  # fmt: skip
    data: dict[str, Any] = {
        "kind": "tuneadvisor-run", "schema": 1, "id": name, "name": "mnist_ddp",
        "label": name, "status": status, "launcher": "srun",
        "settings": Settings(ntasks=ranks, cpus_per_task=cpus).to_json(),
        "start": {"world_size": ranks, "train_samples": 512, "batch_size": 32},
        "summary": {"samples_per_s": rate}, "steps": steps,
        "paths": {"profiles": [], "metrics": []},
    }  # fmt: skip
    run = folder / name
    run.mkdir()
    (run / "run.json").write_text(json.dumps(data, indent=2))
    return run


def _compare_json(*paths: Path) -> list[dict[str, Any]]:
    from contextlib import redirect_stdout
    from io import StringIO

    out = StringIO()
    with redirect_stdout(out):
        assert main(["compare", "--format", "json", *map(str, paths)]) == 0
    items: list[dict[str, Any]] = json.loads(out.getvalue())["items"]
    return items


@pytest.mark.parametrize("status", ["interrupted", "failed"])
def test_an_unfinished_first_run_is_not_the_baseline(tmp_path: Path, status: str) -> None:
    # a glob sorts the interrupted run first, and it measured a rate before it stopped
    stopped = _run(tmp_path, "a-stopped", status, 50.0)
    done = _run(tmp_path, "b-done", "completed", 100.0)
    faster = _run(tmp_path, "c-faster", "completed", 150.0, cpus=2)
    items = _compare_json(stopped, done, faster)
    assert [i["baseline"] for i in items] == [False, True, False]
    assert [i["counted"] for i in items] == [False, True, True]
    assert items[0]["speedup"] is None and items[0]["status"] == status
    assert items[2]["speedup"] == pytest.approx(1.5)


def test_an_unfinished_run_is_marked_in_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stopped = _run(tmp_path, "a-stopped", "interrupted", 50.0)
    done = _run(tmp_path, "b-done", "completed", 100.0)
    assert main(["compare", "--no-plots", str(stopped), str(done)]) == 0
    out = capsys.readouterr().out
    assert "speedup against b-done" in out
    assert "interrupted: not compared" in out


def test_an_unfinished_run_is_no_trend_point(tmp_path: Path) -> None:
    items = [
        load_item(str(_run(tmp_path, "one", "completed", 100.0, ranks=1))),
        load_item(str(_run(tmp_path, "two-stopped", "interrupted", 10.0, ranks=2))),
        load_item(str(_run(tmp_path, "two-failed", "failed", 10.0, ranks=2, cpus=2))),
        load_item(str(_run(tmp_path, "four", "completed", 300.0, ranks=4))),
    ]
    assert baseline(items) is items[0]
    assert [p.run for p in scale_points(items)] == ["one", "four"]
    for panel in panels(items):
        if "Throughput" in panel.title or "Scaling" in panel.title:
            drawn = [y for s in panel.series if not s.reference for y in s.y]
            assert 10.0 not in drawn, panel.title


def test_no_completed_run_means_no_speedup(tmp_path: Path) -> None:
    items = _compare_json(
        _run(tmp_path, "a", "interrupted", 50.0), _run(tmp_path, "b", "failed", 60.0)
    )
    assert [i["speedup"] for i in items] == [None, None]
    assert not any(i["baseline"] for i in items)


def test_run_records_given_as_files_are_compared_as_runs(tmp_path: Path) -> None:
    a = _run(tmp_path, "a", "completed", 100.0) / "run.json"
    b = _run(tmp_path, "b", "completed", 120.0) / "run.json"
    items = _compare_json(a, b)
    assert [i["label"] for i in items] == ["a", "b"]
    assert items[1]["speedup"] == pytest.approx(1.2)
    # the name does not matter: a record copied under another name is still a run
    renamed = tmp_path / "before.json"
    renamed.write_bytes(a.read_bytes())
    assert [i["label"] for i in _compare_json(renamed, b)] == ["a", "b"]


def test_a_record_is_told_from_a_trace_by_its_content(tmp_path: Path) -> None:
    record = _run(tmp_path, "a", "completed", 100.0) / "run.json"
    assert is_run_record(record)
    # the same keys in another order (rewritten by a tool) are still a record
    resorted = tmp_path / "sorted.json"
    resorted.write_text(json.dumps(json.loads(record.read_text()), sort_keys=True))
    assert is_run_record(resorted)
    trace = tmp_path / "run.json.pt.trace.json"
    trace.write_text(json.dumps({"schemaVersion": 1, "traceEvents": []}))
    named_like_a_record = tmp_path / "x" / "run.json"
    named_like_a_record.parent.mkdir()
    named_like_a_record.write_text(trace.read_text())
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(trace.read_bytes()))
    for path in (trace, named_like_a_record, gz, tmp_path / "missing.json", tmp_path):
        assert not is_run_record(path), path


@settings(max_examples=50, deadline=None)
@given(
    statuses=st.lists(st.sampled_from(["completed", "interrupted", "failed"]), min_size=1,
                      max_size=5),
    rates=st.lists(st.floats(min_value=1.0, max_value=1e4), min_size=5, max_size=5),
)  # fmt: skip
def test_the_baseline_is_always_the_first_completed_run(
    tmp_path_factory: pytest.TempPathFactory, statuses: list[str], rates: list[float]
) -> None:
    folder = tmp_path_factory.mktemp("runs")
    items = [
        load_item(str(_run(folder, f"r{i}", status, rates[i]))) for i, status in enumerate(statuses)
    ]
    base = baseline(items)
    completed = [i for i in items if i.run is not None and i.run.status == "completed"]
    assert base is (completed[0] if completed else None)
    assert all(p.run in {i.label for i in completed} for p in scale_points(items))
