"""Real Slurm: `apply --submit` writes the tuned script and submits it; slurmctld's own view
of the new job (`scontrol show job`) has the new --cpus-per-task and --mem, kept within the
local node's cores by the node shape sinfo reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import BUSY_CORE_SEFF
from tests.integration.slurm_cluster import Cluster, burner, start_cluster, with_burner

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

# One core busy, 316 MB of 8 GB used: more cores, less memory.
SEFF = BUSY_CORE_SEFF.read_text()


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster(start_cluster())


def submitted_id(stdout: str) -> str:
    [line] = [line for line in stdout.splitlines() if line.startswith("submitted batch job ")]
    return line.split()[3]


def test_apply_submit_from_a_job_script(cluster: Cluster, tmp_path: Path) -> None:
    node_cores = max(p.cpus for p in cluster.client.partitions() if p.default)
    job = with_burner(tmp_path) / "burn.sbatch"
    job.write_text(burner(seconds=1, mib=10).replace("--mem=200M", "--mem=8G"))
    (tmp_path / "seff.txt").write_text(SEFF)
    args = ("apply", "--job", str(job), "--seff", str(tmp_path / "seff.txt"), "--submit")
    done = cluster.tuneadvisor(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    new = cluster.show(submitted_id(done.stdout))
    cores = min(4, node_cores)  # under-requested-cores asks for 4, the node may have fewer
    assert new.cpus_per_task == cores
    assert new.mem_per_node_mib == 1024  # over-requested-memory: 1.2 x 316 MB, whole GiB
    assert new.command == str(tmp_path / "burn.tuned.sbatch")
    assert new.work_dir == str(tmp_path)
    cluster.wait(new.job_id)


def test_apply_submit_from_a_jobid(cluster: Cluster, tmp_path: Path) -> None:
    """The script Slurm kept for a job killed for memory, tuned and resubmitted where it ran."""
    ran = tmp_path / "ran"
    ran.mkdir()
    with_burner(ran)
    script = burner(seconds=4, mib=300).replace("--mem=200M", "--mem=100M")
    old = cluster.submit(ran, "oom.sbatch", script)
    cluster.wait(old)
    here = tmp_path / "here"
    here.mkdir()
    done = cluster.tuneadvisor(here, "apply", "--jobid", old, "--submit")
    assert done.returncode == 0, done.stderr
    assert "job-out-of-memory" in done.stdout
    new = cluster.show(submitted_id(done.stdout))
    assert new.mem_per_node_mib == 1024
    assert new.work_dir == str(ran)  # runs where the original ran, so burn.py is found
    assert (here / f"job-{old}.tuned.sbatch").is_file()
    assert cluster.wait(new.job_id).state == "COMPLETED"
