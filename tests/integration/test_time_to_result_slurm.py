"""Real Slurm: `report --queue` of the bundled example asks the local cluster when the job as
written and as tuned would start (sbatch --test-only queues nothing) and gives both ends."""

from __future__ import annotations

import json
from datetime import datetime

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
    # the tuned script asks for the node's cores, as sinfo gave them
    assert report["advice"]["plan"]["sbatch"]["cpus-per-task"]["value"] == max(
        p.cpus for p in cluster.client.partitions() if p.default
    )
    # --test-only queued nothing (other tests' jobs may come and go: none of ours is new)
    queued_after = cluster.run("squeue", "-h", "-o", "%i", "-n", "mnist").stdout.split()
    assert not set(queued_after) - set(queued_before)
    text = cluster.tuneadvisor(REPO, "report", *EXAMPLE, "--queue")
    assert text.returncode == 0, text.stderr
    assert "  now:   starts " in text.stdout and "  tuned: starts " in text.stdout
