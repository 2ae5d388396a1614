"""compare (tables, terminal plots, PNG/SVG files) on recorded runs, and the tuner's
decisions on measured rates (the runner replaced by recorded outcomes)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from tuneadvisor.cli import main
from tuneadvisor.compare.plots import panels, terminal_plots, write_plot_file
from tuneadvisor.compare.tables import load_item, tables
from tuneadvisor.relaunch.bundled import bundled
from tuneadvisor.relaunch.records import RunRecord
from tuneadvisor.relaunch.runner import RunRequest
from tuneadvisor.relaunch.settings import Settings
from tuneadvisor.tune import tuner as tune_mod
from tuneadvisor.tune.tuner import TuneOptions, Tuner, worker_candidates


def _record(
    folder: Path, name: str, cpus: int, workers: int, rate: float, accs: list[float]
) -> Path:
    run = folder / name
    run.mkdir(parents=True)
    data = {
        "kind": "tuneadvisor-run", "schema": 1, "id": name, "name": "mnist_single",
        "label": name, "status": "completed",
        "settings": Settings(cpus_per_task=cpus, knobs={"num_workers": workers}).to_json(),
        "summary": {"samples_per_s": rate, "step_time_s": 64 / rate,
                    "final_accuracy": accs[-1]},
        "epochs": [{"epoch": i + 1, "accuracy": a, "train_loss": 2.0 - a}
                   for i, a in enumerate(accs)],
        "resources": {"cores_used": 0.9 * cpus, "max_rss_mib": 800.0},
        "paths": {"profiles": [], "metrics": []},
    }  # fmt: skip
    (run / "run.json").write_text(json.dumps(data))
    return run


@pytest.fixture
def two_runs(tmp_path: Path) -> list[Path]:
    return [
        _record(tmp_path, "before", 1, 1, 100.0, [0.5, 0.7]),
        _record(tmp_path, "after", 2, 1, 250.0, [0.55, 0.75]),
    ]


def _text(renderable: Any) -> str:
    console = Console(width=140, record=True)
    console.print(renderable)
    return console.export_text()


def test_throughput_table_shows_the_speedup_against_the_first(two_runs: list[Path]) -> None:
    items = [load_item(str(p)) for p in two_runs]
    throughput, resources, epochs = (_text(t) for t in tables(items))
    assert "2.50x" in throughput and "1.00x" in throughput
    assert "2 cpu, workers 1" in throughput
    assert "1.80" in resources  # cores used by the 2-core run
    assert "75.0 %" in epochs


def test_plots_set_throughput_against_cores(two_runs: list[Path]) -> None:
    items = [load_item(str(p)) for p in two_runs]
    drawn = {p.title: p for p in panels(items)}
    cores = drawn["Throughput against --cpus-per-task"]
    assert cores.series[0].x == [1.0, 2.0] and cores.series[0].y == [100.0, 250.0]
    assert "Test accuracy per epoch" in drawn
    text = terminal_plots(items, color=False)
    assert "Throughput against --cpus-per-task" in text and "\x1b[" not in text


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_plot_files_are_written(two_runs: list[Path], tmp_path: Path, suffix: str) -> None:
    pytest.importorskip("matplotlib")
    out = write_plot_file([load_item(str(p)) for p in two_runs], tmp_path / f"cmp{suffix}")
    head = out.read_bytes()[:200]
    assert head.startswith(b"\x89PNG") if suffix == ".png" else b"<svg" in out.read_bytes()
    assert not list(tmp_path.glob("*.part*"))


def test_compare_command_writes_json_and_a_plot(
    two_runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    plot = tmp_path / "out.svg"
    code = main(["compare", *map(str, two_runs), "--format", "json", "--plot", str(plot)])
    assert code == 0 and plot.is_file()
    out = json.loads(capsys.readouterr().out)
    assert [i["speedup"] for i in out["items"]] == [1.0, 2.5]


def test_compare_refuses_a_missing_run_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "/no/such/run"]) == 2
    err = capsys.readouterr().err
    assert "no such run" in err and "Traceback" not in err


# --------------------------------------------------------------------------- tune


class FakeRuns:
    """Stands in for run_local: the samples/s a setting gives, as measured once."""

    def __init__(self, rates: Mapping[tuple[int, int, int, bool], float]) -> None:
        self.rates = rates
        self.calls: list[Settings] = []

    def __call__(self, req: RunRequest, on_event: object = None) -> RunRecord:
        s = req.settings
        self.calls.append(s)
        key = (s.cpus_per_task, int(str(s.knobs.get("num_workers"))),
               int(str(s.knobs.get("batch_size", 64))), bool(s.knobs.get("amp")))  # fmt: skip
        rate = self.rates.get(key)
        steps = [{"step": i, "samples_per_s": rate} for i in range(1, 6)] if rate else []
        data = {"kind": "tuneadvisor-run", "id": f"run{len(self.calls)}",
                "status": "completed" if rate else "failed", "steps": steps}  # fmt: skip
        return RunRecord.from_json(data)


def _request(tmp_path: Path, settings: Settings) -> RunRequest:
    return RunRequest(bundled("mnist_single"), settings, tmp_path, "python", tmp_path)


def test_worker_candidates_grow_with_the_cores() -> None:
    base = Settings(cpus_per_task=1, knobs={"num_workers": 0})
    # (2, 0): more cores alone, for PyTorch's compute threads
    assert worker_candidates(base, 2) == [(1, 1), (2, 0), (2, 1), (2, 2)]
    two = Settings(cpus_per_task=2, knobs={"num_workers": 1})
    assert worker_candidates(two, 3) == [(1, 0), (1, 1), (2, 2), (3, 1), (3, 2), (3, 3)]


def test_a_compute_bound_run_keeps_its_setting_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeRuns({(1, 0, 64, False): 1000.0, (1, 1, 64, False): 1010.0,
                     (2, 0, 64, False): 1020.0, (2, 1, 64, False): 980.0,
                     (2, 2, 64, False): 990.0,
                     (1, 0, 128, False): 1020.0, (1, 0, 64, True): 600.0})  # fmt: skip
    monkeypatch.setattr(tune_mod, "run_local", fake)
    base = Settings(cpus_per_task=1, knobs={"num_workers": 0, "batch_size": 64})
    result = Tuner(_request(tmp_path, base), TuneOptions(max_cores=2)).run(
        {"num_workers": 1, "cpus_per_task": 2}
    )
    assert result.best is result.base
    text = "\n".join(result.decisions)
    assert "workers and cores: kept 1 cpu, workers 0, batch 64 (1,000.0 samples/s)" in text
    assert "+2.0 %" in text and "below the 5 %" in text
    assert "mixed precision: dropped, 600.0 against 1,000.0" in text
    assert "advice num_workers = 1: dropped" in text and "pinned memory: not tried" in text


def test_an_input_bound_run_takes_more_workers_and_stops_at_the_knee(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeRuns({(1, 0, 64, False): 100.0, (1, 1, 64, False): 110.0,
                     (2, 0, 64, False): 120.0, (2, 1, 64, False): 190.0,
                     (2, 2, 64, False): 185.0, (3, 0, 64, False): 150.0,
                     (3, 2, 64, False): 186.0, (3, 3, 64, False): 180.0})  # fmt: skip
    monkeypatch.setattr(tune_mod, "run_local", fake)
    base = Settings(cpus_per_task=1, knobs={"num_workers": 0, "batch_size": 64})
    options = TuneOptions(max_cores=4, stages=("workers",))
    result = Tuner(_request(tmp_path, base), options).run()
    assert result.best is not None and result.best.rate == 190.0
    assert (result.best.settings.cpus_per_task, result.best.settings.knobs["num_workers"]) == (2, 1)
    tried = [(s.cpus_per_task, s.knobs["num_workers"]) for s in fake.calls]
    assert tried == [(1, 0), (1, 1), (2, 0), (2, 1), (2, 2), (3, 0)]  # two misses past 190


def test_a_cpu_bound_run_takes_cores_for_compute_not_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CPU training with no input cost: a second core speeds up PyTorch's own threads, a
    worker does not. The decision says which of the two paid."""
    fake = FakeRuns({(1, 0, 64, False): 800.0, (1, 1, 64, False): 790.0,
                     (2, 0, 64, False): 1300.0, (2, 1, 64, False): 1250.0,
                     (2, 2, 64, False): 1190.0})  # fmt: skip
    monkeypatch.setattr(tune_mod, "run_local", fake)
    base = Settings(cpus_per_task=1, knobs={"num_workers": 0, "batch_size": 64})
    options = TuneOptions(max_cores=2, stages=("workers",))
    result = Tuner(_request(tmp_path, base), options).run()
    assert result.best is not None
    assert (result.best.settings.cpus_per_task, result.best.settings.knobs["num_workers"]) == (2, 0)
    text = "\n".join(result.decisions)
    assert "with the same 0 workers: the cores run PyTorch's compute threads" in text
    assert "more workers on those cores did not pay (2 cpu, workers 1, batch 64: -3.8 %)" in text


