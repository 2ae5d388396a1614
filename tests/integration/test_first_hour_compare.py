"""`compare` after `tune` (issue 24, point 11): the README's `compare runs/*-mnist_single-*`
matched the tune folder too, which has no run.json. A tune folder now stands for its trials;
and the README's glob for runs alone, `runs/*[0-9]-mnist_single-*`, leaves it out. Both with
the folders a real `run` and a real `tune` make."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_training_mnist import _make_data, _need

pytestmark = [pytest.mark.torch, pytest.mark.slow]

QUICK = ["--max-steps", "3", "--epochs", "1", "--batch-size", "16", "--max-eval-batches", "1",
         "--no-progress", "--cpus-per-task", "1", "--num-workers", "0"]  # fmt: skip


def _cli(torch_python: str, cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "MASTER_"))}
    env["TUNEADVISOR_TORCH_PYTHON"] = torch_python
    env.pop("TUNEADVISOR_RUNS_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "tuneadvisor", *argv], capture_output=True, text=True, cwd=cwd,
        env=env, timeout=600, check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run, then one tune of two trials, in one working folder (as the README's order)."""
    torch_python = _need("torch", "torchvision")
    cwd = tmp_path_factory.mktemp("first-hour")
    data = cwd / "data"
    _make_data(torch_python, data, 256, 64)
    run = _cli(torch_python, cwd, "run", "mnist_single", "--data-dir", str(data), "--no-watch",
               *QUICK)  # fmt: skip
    assert run.returncode == 0, run.stderr
    tune = _cli(torch_python, cwd, "tune", "mnist_single", "--data-dir", str(data),
                "--cpus-per-task", "1", "--num-workers", "0", "--batch-size", "16",
                "--stages", "workers", "--max-cores", "1", "--steps", "2", "--warmup", "1",
                "--budget", "300")  # fmt: skip
    assert tune.returncode == 0, tune.stderr
    return cwd


def _compare(cwd: Path, pattern: str) -> list[dict[str, Any]]:
    paths = sorted(glob.glob(pattern, root_dir=cwd))  # as the shell expands it
    proc = _cli(sys.executable, cwd, "compare", *paths, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    items: list[dict[str, Any]] = json.loads(proc.stdout)["items"]
    return items


def test_the_readme_glob_with_a_tune_folder_compares_its_trials(runs: Path) -> None:
    (tune,) = list((runs / "runs").glob("*-tune-mnist_single-*"))
    summary = json.loads((tune / "tune.json").read_text())
    trial_ids = [run_id for t in summary["trials"] for run_id in t["runs"]]
    assert len(trial_ids) == 2
    items = _compare(runs, "runs/*-mnist_single-*")
    paths = [runs / i["path"] for i in items]  # as given: relative to the working folder
    # the run, then the tune's trials in the order tune ran them; never the tune folder itself
    assert [p.name for p in paths[1:]] == trial_ids
    assert all(p.parent == tune / "trials" for p in paths[1:])
    assert paths[0].parent == runs / "runs" and "tune" not in paths[0].name
    assert all(i["samples_per_s"] for i in items)
    assert [i["label"].split(":")[0] for i in items[1:]] == ["tune base", "tune workers"]


def test_the_readme_glob_for_runs_alone_leaves_the_tune_out(runs: Path) -> None:
    items = _compare(runs, "runs/*[0-9]-mnist_single-*")
    assert len(items) == 1 and "tune" not in Path(items[0]["path"]).name


def test_a_tune_folder_alone_and_without_its_summary(runs: Path, tmp_path: Path) -> None:
    (tune,) = list((runs / "runs").glob("*-tune-mnist_single-*"))
    assert len(_compare(runs, str(tune))) == 2
    # a tune stopped before its summary: the trials folder, oldest first
    copy = tmp_path / tune.name
    subprocess.run(["cp", "-a", str(tune), str(copy)], check=True)
    (copy / "tune.json").unlink()
    assert len(_compare(tmp_path, copy.name)) == 2
    # nothing to compare in it: one line, exit 2
    empty = tmp_path / "20260101-000000-tune-mnist_single-0000"
    (empty / "trials").mkdir(parents=True)
    proc = _cli(sys.executable, tmp_path, "compare", empty.name)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"tuneadvisor: {empty.name}: a tune folder without any trial run to compare"
    ]
