"""Real Slurm: `tune --job` tunes a training script of the test's own (num_workers=0 written
as a literal, generated items that cost CPU, torch on the CPU) through its job script, as one
job array on the one-node cluster; the user's files are never edited."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.slurm_cluster import Cluster, start_cluster
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.tune.job_array import ArrayPlan, array_script
from tuneadvisor.tune.job_grid import JobSetting

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

TRAIN_PY = """\
import torch
from torch.utils.data import DataLoader, Dataset


class Costly(Dataset):
    \"\"\"Generated items that each cost CPU to make.\"\"\"

    def __len__(self):
        return 100000

    def __getitem__(self, i):
        x = torch.randn(128, 128, generator=torch.Generator().manual_seed(i))
        for _ in range(5):
            x = torch.tanh(x @ x.T / 128)
        return x.flatten()[:256], i % 10


def main():
    torch.set_num_threads(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048),
        torch.nn.ReLU(), torch.nn.Linear(2048, 10),
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Costly(), batch_size=8, shuffle=True, num_workers=0)
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()


if __name__ == "__main__":
    main()
"""

JOB = """\
#!/bin/bash
#SBATCH --job-name=mytrain
#SBATCH --cpus-per-task=1
#SBATCH --mem=2G
#SBATCH --time=00:10:00
python train.py
"""


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster(start_cluster())


def _busy() -> float:
    """Runnable threads per core on this machine (the 1-minute load average over the cores)."""
    return os.getloadavg()[0] / (os.cpu_count() or 1)


def test_tune_job_finds_the_cores_and_workers_without_editing(
    cluster: Cluster, tmp_path: Path
) -> None:
    (tmp_path / "train.py").write_text(TRAIN_PY)
    (tmp_path / "train.sbatch").write_text(JOB)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    busy = _busy()
    done = cluster.tuneadvisor(
        tmp_path, "tune", "--job", "train.sbatch", "--steps", "30", "--repeats", "3",
        "--format", "json",
    )  # fmt: skip
    busy = max(busy, _busy())
    assert done.returncode == 0, done.stderr
    ledger = json.loads(done.stdout)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name in before} == before
    assert "12 done of 12" in done.stderr  # the progress line, to the end
    trials = ledger["trials"]
    assert [t["array_task_id"] for t in trials] == list(range(12))
    failed = [t["failed"] for t in trials if t["failed"]]
    assert not failed, failed
    settings = [(t["setting"]["cpus_per_task"], t["setting"]["num_workers"]) for t in trials]
    assert settings[:4] == settings[4:8] == settings[8:]  # the repeats interleaved
    assert settings[0] == (1, 0) and (2, 1) in settings  # the start, and the node's 2 cores
    assert all(t["node"] == "vm" for t in trials)
    winner = ledger["winner"]
    tuned_path = tmp_path / "train.tuned.sbatch"
    assert tuned_path.exists() == (winner is not None)  # nothing written without a winner
    if winner is not None:
        tuned = JobScript.parse(tuned_path.read_text())
        assert tuned.directives()["cpus-per-task"] == str(winner["cpus_per_task"])
        assert f"tuned from tune array {ledger['job_id']}" in tuned.text
    if busy > 1.0:
        # other work on the machine takes cores from the trials: more threads get more of
        # the machine whatever their cores, and the spreads hide the difference
        pytest.skip(f"the machine was busy ({busy:.1f} runnable per core): no finding asserted; "
                    f"winner {winner}")  # fmt: skip
    assert winner is not None, done.stdout
    assert winner["cpus_per_task"] == 2 and winner["num_workers"] >= 1
    assert (tmp_path / "train.py.tuneadvisor.patch").is_file()


@pytest.mark.parametrize(
    "settings", [((1, 0), (1, 1), (2, 1), (2, 2)), ((2, 0), (1, 0)), ((1, 1),)]
)
def test_the_array_script_is_accepted_by_test_only(
    cluster: Cluster, tmp_path: Path, settings: tuple[tuple[int, int], ...]
) -> None:
    folder = tmp_path / "tune folder 'quoted'"
    folder.mkdir()
    job = JobScript.parse(JOB + "#SBATCH --output=ignored-after-command\n")
    plan = ArrayPlan(tuple(JobSetting(c, w) for c, w in settings), repeats=2, steps=5)
    array = folder / "array.sbatch"
    array.write_text(array_script(job, plan, folder, "tune-mytrain"))
    assert cluster.test_only(array) is None
    syntax = subprocess.run(["bash", "-n", str(array)], capture_output=True, text=True, check=False)
    assert syntax.returncode == 0, syntax.stderr


def test_a_job_sbatch_refuses_is_one_line_and_leaves_nothing(
    cluster: Cluster, tmp_path: Path
) -> None:
    (tmp_path / "train.py").write_text(TRAIN_PY)
    (tmp_path / "train.sbatch").write_text(JOB.replace("--mem=2G", "--partition=nosuch"))
    done = cluster.tuneadvisor(tmp_path, "tune", "--job", "train.sbatch")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "invalid partition" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py", "train.sbatch"]
