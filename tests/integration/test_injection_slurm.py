"""The injection forms of tests/process/test_injection.py against the local Slurm cluster:
words that are allowed reach the job as one quoted word each and run nothing when the job
runs; values that are refused never reach sbatch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

TUNEADVISOR = [sys.executable, "-m", "tuneadvisor"]


def test_the_job_runs_the_words_as_words_on_the_local_cluster(tmp_path: Path) -> None:
    from tests.integration.slurm_cluster import WAIT_S, start_cluster

    env = start_cluster()  # skips where no local cluster can run
    tmp_path.chmod(0o755)
    data = tmp_path / "data" / "MNIST" / "raw"
    data.mkdir(parents=True)
    (data / "train-images-idx3-ubyte").write_bytes(b"")
    echo = tmp_path / "echo-args"  # the "python" of the job: prints each argument it gets
    echo.write_text('#!/bin/sh\nfor a; do printf "[%s]\\n" "$a"; done\n')
    echo.chmod(0o755)
    run = {**os.environ, "SLURM_CONF": env["SLURM_CONF"], "PATH": env["PATH"]}
    run.pop("TUNEADVISOR_TORCH_PYTHON", None)
    base = [
        *TUNEADVISOR, "run", "mnist_single", "--data-dir", str(tmp_path / "data"),
        "--runs", str(tmp_path / "runs"), "--no-watch", "--python", str(echo), "--submit",
    ]  # fmt: skip
    refused = subprocess.run(
        [*base, "--time", "1:00\ntouch pwned"], capture_output=True, text=True, cwd=tmp_path,
        env=run, timeout=60, check=False,
    )  # fmt: skip
    assert refused.returncode == 2 and not (tmp_path / "runs").exists()
    done = subprocess.run(
        [*base, "--wait", str(WAIT_S), "--extra=$(touch pwned)", "--extra=`touch pwned`;x"],
        capture_output=True, text=True, cwd=tmp_path, env=run, timeout=WAIT_S + 60, check=False,
    )  # fmt: skip
    (record,) = (tmp_path / "runs").glob("*/run.json")
    folder = Path(json.loads(record.read_text())["paths"]["dir"])
    outputs = list(folder.glob("slurm-*.out"))
    assert len(outputs) == 1, f"the job left no output in {WAIT_S} s: {done.stdout}{done.stderr}"
    (output,) = outputs
    said = output.read_text()
    assert "[$(touch pwned)]" in said and "[`touch pwned`;x]" in said, done.stderr + said
    assert not list(tmp_path.rglob("pwned"))
