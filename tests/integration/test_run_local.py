"""`tuneadvisor run`, `compare` and `tune` end to end: real training processes in an
emulated allocation with `tuneadvisor watch` beside them, their records and profiles (one per
torchrun rank), and submissions through a stand-in sbatch and the local Slurm."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.report_schema import checked

pytestmark = [pytest.mark.torch]

TUNEADVISOR = [sys.executable, "-m", "tuneadvisor"]
QUICK = ["--max-steps", "3", "--epochs", "1", "--batch-size", "16", "--log-interval", "1",
         "--max-eval-batches", "1", "--no-progress"]  # fmt: skip


def _cli(
    torch_python: str, cwd: Path, *argv: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "MASTER_"))}
    base["TUNEADVISOR_TORCH_PYTHON"] = torch_python
    return subprocess.run(
        [*TUNEADVISOR, *argv], capture_output=True, text=True, cwd=cwd, timeout=600,
        env={**base, **(env or {})}, check=False,
    )  # fmt: skip


def _only_run(runs: Path) -> dict[str, Any]:
    (record,) = list(runs.glob("*/run.json"))
    data: dict[str, Any] = json.loads(record.read_text())
    return data


def test_run_records_a_profiled_run_inside_its_allocation(
    torch_python: str, mnist: Path, tmp_path: Path
) -> None:
    proc = _cli(torch_python, tmp_path, "run", "mnist_single", "--data-dir", str(mnist),
                "--cpus-per-task", "1", "--num-workers", "0", "--profile",
                "--label", "baseline", *QUICK)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = _only_run(tmp_path / "runs")
    assert run["status"] == "completed" and run["label"] == "baseline"
    assert run["settings"]["cpus_per_task"] == 1 and run["settings"]["knobs"]["num_workers"] == 0
    # the script saw the job's variables and only the one core it asked for
    start = run["start"]
    assert start["slurm_job_id"] == run["allocation"]["job_id"] and start["threads"] == 1
    assert len(start["cores"]) == 1 and start["cores"] == run["allocation"]["cores"][0]
    assert run["versions"]["torch"].startswith("2.") and run["host"]["hostname"]
    assert [s["step"] for s in run["steps"]] == [1, 2, 3]
    assert run["epochs"][0]["accuracy"] is not None and run["epochs"][0]["train_loss"] > 0
    assert run["summary"]["samples_per_s"] > 0 and run["resources"]["cpu_s"] > 0
    folder = tmp_path / "runs" / run["id"]
    assert run["paths"]["profiles"] == ["profile.lprof"] and (folder / "profile.lprof").is_file()
    # its DataLoader workers (none here) would run without line_profiler's tracer: trainkit
    assert run["start"]["profile_workers_traced"] is False
    assert run["profile"] == {"workers_traced": False}
    # watch sampled the training tree beside it, into the run's metrics.jsonl
    assert run["paths"]["metrics"] == ["metrics.jsonl"], run["notes"]
    sampled = run["resources"]["sampled"]
    assert sampled["samples"] >= 1 and sampled["max_rss_mib"] > 50, sampled
    assert (folder / "metrics.jsonl").read_text().startswith('{"format":"tuneadvisor-watch"')
    # compare reads the profile through the run: its train() is mostly the DataLoader line's
    cmp = _cli(torch_python, tmp_path, "compare", str(folder), "--no-plots")
    assert cmp.returncode == 0, cmp.stderr
    assert "Share of profiled time by line kind" in cmp.stdout and "dataloader" in cmp.stdout
    # resources from the recording: the rounds sampled, the last column of the run's row (#1)
    rows = [line for line in cmp.stdout.splitlines() if line.startswith("│ #1 ")]
    assert "rounds" in cmp.stdout and any(
        line.rstrip(" │").split("│")[-1].strip() == f"{sampled['samples']:.0f}" for line in rows
    ), cmp.stdout


def test_run_from_a_report_applies_its_advice(
    torch_python: str, mnist: Path, tmp_path: Path
) -> None:
    report: dict[str, Any] = {
        "tool": {"name": "tuneadvisor", "version": "0.1.0", "schema": 1},
        "profile": None,
        "job": {"path": "mnist.sbatch", "directives": {"cpus-per-task": "1", "ntasks": "1"}},
        "findings": [],
        "advice": {"plan": {
            "sbatch": {"cpus-per-task": {"value": 2, "because": ["dataloader-bound"]}},
            "script": {"num_workers": {"value": 1, "because": ["dataloader-bound"]}},
            "env": {}, "notes": [],
        }},
    }  # fmt: skip
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    proc = _cli(torch_python, tmp_path, "run", "mnist_single", "--data-dir", str(mnist),
                "--from", str(path), "--no-watch", *QUICK)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = _only_run(tmp_path / "runs")
    assert run["paths"]["metrics"] == [] and not run["resources"]["sampled"]
    assert not (tmp_path / "runs" / run["id"] / "metrics.jsonl").exists()
    assert run["settings"]["cpus_per_task"] == 2
    assert run["settings"]["because"]["num_workers"] == ["dataloader-bound"]
    assert run["start"]["num_workers"] == 1 and run["source"]["report"] == str(path)
    assert run["allocation"]["env"]["SLURM_CPUS_PER_TASK"] == "2"


@pytest.mark.slow
def test_run_ddp_emulates_srun_with_one_core_per_task(
    torch_python: str, mnist: Path, tmp_path: Path
) -> None:
    proc = _cli(torch_python, tmp_path, "run", "mnist_ddp", "--data-dir", str(mnist),
                "--ntasks", "2", "--cpus-per-task", "1", "--num-workers", "0", *QUICK)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = _only_run(tmp_path / "runs")
    assert run["start"]["world_size"] == 2 and run["start"]["launcher"] == "srun"
    assert len(run["commands"]) == 2 and run["exit_codes"] == [0, 0]
    cores = run["allocation"]["cores"]
    if len({c for task in cores for c in task}) == 2:  # two cores here: one each
        assert cores[0] != cores[1]
    assert run["summary"]["samples"] == 3 * 16 * 2
    # one watch over both tasks' trees
    assert run["paths"]["metrics"] == ["metrics.jsonl"], run["notes"]
    watched = (tmp_path / "runs" / run["id"] / "watch.log").read_text()
    assert "pid " + ", ".join(str(p) for p in run["task_pids"]) in watched


def test_a_failing_run_is_recorded_and_says_why(torch_python: str, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    (empty / "MNIST" / "raw").mkdir(parents=True)
    (empty / "MNIST" / "raw" / "train-images-idx3-ubyte").write_bytes(b"")
    proc = _cli(torch_python, tmp_path, "run", "mnist_single", "--data-dir", str(empty), *QUICK)
    assert proc.returncode == 1
    run = _only_run(tmp_path / "runs")
    assert run["status"] == "failed" and run["exit_codes"] == [2]  # the script's exit status
    # Why: the training script's own error, kept with the run and shown under the one line.
    why = f"error: no MNIST under {empty / 'MNIST' / 'raw'}"
    kept = Path(run["paths"]["dir"]) / "stderr-rank0.log"
    assert why in kept.read_text()
    said = proc.stderr.splitlines()
    assert f"tuneadvisor: run {run['id']} failed" in said
    assert any(line.startswith(why) for line in said), proc.stderr


def test_run_without_data_says_how_to_get_it(torch_python: str, tmp_path: Path) -> None:
    proc = _cli(torch_python, tmp_path, "run", "mnist_single", "--data-dir", "nothing", *QUICK)
    assert proc.returncode == 2 and "make_mnist_data.py" in proc.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_tune_on_a_tiny_budget_writes_the_winning_job(
    torch_python: str, mnist: Path, tmp_path: Path
) -> None:
    proc = _cli(torch_python, tmp_path, "tune", "mnist_single", "--data-dir", str(mnist),
                "--cpus-per-task", "1", "--num-workers", "0", "--batch-size", "16",
                "--stages", "workers,pin", "--max-cores", "1", "--steps", "2", "--warmup", "1",
                "--budget", "120", "-o", "tuned.sbatch")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (summary_path,) = list((tmp_path / "runs").glob("*tune-mnist_single*/tune.json"))
    summary = json.loads(summary_path.read_text())
    tried = [(t["cpus_per_task"], t["knobs"]["num_workers"]) for t in summary["trials"]]
    assert tried == [(1, 0), (1, 1)]  # one core: the base and one worker
    assert all(t["samples_per_s"] and t["ok"] for t in summary["trials"])
    assert any("pinned memory: not tried" in d for d in summary["decisions"])
    job = (tmp_path / "tuned.sbatch").read_text()
    assert "#SBATCH --cpus-per-task=1" in job and "mnist_single.py" in job
    assert "--max-steps" not in job  # trial-only knobs stay out of the job
    # The tuned job records itself as `run --submit`'s does, and report still finds the script.
    assert 'watch --headless --interval 1 --pid "$train_pid"' in job
    report = _cli(torch_python, tmp_path, "report", "--job", "tuned.sbatch", "--format", "json")
    assert report.returncode == 0, report.stderr
    assert "script.num_workers.source" in checked(json.loads(report.stdout))["advice"]["facts"]


def test_run_submit_writes_the_job_script_and_calls_sbatch(
    torch_python: str, mnist: Path, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/sbatch-args\necho 4242\n')
    sbatch.chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    proc = _cli(torch_python, tmp_path, "run", "mnist_ddp", "--data-dir", str(mnist),
                "--ntasks", "2", "--cpus-per-task", "3", "--num-workers", "2", "--submit",
                env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Submitted batch job 4242" in proc.stdout
    run = _only_run(tmp_path / "runs")
    assert run["status"] == "submitted" and run["slurm_job_id"] == "4242"
    job = Path(run["paths"]["dir"]) / "job.sbatch"
    args = (tmp_path / "sbatch-args").read_text().split()
    assert args[0] == "--parsable" and args[-1].endswith("job.sbatch")
    text = job.read_text()
    assert "#SBATCH --ntasks=2" in text and "#SBATCH --cpus-per-task=3" in text
    assert "\nsrun " in text and "--num-workers 2" in text
    # tuneadvisor watch records the job's processes (srun's tasks are not srun's children)
    assert '-m tuneadvisor watch --headless --interval 1 --job "$SLURM_JOB_ID"' in text
    assert run["paths"]["metrics"] == ["metrics-4242.jsonl"]


@pytest.mark.slurm
@pytest.mark.slow
def test_run_submit_on_the_local_slurm(torch_python: str, mnist: Path, tmp_path: Path) -> None:
    from tests.integration.slurm_cluster import start_cluster

    env = start_cluster()  # skips where no local cluster can run
    proc = _cli(torch_python, tmp_path, "run", "mnist_single", "--data-dir", str(mnist),
                "--cpus-per-task", "1", "--num-workers", "0", "--max-steps", "3", "--epochs",
                "1", "--max-eval-batches", "1", "--submit", "--wait", "300",
                env={"SLURM_CONF": env["SLURM_CONF"], "PATH": env["PATH"]})  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = _only_run(tmp_path / "runs")
    assert run["status"] == "completed" and run["summary"]["steps"] == 3, run
    assert run["epochs"] and run["versions"]["torch"]
    # the job's own tuneadvisor watch wrote the recording the record points at
    (name,) = run["paths"]["metrics"]
    assert name == f"metrics-{run['slurm_job_id']}.jsonl"
    assert (Path(run["paths"]["dir"]) / name).is_file()
    assert run["resources"]["sampled"]["samples"] >= 1, run["resources"]


@pytest.mark.slow
def test_run_torchrun_profiles_every_rank(torch_python: str, mnist: Path, tmp_path: Path) -> None:
    proc = _cli(torch_python, tmp_path, "run", "mnist_torchrun", "--data-dir", str(mnist),
                "--ntasks", "2", "--cpus-per-task", "1", "--num-workers", "0", "--profile",
                "--no-watch", *QUICK)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = _only_run(tmp_path / "runs")
    assert run["start"]["launcher"] == "torchrun" and run["start"]["world_size"] == 2
    assert run["paths"]["profiles"] == ["profile-rank0.lprof", "profile-rank1.lprof"]
    folder = Path(run["paths"]["dir"])
    profiles = [str(folder / name) for name in run["paths"]["profiles"]]
    report = _cli(torch_python, tmp_path, "report", *profiles, "--format", "json")
    assert report.returncode == 0, report.stderr
    data = checked(json.loads(report.stdout))
    (train,) = [f for f in data["profile"]["functions"] if f["name"] == "Trainer.train"]
    loader = [line for line in train["lines"] if line["kind"] == "dataloader"]
    assert len(loader) == 1 and "enumerate(self.train_loader)" in loader[0]["source"]
    # both ranks' hits, merged: 3 steps each (--max-steps leaves the loop before its end)
    assert loader[0]["hits"] == 2 * 3
