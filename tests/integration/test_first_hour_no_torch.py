"""The first hour without torch (issue 24, point 2): the demo installs no training extra, so
`run`, `tune` and `watch -- python training/...` meet an interpreter without torch. Each says
so in one line with how to get it, exits 2, and leaves no run record, data or tune folder.

The interpreter without torch is this one started with ``-S`` (no site-packages): the same
Python, deterministic wherever the tests run, and the training script fails there as it would
in the demo's venv."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tuneadvisor.relaunch.preflight import torch_script_python

REPO = Path(__file__).resolve().parents[2]
TRAINING = REPO / "training" / "mnist_single.py"


@pytest.fixture
def no_torch_python(tmp_path: Path) -> Path:
    """``python3`` in a folder of its own: this interpreter without site-packages."""
    folder = tmp_path / "bin"
    folder.mkdir()
    python = folder / "python3"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    done = subprocess.run([str(python), "-c", "import torch"], capture_output=True, check=False)
    assert done.returncode == 1 and b"No module named 'torch'" in done.stderr
    return python


def _cli(cwd: Path, *argv: str, python: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.pop("TUNEADVISOR_TORCH_PYTHON", None)
    if python is not None:
        env["TUNEADVISOR_TORCH_PYTHON"] = str(python)
    return subprocess.run(
        [sys.executable, "-m", "tuneadvisor", *argv], capture_output=True, text=True,
        cwd=cwd, env=env, timeout=120, check=False,
    )  # fmt: skip


def _said_no_torch(proc: subprocess.CompletedProcess[str], python: Path) -> None:
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()  # one line, no traceback
    assert line.startswith(f"tuneadvisor: {python}: the training interpreter has no torch")
    assert "pip install -e '.[train]'" in line and "TUNEADVISOR_TORCH_PYTHON" in line


def test_run_without_torch_is_one_line_and_no_record(no_torch_python: Path, tmp_path: Path) -> None:
    proc = _cli(tmp_path, "run", "mnist_single", "--synthetic", "64", python=no_torch_python)
    _said_no_torch(proc, no_torch_python)
    assert not (tmp_path / "runs").exists()  # no record, and no synthetic data made either


def test_run_names_the_interpreter_given_with_python(no_torch_python: Path, tmp_path: Path) -> None:
    proc = _cli(tmp_path, "run", "mnist_single", "--synthetic", "64", "--python",
                str(no_torch_python))  # fmt: skip
    _said_no_torch(proc, no_torch_python)
    assert not (tmp_path / "runs").exists()


def test_tune_without_torch_is_one_line_and_no_tune_folder(
    no_torch_python: Path, tmp_path: Path
) -> None:
    proc = _cli(tmp_path, "tune", "mnist_single", "--synthetic", "64", "--budget", "60",
                python=no_torch_python)  # fmt: skip
    _said_no_torch(proc, no_torch_python)
    assert not (tmp_path / "runs").exists()


def test_watch_of_a_torch_script_without_torch_is_one_line(
    no_torch_python: Path, tmp_path: Path
) -> None:
    proc = _cli(tmp_path, "watch", "--headless", "--record", "w.jsonl", "--",
                str(no_torch_python), str(TRAINING), "--max-steps", "1")  # fmt: skip
    _said_no_torch(proc, no_torch_python)
    assert not (tmp_path / "w.jsonl").exists() and not (tmp_path / "w.log").exists()


def test_a_missing_interpreter_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nothing" / "python"
    proc = _cli(tmp_path, "run", "mnist_single", "--synthetic", "64", "--python", str(missing))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"tuneadvisor: {missing}: cannot start the training interpreter: No such file or directory"
    ]
    assert not (tmp_path / "runs").exists()


def test_only_a_python_running_a_torch_script_is_asked(tmp_path: Path) -> None:
    plain = tmp_path / "plain.py"
    plain.write_text("import json\nprint(1)\n")
    optional = tmp_path / "optional.py"
    optional.write_text("try:\n    import torch\nexcept ImportError:\n    torch = None\n")
    sub = tmp_path / "sub.py"
    sub.write_text("from torch.utils.data import DataLoader\n")
    assert torch_script_python(["python3", str(TRAINING)]) is not None
    assert torch_script_python(["python3", "-u", "-X", "dev", str(sub), "--x"]) is not None
    assert torch_script_python(["python3.11", "-W", "ignore", str(TRAINING)]) is not None
    assert torch_script_python(["python3", str(plain)]) is None
    assert torch_script_python(["python3", str(optional)]) is None  # runs without it
    assert torch_script_python(["python3", "-m", "torch.utils.collect_env"]) is None
    assert torch_script_python(["python3", "-c", "import torch"]) is None
    assert torch_script_python(["bash", str(TRAINING)]) is None
    assert torch_script_python(["python3", str(tmp_path / "missing.py")]) is None
    assert torch_script_python([]) is None
