"""Real Slurm: the job scripts `apply` writes for unused tasks and for torchrun's ranks x
workers pass `sbatch --test-only` on the local cluster (node shapes from a site file of the
local node, so the plan is capped to what it has)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.slurm_cluster import REPO, Cluster, start_cluster
from tuneadvisor.slurm.jobscript.model import JobScript

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

DATA_PARALLEL = REPO / "tests" / "fixtures" / "scan_scripts" / "data_parallel.py"


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster(start_cluster())


def _site(cluster: Cluster, folder: Path) -> Path:
    """The local node's shape, as a site file."""
    (partition,) = [p for p in cluster.client.partitions() if p.default]
    site = folder / "site.toml"
    site.write_text(
        f"[partitions.{partition.partition}]\ncores = {partition.cpus}\ndefault = true\n"
    )
    return site


def _apply_and_test_only(cluster: Cluster, folder: Path, job: str, script: str) -> JobScript:
    (folder / "job.sbatch").write_text(job)
    (folder / "train.py").write_text(script)
    site = _site(cluster, folder)
    done = cluster.tuneadvisor(folder, "apply", "--job", "job.sbatch", "--site", str(site))
    assert done.returncode == 0, done.stderr
    tuned = folder / "job.tuned.sbatch"
    said = cluster.test_only(tuned)
    assert said is None, said
    return JobScript.parse(tuned.read_text(), tuned)


def test_unused_tasks_become_one_task(cluster: Cluster, tmp_path: Path) -> None:
    job = (
        "#!/bin/bash\n#SBATCH --ntasks-per-node=2\n#SBATCH --cpus-per-task=1\n"
        "#SBATCH --mem-per-cpu=100M\n#SBATCH --time=00:05:00\npython train.py\n"
    )
    tuned = _apply_and_test_only(cluster, tmp_path, job, DATA_PARALLEL.read_text()).request()
    assert (tuned.tasks_total, tuned.task_cpus) == (1, 2)


def test_torchrun_ranks_get_their_cores(cluster: Cluster, tmp_path: Path) -> None:
    script = DATA_PARALLEL.read_text().replace("shuffle=True)", "shuffle=True, num_workers=2)")
    job = (
        "#!/bin/bash\n#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n#SBATCH --mem=200M\n"
        "#SBATCH --time=00:05:00\ntorchrun --standalone --nproc-per-node=2 train.py\n"
    )
    tuned = _apply_and_test_only(cluster, tmp_path, job, script).request()
    assert tuned.task_cpus == 2  # 2 ranks want 4 cores; the local node has 2
