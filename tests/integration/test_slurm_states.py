"""Real Slurm: jobs that fail, time out, get killed for memory or cancelled, each read back
with `report --jobid` and yielding its own finding; `jobs` lists them.

Slurm's smallest --time is one minute, and slurmctld checks limits every 30 s: the
time-out job asks for a minute, and once it runs its limit is lowered to 0 (as root may),
so it ends at the next check (10-35 s) instead of after 60-90 s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.slurm_cluster import Cluster, start_cluster, with_burner

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

HEADER = "#!/bin/bash\n#SBATCH --time=1\n#SBATCH --mem=100M\n"
STATE_FINDINGS = {"job-failed", "job-timed-out", "job-out-of-memory", "job-cancelled"}


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster(start_cluster())


def report(cluster: Cluster, folder: Path, job_id: str) -> dict[str, Any]:
    done = cluster.tuneadvisor(folder, "report", "--jobid", job_id, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def state_findings(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in report["findings"] if f["id"] in STATE_FINDINGS}


def test_failed_job(cluster: Cluster, tmp_path: Path) -> None:
    job_id = cluster.submit(tmp_path, "fail.sbatch", HEADER + "echo failing\nexit 3\n")
    job = cluster.wait(job_id)
    assert (job.state, job.exit_code) == ("FAILED", 3)
    assert list(state_findings(report(cluster, tmp_path, job_id))) == ["job-failed"]
    done = cluster.tuneadvisor(tmp_path, "jobs", "--format", "json", "--since", "now-1hours")
    assert done.returncode == 0, done.stderr
    [row] = [r for r in json.loads(done.stdout) if r["job_id"] == job_id]
    assert (row["state"], row["top_finding"]) == ("FAILED", "job-failed")


def test_timed_out_job_asks_for_more_time(cluster: Cluster, tmp_path: Path) -> None:
    job_id = cluster.submit(tmp_path, "tmo.sbatch", HEADER + "sleep 300\n")
    cluster.wait_running(job_id)
    cluster.run("scontrol", "update", f"JobId={job_id}", "TimeLimit=0")
    assert cluster.wait(job_id).state == "TIMEOUT"
    found = state_findings(report(cluster, tmp_path, job_id))
    assert list(found) == ["job-timed-out"]
    time = found["job-timed-out"]["suggest"]["sbatch"]["time"]
    hours, minutes, seconds = (int(part) for part in time.split(":"))
    assert (hours * 60 + minutes) * 60 + seconds > 60  # more than the script's minute


def test_job_killed_for_memory_asks_for_more(cluster: Cluster, tmp_path: Path) -> None:
    # JobAcctGatherParams=OverMemoryKill samples every second: hold 300 MiB for 4 s
    job_id = cluster.submit(with_burner(tmp_path), "oom.sbatch", HEADER + "python burn.py 4 300\n")
    job = cluster.wait(job_id)
    assert job.state in ("FAILED", "OUT_OF_MEMORY")  # OverMemoryKill / cgroup
    assert job.mem_peak_mib is not None and job.mem_peak_mib > 100
    found = state_findings(report(cluster, tmp_path, job_id))
    assert list(found) == ["job-out-of-memory"]
    assert found["job-out-of-memory"]["suggest"]["sbatch"]["mem"] == "1G"  # 2 x peak, in GiB


def test_cancelled_job(cluster: Cluster, tmp_path: Path) -> None:
    job_id = cluster.submit(tmp_path, "cxl.sbatch", HEADER + "sleep 300\n", "--hold")
    cluster.run("scancel", job_id)
    assert cluster.wait(job_id).state == "CANCELLED"
    assert list(state_findings(report(cluster, tmp_path, job_id))) == ["job-cancelled"]
