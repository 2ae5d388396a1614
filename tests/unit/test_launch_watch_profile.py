"""What runs beside the training and what each rank profiles: the watch lines of a submitted
job script, the per-rank kernprof under torchrun and srun, and the usage read back from a
`watch --record` file into run records and `compare`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console

from tuneadvisor.compare.tables import load_item, resources_table, to_json
from tuneadvisor.relaunch.bundled import bundled
from tuneadvisor.relaunch.local_allocation import emulate
from tuneadvisor.relaunch.runner import RunRequest, plan_tasks
from tuneadvisor.relaunch.settings import Settings, render_job_script
from tuneadvisor.relaunch.submit import launch_line, profile_names, submitted_record
from tuneadvisor.relaunch.usage import read_usage, recorded_usage


def _request(tmp_path: Path, name: str, settings: Settings, **kw: Any) -> RunRequest:
    return RunRequest(bundled(name), settings, tmp_path, "/opt/py/bin/python", tmp_path, **kw)


def _recording(path: Path, cores: list[float], rss: list[float], util: float | None) -> Path:
    rows: list[dict[str, Any]] = [{"format": "tuneadvisor-watch", "version": 1}]
    for t, (c, r) in enumerate(zip(cores, rss, strict=True)):
        row: dict[str, Any] = {"t": t, "host": {"proc_cpu_pct": 100 * c, "proc_rss_mib": r}}
        if util is not None:
            row["gpus"] = [{"index": 0, "util_pct": util, "mem_used_mib": 2000.0}]
        rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# --------------------------------------------------------------------------- job scripts


def test_without_watch_the_job_is_the_launch_line_alone(tmp_path: Path) -> None:
    req = _request(tmp_path, "mnist_single", Settings())
    text = render_job_script(req.settings, name="x", launch=launch_line(req), workdir=tmp_path,
                             output="o")  # fmt: skip
    assert "tuneadvisor watch" not in text and "train_pid" not in text


def test_the_submitted_record_points_at_the_jobs_recording_and_rank_profiles(
    tmp_path: Path,
) -> None:
    req = _request(tmp_path, "mnist_ddp", Settings(ntasks=2), profile=True)
    record = submitted_record(req, "r1", tmp_path, tmp_path / "job.sbatch", "4242")
    assert record.paths.metrics == ("metrics-4242.jsonl",)
    assert record.paths.profiles == ("4242_0.lprof", "4242_1.lprof")
    written = json.loads((tmp_path / "run.json").read_text())
    assert written["paths"]["metrics"] == ["metrics-4242.jsonl"]
    quiet = _request(tmp_path, "mnist_single", Settings(), profile=True, watch=False)
    assert profile_names(quiet, "7") == ["7.lprof"]
    assert submitted_record(quiet, "r2", tmp_path, tmp_path / "j", "7").paths.metrics == ()


def test_srun_ranks_each_name_their_profile_in_their_own_shell(tmp_path: Path) -> None:
    line = launch_line(_request(tmp_path, "mnist_ddp", Settings(ntasks=2), profile=True))
    assert line[:3] == ["srun", "sh", "-c"]
    assert '"${SLURM_JOB_ID}_${SLURM_PROCID}.lprof"' in line[3] and line[3].endswith('"$@"')
    assert line[4] == "sh" and line[5:7] == ["--data-dir", str(tmp_path.resolve())]


# --------------------------------------------------------------------------- torchrun


def test_an_unprofiled_torchrun_runs_the_script_itself(tmp_path: Path) -> None:
    settings = Settings(ntasks=2)
    req = _request(tmp_path, "mnist_torchrun", settings)
    alloc = emulate(settings, name="t", submit_dir=str(tmp_path), cores=[0, 1])
    (task,), profiles = plan_tasks(req, alloc, tmp_path)
    assert "--no-python" not in task.argv and profiles == []
    assert task.argv[task.argv.index("0") + 1].endswith("mnist_torchrun.py")


# --------------------------------------------------------------------------- usage


def test_usage_comes_from_the_recording_through_the_metrics_facts(tmp_path: Path) -> None:
    path = _recording(tmp_path / "m.jsonl", [0.5, 1.5, 1.0, 1.0], [500, 900, 800, 700], 40.0)
    usage = read_usage([path])
    assert usage["cores_used"] == 1.0 and usage["max_rss_mib"] == 900.0
    assert 1.0 < usage["cores_used_p95"] <= 1.5 and usage["samples"] == 4
    assert usage["gpu_util_pct"] == 40.0 and usage["gpus"] == 1
    assert recorded_usage([tmp_path / "missing.jsonl"]) == {}
    (tmp_path / "bad.jsonl").write_text("not a recording\n")
    assert recorded_usage([tmp_path / "bad.jsonl"]) == {}


def _run(folder: Path, name: str, metrics: list[str], resources: dict[str, Any]) -> Path:
    run = folder / name
    run.mkdir(parents=True)
    data = {
        "kind": "tuneadvisor-run", "schema": 1, "id": name, "label": name,
        "status": "completed", "summary": {"samples_per_s": 100.0},
        "settings": Settings(cpus_per_task=2, mem="2G").to_json(), "resources": resources,
        "paths": {"profiles": [], "metrics": metrics},
    }  # fmt: skip
    (run / "run.json").write_text(json.dumps(data))
    return run


def test_compare_shows_cores_and_memory_used_against_requested(tmp_path: Path) -> None:
    sampled = _run(tmp_path, "sampled", ["metrics.jsonl"], {"cores_used": 1.9})
    _recording(sampled / "metrics.jsonl", [1.0, 1.0, 1.0, 1.0], [512, 1024, 1024, 900], None)
    plain = _run(tmp_path, "plain", [], {"cores_used": 1.9, "max_rss_mib": 300.0})
    # a submitted job's recording not written yet: the record's own numbers, no error
    pending = _run(tmp_path, "pending", ["metrics-9.jsonl"],
                   {"sampled": {"cores_used": 0.5, "samples": 3}})  # fmt: skip
    items = [load_item(str(p)) for p in (sampled, plain, pending)]
    console = Console(width=160, record=True)
    console.print(resources_table(items))
    rows = {line.split("│")[1].strip(): line for line in console.export_text().splitlines()
            if line.startswith("│")}  # fmt: skip
    # the units in the headings (MiB, rounds): the figures alone in the cells
    assert "1.00 / 1.00 (50 %)" in rows["sampled"] and "1,024 (50 %)" in rows["sampled"]
    assert rows["sampled"].rstrip("│ ").endswith(" 4")
    assert "1.90 (95 %)" in rows["plain"] and "300 (15 %)" in rows["plain"]
    assert " no " in rows["plain"]
    assert "0.50 (25 %)" in rows["pending"] and rows["pending"].rstrip("│ ").endswith(" 3")
    out = to_json(items)
    assert out[0]["metrics"]["cores_used_p95"] == 1.0 and out[1]["metrics"] == {}
