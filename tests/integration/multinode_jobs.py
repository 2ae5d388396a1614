"""The multi-node jobs the `multinode` tests share, run once per session (the tests carry
`xdist_group("multinode")`, and scripts/test distributes with `--dist loadgroup`, so they run
on one worker): the Princeton-shaped DDP job over 3 nodes x 2 tasks and the torchrun job
over 2 nodes, both the bundled job scripts with the cluster's shape given to sbatch
(`--cpus-per-task=1 --mem=...`: each node declares the machine's 2 cores and 6000 MB).

tests/conftest.py loads the fixtures (pytest_plugins).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration import multinode_cluster
from tests.integration.multinode_cluster import REPO, MultiCluster
from tuneadvisor.slurm.accounting.sacct.records import SacctJob

PREFIX = "TUNEADVISOR "
MAKE_DATA = REPO / "scripts" / "make_mnist_data.py"


@dataclass(frozen=True)
class FinishedJob:
    id: str
    folder: Path
    accounting: SacctJob

    @property
    def output(self) -> str:
        return (self.folder / f"slurm-{self.id}.out").read_text(errors="replace")

    @property
    def profiles(self) -> list[Path]:
        return sorted(self.folder.glob(f"{self.id}_*.lprof"))


def training_records(output: str) -> list[dict[str, Any]]:
    return [json.loads(x[len(PREFIX) :]) for x in output.splitlines() if x.startswith(PREFIX)]


def step_nodes(mn: MultiCluster, job_id: str, step: str = "0") -> tuple[str, int]:
    """Step STEP's node list and task count, as accounting has them."""
    done = subprocess.run(
        ["sacct", "-n", "-P", "-j", f"{job_id}.{step}", "-o", "NodeList,NTasks"],
        env=mn.env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    nodes, tasks = done.stdout.splitlines()[0].split("|")
    return nodes, int(tasks)


def _torch_python() -> str:
    needed = ("torch", "torchvision", "line_profiler")
    if any(importlib.util.find_spec(m) is None for m in needed):
        pytest.skip(f"needs {', '.join(needed)} in {sys.executable} (the jobs use this venv)")
    return sys.executable


def _job_folder(root: Path, data: Path, sbatch: str) -> Path:
    """A submit folder shaped like the repository root: training/, data/, the job script."""
    root.mkdir()
    (root / "training").symlink_to(REPO / "training")
    (root / "data").symlink_to(data)
    (root / sbatch).write_text((REPO / "slurm" / sbatch).read_text())
    return root


def _run(mn: MultiCluster, folder: Path, sbatch: str, *options: str) -> FinishedJob:
    job_id = mn.submit(folder, folder / sbatch, *options)
    accounting = mn.wait(job_id)
    return FinishedJob(job_id, folder, accounting)


@pytest.fixture(scope="session")
def mn(tmp_path_factory: pytest.TempPathFactory) -> MultiCluster:
    return multinode_cluster.cluster(tmp_path_factory.mktemp("shims"))


@pytest.fixture(scope="session")
def mnist_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    python = _torch_python()
    root = tmp_path_factory.mktemp("mnist")
    # 768 training samples: 2 steps per epoch for 6 ranks of 64
    subprocess.run(
        [python, str(MAKE_DATA), str(root), "--train", "768", "--test", "64", "--quiet"],
        check=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    return root


@pytest.fixture(scope="session")
def ddp_job(
    mn: MultiCluster, mnist_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> FinishedJob:
    folder = _job_folder(tmp_path_factory.mktemp("ddp") / "job", mnist_data, "mnist_ddp.sbatch")
    return _run(mn, folder, "mnist_ddp.sbatch", "--nodes=3", "--ntasks-per-node=2",
                "--cpus-per-task=1", "--mem=4000M")  # fmt: skip


@pytest.fixture(scope="session")
def torchrun_job(
    mn: MultiCluster, mnist_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> FinishedJob:
    folder = _job_folder(
        tmp_path_factory.mktemp("torchrun") / "job", mnist_data, "mnist_torchrun.sbatch"
    )
    return _run(mn, folder, "mnist_torchrun.sbatch", "--nodes=2", "--ntasks-per-node=1",
                "--cpus-per-task=2", "--mem=5000M")  # fmt: skip