def test_the_budget_stops_the_trials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeRuns({(1, 0, 64, False): 100.0, (1, 1, 64, False): 150.0})
    monkeypatch.setattr(tune_mod, "run_local", fake)
    now = [0.0]

    def clock() -> float:
        now[0] += 10.0  # every look at the clock: 10 s later
        return now[0]

    base = Settings(cpus_per_task=1, knobs={"num_workers": 0})
    options = TuneOptions(budget_s=25.0, max_cores=4)
    result = Tuner(_request(tmp_path, base), options, clock=clock).run()
    assert result.stopped is not None and "time budget of 25 s" in result.stopped
    assert len(fake.calls) < 4


def test_the_winning_settings_leave_out_the_trial_only_knobs() -> None:
    knobs = {"num_workers": 1, "max_steps": 13, "log_interval": 1}
    trial = tune_mod.Trial("workers", Settings(knobs=knobs), (1.0,), ("r",), True)
    result = tune_mod.TuneResult(base=trial, best=trial)
    winner = tune_mod.winning_settings(result)
    assert winner is not None and dict(winner.knobs) == {"num_workers": 1}


def test_a_run_record_reads_back_as_it_was_written(two_runs: list[Path]) -> None:
    from tuneadvisor.relaunch.records import read_record, write_record

    record = read_record(two_runs[0])
    again = read_record(write_record(two_runs[0], record).path or two_runs[0])
    assert again == record and again.summary.samples_per_s == 100.0
    assert [e.accuracy for e in again.epochs] == [0.5, 0.7]


def test_a_bad_run_record_is_one_error_naming_the_file_and_field(tmp_path: Path) -> None:
    from tuneadvisor.errors import InputError
    from tuneadvisor.relaunch.records import read_record

    (tmp_path / "run.json").write_text(json.dumps(
        {"kind": "tuneadvisor-run", "id": "x", "epochs": [{"epoch": 1, "accuracy": "high"}]}
    ))  # fmt: skip
    with pytest.raises(InputError) as caught:
        read_record(tmp_path)
    text = str(caught.value)
    assert "run.json" in text and "epochs[0].accuracy" in text and "\n" not in text
