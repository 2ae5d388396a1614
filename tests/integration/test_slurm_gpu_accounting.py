"""Real Slurm 22.05 with the fake GPU (gres/gpu, AccountingStorageTRES=gres/gpu): what the
accounting records of a GPU job, and `report --jobid` reading GPU use from it with no log.

Slurm 22.05 gathers no gres/gpuutil or gres/gpumem (they came with 23.02 and AutoDetect=nvml):
the steps' TRESUsageInAve/Max hold cpu, mem, fs/disk and the like only, and the report says
nothing of the GPU's use. jobstats keeps its summary in AdminComment; here it is written with
`scontrol update` while the job runs (22.05's sacctmgr would lower-case it, see
tests/fixtures/slurm-22.05/17-gpu-tres-admincomment.txt), in jobstats' own format.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.slurm_cluster import Cluster, burner, start_cluster, with_burner
from tests.report_schema import checked
from tests.unit.test_jobstats import blob

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

GPU_JOB = "#SBATCH --gres=gpu:1\n#SBATCH --partition=gpu\n"


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    env = start_cluster()
    cluster = Cluster(env)
    if not any(row.gpus for row in cluster.client.partitions()):
        pytest.skip("the local cluster has no GPU gres (NUM_GPUS=0)")
    return cluster


def summary(util: float, elapsed: int) -> str:
    """A jobstats summary as its epilog stores it: one node, one GPU (minor 0)."""
    node = {
        "cpus": 1,
        "total_time": 0.5 * elapsed,
        "total_memory": 200 * 2**20,
        "used_memory": 60 * 2**20,
        "gpu_total_memory": {"0": 81920 * 2**20},
        "gpu_used_memory": {"0": 2048 * 2**20},
        "gpu_utilization": {"0": util},
    }
    return blob({"gpus": 1, "nodes": {"vm": node}, "total_time": elapsed})


def report(cluster: Cluster, folder: Path, job_id: str) -> dict[str, object]:
    done = cluster.tuneadvisor(folder, "report", "--jobid", job_id, "--format", "json")
    assert done.returncode == 0, done.stderr
    return checked(json.loads(done.stdout))  # type: ignore[no-any-return]


def test_22_05_records_no_gpu_use(cluster: Cluster, tmp_path: Path) -> None:
    script = burner(seconds=2, mib=20, directives=GPU_JOB)
    job_id = cluster.submit(with_burner(tmp_path), "gpu.sbatch", script)
    job = cluster.wait(job_id)
    assert job.alloc_gpus == 1
    said = cluster.run("sacct", "-j", job_id, "-P", "-n", "-o", "TRESUsageInAve,TRESUsageInMax")
    assert "mem=" in said.stdout and "gres/gpu" not in said.stdout
    assert all(s.gpu_util_max_pct is None and s.gpu_mem_max_mib is None for s in job.steps)
    facts = report(cluster, tmp_path, job_id)["advice"]["facts"]  # type: ignore[index]
    assert not any(name.startswith("gpu.") for name in facts)


def test_report_jobid_reads_jobstats_admin_comment(cluster: Cluster, tmp_path: Path) -> None:
    """An idle GPU (3 % over 10 min, as the summary says) is gpu-idle, from accounting alone."""
    script = burner(seconds=6, mib=20, directives=GPU_JOB)
    job_id = cluster.submit(with_burner(tmp_path), "gpu.sbatch", script)
    cluster.wait_running(job_id)
    blob = summary(util=3.0, elapsed=600)
    cluster.run("scontrol", "update", f"job={job_id}", f"AdminComment={blob}")
    job = cluster.wait(job_id)
    assert job.admin_comment == blob  # kept verbatim through slurmdbd
    got = report(cluster, tmp_path, job_id)
    facts = got["advice"]["facts"]  # type: ignore[index]
    assert facts["gpu.source"] == "jobstats"
    assert (facts["gpu.count"], facts["gpu.util.mean"], facts["gpu.samples"]) == (1, 3.0, 20)
    assert facts["gpu.mem_used.max_mib"] == 2048
    assert facts["usage.mem_peak_mib"] == 60  # jobstats' cgroup peak, not seff's estimate
    notes = got["advice"]["notes"]  # type: ignore[index]
    assert any(n.startswith("GPU: from jobstats (AdminComment): over 10 min") for n in notes)
    assert "gpu-idle" in {f["id"] for f in got["findings"]}  # type: ignore[attr-defined]
    text = cluster.tuneadvisor(tmp_path, "jobs", "--since", "now-1hours", "--limit", "50")
    row = next(line for line in text.stdout.splitlines() if line.startswith(f"{job_id} "))
    assert " 3% " in row
