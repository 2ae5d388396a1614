"""A real `tuneadvisor run` records its storage evidence in run.json (issue 31 §4): what the
training tree read from storage, the machine's I/O wait, and the file system under the data
folder, each read or said not read; and other processes' load on the CPUs it could use."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tuneadvisor.relaunch.local_allocation import available_cores

pytestmark = [pytest.mark.torch, pytest.mark.slow]


def _fs_type(path: Path) -> str | None:
    """The file system under ``path`` as util-linux's findmnt says (an oracle apart from
    the psutil mount table the run reads); None without findmnt."""
    if shutil.which("findmnt") is None:
        return None
    out = subprocess.run(
        ["findmnt", "-n", "-o", "FSTYPE", "-T", str(path)],
        capture_output=True, text=True, check=False, timeout=30,
    )  # fmt: skip
    return out.stdout.strip() or None


def test_a_short_run_records_read_bytes_io_wait_and_the_data_file_system(
    torch_python: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "MASTER_"))}
    env["TUNEADVISOR_TORCH_PYTHON"] = torch_python
    proc = subprocess.run(
        [sys.executable, "-m", "tuneadvisor", "run", "mnist_single", "--synthetic", "256",
         "--max-steps", "5", "--no-progress"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (path,) = (tmp_path / "runs").glob("*/run.json")
    run = json.loads(path.read_text())
    io = run["resources"]["io"]
    data_dir = Path(io["data_dir"])
    assert data_dir.is_dir() and data_dir.is_relative_to((tmp_path / "runs").resolve())
    # each figure read here (Linux, our own processes), or absent and said why: never a zero
    # standing in for "not read"
    for figure, keys in {
        "read_bytes": ("read_bytes",),
        "iowait": ("iowait_pct", "iowait_cores"),
        "fs_type": ("fs_type", "fs_mount"),
    }.items():
        if figure in io["not_read"]:
            assert not any(k in io for k in keys), io
        else:
            assert all(k in io for k in keys), io
    if sys.platform.startswith("linux") and os.path.exists("/proc/self/io"):
        assert isinstance(io["read_bytes"], int) and io["read_bytes"] >= 0
        # the first step's mark: what start-up read, inside the whole run's reads
        assert 0 <= io["read_bytes_before_first_step"] <= io["read_bytes"]
        assert 0 < io["first_step_s"] < io["wall_s"]
        assert io["read_mib_s"] >= 0
    if "iowait_pct" in io:
        assert 0 <= io["iowait_pct"] <= 100 and io["iowait_cores"] >= 0
    oracle = _fs_type(data_dir)
    if oracle is not None:
        assert io["fs_type"] == oracle and data_dir.is_relative_to(io["fs_mount"])
    # other load on the CPUs the run could use: this process's affinity, read or said why
    others = run["resources"]["cpu_others"]
    assert others["allowed_cpus"] == available_cores()
    if "others_cores" in others["not_read"]:
        assert "others_cores" not in others, others
    else:
        assert 0 <= others["others_cores"] <= len(others["allowed_cpus"])
        # the run's own CPU (the tasks, their workers, watch) is in its own, not the others'
        assert others["own_cores"] * others["wall_s"] >= run["resources"]["cpu_s"] * 0.99
