"""Real Slurm: `report --queue` of the bundled example asks the local cluster when the job as
written and as tuned would start (sbatch --test-only queues nothing) and gives both ends."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.integration.slurm_cluster import REPO, Cluster, start_cluster
from tests.report_schema import checked

pytestmark = [pytest.mark.slurm]

EXAMPLE = ["examples/mnist/24752610.lprof", "--job", "examples/mnist/mnist.sbatch"]


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster(start_cluster())


def test_report_gives_both_starts_and_ends(cluster: Cluster) -> None:
    queued_before = cluster.run("squeue", "-h", "-o", "%i").stdout.split()
    done = cluster.tuneadvisor(REPO, "report", *EXAMPLE, "--queue", "--format", "json")
    assert done.returncode == 0, done.stderr
    report = checked(json.loads(done.stdout))
    when = report["time_to_result"]
    assert when["not_known"] == [], when["not_known"]
    assert when["steps"]["count"] == 120  # --max-steps 120 on the example's launch line
    for script in ("now", "tuned"):
        finish = when[script]
        start = datetime.fromisoformat(finish["start"])
        ends = [datetime.fromisoformat(finish["end"][k]) for k in ("low", "expected", "high")]
        assert start <= ends[0] <= ends[1] <= ends[2], finish
    assert when["verdict"]
    # the tuned script asks for more cores, within the node's as sinfo gave them
    asked = report["advice"]["plan"]["sbatch"]["cpus-per-task"]["value"]
    assert 1 < asked <= max(p.cpus for p in cluster.client.partitions() if p.default)
    # --test-only queued nothing (other tests' jobs may come and go: none of ours is new)
    queued_after = cluster.run("squeue", "-h", "-o", "%i", "-n", "mnist").stdout.split()
    assert not set(queued_after) - set(queued_before)
    text = cluster.tuneadvisor(REPO, "report", *EXAMPLE, "--queue")
    assert text.returncode == 0, text.stderr
    assert "  now:   starts " in text.stdout and "  tuned: starts " in text.stdout


def test_a_larger_request_waiting_behind_a_running_job_is_said(
    cluster: Cluster, tmp_path: Path
) -> None:
    """A 1-core job with a 20-minute limit holds a core: the tuned script's request for the
    node's cores starts when that limit ends (the scheduler plans by limits), so it waits
    far longer than the half minute it saves, and the report says the job as written gives
    the result first wherever it starts sooner."""
    cores = max(p.cpus for p in cluster.client.partitions() if p.default)
    if cores < 2:
        pytest.skip("a one-core node: the tuned script asks for no more cores")
    submitted = datetime.now()  # the cluster's clock is this machine's (one node here)
    blocker = cluster.submit(tmp_path, "hold.sbatch", "#!/bin/bash\nsleep 600\n",
                             "--cpus-per-task=1", "--time=20", "--job-name=hold")  # fmt: skip
    try:
        cluster.wait_running(blocker)
        done = cluster.tuneadvisor(REPO, "report", *EXAMPLE, "--queue", "--format", "json")
        assert done.returncode == 0, done.stderr
        when = checked(json.loads(done.stdout))["time_to_result"]
        tuned_start = datetime.fromisoformat(when["tuned"]["start"])
        now_start = datetime.fromisoformat(when["now"]["start"])
        held_until = submitted + timedelta(minutes=19)  # it started after it was submitted
        assert tuned_start >= held_until, (tuned_start, held_until)
        saves = when["now"]["run_s"]["expected"] - when["tuned"]["run_s"]["expected"]
        if (tuned_start - now_start).total_seconds() > max(saves, 60):
            assert "the job as written gives the result first" in when["verdict"]
    finally:
        cluster.client.cancel(blocker)
