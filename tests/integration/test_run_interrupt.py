"""Ctrl-C stops `run` and `tune` (issue 33, point 2): a real process group sent SIGINT, as a
terminal sends it to the command and its training processes, exits 130 with no traceback.
`run` keeps a complete record marked interrupted; `tune` stops at once, counts no failed
trial and writes no summary and no winning job script."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.torch]

TUNEADVISOR = [sys.executable, "-m", "tuneadvisor"]
# long enough that only Ctrl-C ends it
ENDLESS = ["--max-steps", "1000000", "--epochs", "1000", "--batch-size", "16",
           "--log-interval", "1", "--num-workers", "0", "--cpus-per-task", "1"]  # fmt: skip


def _training_steps(folder: Path) -> bool:
    """Whether a training under ``folder`` has logged a step (so it is really running)."""
    for events in folder.rglob("events.jsonl"):
        try:
            text = events.read_text()
        except OSError:
            continue
        if '"event": "step"' in text or '"event":"step"' in text:
            return True
    return False


def _interrupted(torch_python: str, cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """Start ``tuneadvisor ARGV`` in a process group of its own, wait until its training
    steps, then send SIGINT to the whole group, as a terminal's Ctrl-C does."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "MASTER_"))}
    env["TUNEADVISOR_TORCH_PYTHON"] = torch_python
    proc = subprocess.Popen(
        [*TUNEADVISOR, *argv], cwd=cwd, env=env, text=True, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not _training_steps(cwd / "runs"):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the training never logged a step"
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_ctrl_c_stops_run_with_130_and_an_interrupted_record(
    torch_python: str, mnist: Path, tmp_path: Path
) -> None:
    proc = _interrupted(torch_python, tmp_path, "run", "mnist_single", "--data-dir", str(mnist),
                        "--no-progress", *ENDLESS)  # fmt: skip
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr
    (record,) = (tmp_path / "runs").glob("*/run.json")
    run = json.loads(record.read_text())  # complete JSON, not a half-written file
    assert run["status"] == "interrupted"
    assert f"tuneadvisor: run {run['id']} interrupted" in proc.stderr.splitlines()
    assert not list((tmp_path / "runs").rglob("*.tmp*"))


def test_ctrl_c_stops_tune_without_a_winner(torch_python: str, mnist: Path, tmp_path: Path) -> None:
    proc = _interrupted(
        torch_python, tmp_path, "tune", "mnist_single", "--data-dir", str(mnist),
        "--cpus-per-task", "1", "--num-workers", "0", "--batch-size", "16",
        "--stages", "workers", "--max-cores", "1", "--steps", "1000000", "--warmup", "1",
        "--budget", "3600", "-o", "tuned.sbatch",
    )  # fmt: skip
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr
    assert "tune interrupted" in proc.stderr
    assert not (tmp_path / "tuned.sbatch").exists()
    (tune,) = (tmp_path / "runs").glob("*tune-mnist_single*")
    assert not (tune / "tune.json").exists()
    # one trial started, and it stopped there: no second trial, none recorded as failed
    records = [json.loads(p.read_text()) for p in tune.glob("trials/*/run.json")]
    assert [r["status"] for r in records] == ["interrupted"]
