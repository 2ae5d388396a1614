"""Real Slurm: `report --jobid` reads the job's StdOut and StdErr as slurmctld reports them
(with --output/--error patterns expanded), quotes the line that says why it died, and says
why a log it cannot read here was not read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.slurm_cluster import Cluster, start_cluster
from tests.report_schema import checked

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

OOM_LINE = "slurmstepd: error: Detected 1 oom_kill event in StepId=4242.batch. Some of the step tasks have been OOM Killed."  # noqa: E501
HEADER = "#!/bin/bash\n#SBATCH --time=1\n#SBATCH --mem=100M\n"


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster(start_cluster())


def report(cluster: Cluster, folder: Path, *args: str) -> dict[str, Any]:
    done = cluster.tuneadvisor(folder, "report", *args, "--format", "json")
    assert done.returncode == 0, done.stderr
    return checked(json.loads(done.stdout))  # type: ignore[no-any-return]


def log_findings(report: dict[str, Any]) -> dict[str, str]:
    """rule id -> the line it quotes."""
    return {
        f["id"]: f["evidence"]["line"] for f in report["findings"] if f["id"].startswith("log-")
    }


def test_the_jobs_stdout_and_stderr_are_read(cluster: Cluster, tmp_path: Path) -> None:
    script = (
        HEADER + "#SBATCH --output=died-%j.out\n#SBATCH --error=died-%j.err\n"
        f"echo 'epoch 1'\necho '{OOM_LINE}'\n"
        "echo \"ModuleNotFoundError: No module named 'apex'\" >&2\nexit 1\n"
    )
    job_id = cluster.submit(tmp_path, "died.sbatch", script)
    cluster.wait(job_id)
    out, err = tmp_path / f"died-{job_id}.out", tmp_path / f"died-{job_id}.err"
    found = log_findings(report(cluster, tmp_path, "--jobid", job_id))
    assert found["log-host-out-of-memory"] == f"{out}:2: {OOM_LINE}"
    assert found["log-missing-module"] == (f"{err}:1: ModuleNotFoundError: No module named 'apex'")
    # the same file named with --log as well is read once
    again = report(cluster, tmp_path, "--jobid", job_id, "--log", str(out))
    assert again["advice"]["facts"]["log.lines"] == 3  # 2 lines of .out, 1 of .err


def test_a_log_that_is_gone_is_said_not_read_not_an_error(cluster: Cluster, tmp_path: Path) -> None:
    job_id = cluster.submit(tmp_path, "fine.sbatch", HEADER + "echo fine\n")
    cluster.wait(job_id)
    out = tmp_path / f"slurm-{job_id}.out"
    read = report(cluster, tmp_path, "--jobid", job_id)
    assert f"{out}: read, 1 lines, no known cause of death found" in read["advice"]["not_read"]
    out.unlink()
    gone = report(cluster, tmp_path, "--jobid", job_id)
    assert not log_findings(gone)
    assert any(
        f"its output {out} is not a file on this machine" in note
        for note in gone["advice"]["not_read"]
    ), gone["advice"]["not_read"]
