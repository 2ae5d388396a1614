"""`report --jobid` of the finished multi-node jobs (tests/integration/multinode_jobs.py), run
on the login node as a user would: the job as it ran (3 nodes x 2 tasks from sbatch's command
line, not the script's 1 node), requests and use per node from seff and sacct, no false
finding for srun-launched DDP, and the per-rank profiles from three nodes merged."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.integration.multinode_cluster import MultiCluster
from tests.integration.multinode_jobs import FinishedJob
from tests.report_schema import checked

pytestmark = [
    pytest.mark.multinode,
    pytest.mark.slow,
    pytest.mark.torch,
    pytest.mark.xdist_group("multinode"),
]


def _report(mn: MultiCluster, job: FinishedJob, *args: str) -> str:
    done = mn.tuneadvisor(job.folder, "report", "--jobid", job.id, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_json_facts_are_the_job_as_it_ran(mn: MultiCluster, ddp_job: FinishedJob) -> None:
    report: dict[str, Any] = checked(json.loads(_report(mn, ddp_job, "--format", "json")))
    facts = report["advice"]["facts"]
    assert report["job"]["directives"]["nodes"] == "1"  # the script says one node...
    assert facts["job.nodes"] == facts["sacct.alloc_nodes"] == facts["seff.nodes"] == 3
    assert (facts["job.tasks_per_node"], facts["job.tasks_total"]) == (2, 6)
    assert facts["job.cpus_per_task"] == 1 and facts["seff.cores_per_node"] == 2
    assert facts["job.mem_mib"] == 4000.0  # per node; accounting's 12000 is the job's
    assert facts["sacct.req_mem_mib"] == 12000.0 and facts["seff.mem_requested_per"] == "node"
    assert facts["sacct.alloc_gpus"] == 6  # gpu:2 on each of 3 nodes
    ids = {f["id"] for f in report["findings"]}
    # srun starts 2 tasks per node for gpu:2 per node: no tasks/GPUs mismatch, no memory alarm
    assert not ids & {"tasks-gpus-mismatch", "job-out-of-memory", "ddp-world-size-mismatch"}, ids


def test_text_says_requests_and_use_per_node(mn: MultiCluster, ddp_job: FinishedJob) -> None:
    text = _report(mn, ddp_job)
    assert "asked: 3 nodes x 2 tasks, 1 core per task (2 per node), 4000 MiB per node" in text
    assert "seff: 3 nodes, 2 cores per node" in text
    assert "the job ran with --nodes 3 where its script says 1" in text
    used = re.search(
        r"memory peak (\d+) MiB, (?:(\d+) MiB per node \(the mean\)|about (\d+) MiB on the "
        r"busiest node) of 4000 MiB per node",
        text,
    )
    assert used is not None, text
    if used[2] is not None:  # the job's peak spread evenly
        assert abs(int(used[1]) / 3 - int(used[2])) <= 1
    else:  # sacct's largest task x its 2 tasks a node: more than the mean, at most the total
        assert int(used[1]) / 3 - 1 <= int(used[3]) <= int(used[1])


def test_per_rank_profiles_from_three_nodes_merge(mn: MultiCluster, ddp_job: FinishedJob) -> None:
    profiles = [p.name for p in ddp_job.profiles]
    text = _report(mn, ddp_job, *profiles)
    assert text.startswith("Profile: " + ", ".join(profiles))
    for name in profiles:
        assert re.search(rf"^  {re.escape(name)}: [\d.]+ s  ", text, re.M), name
    assert "slowest DataLoader: " in text and "slowest step: " in text
    merged = re.search(r"^train\(\)  mnist_ddp\.py:\d+  ([\d.]+) s", text, re.M)
    per_rank = [float(x) for x in re.findall(r"^  \d+_\d\.lprof: ([\d.]+) s", text, re.M)]
    assert merged is not None and len(per_rank) == 6
    assert abs(float(merged[1]) - sum(per_rank)) <= 0.01 * sum(per_rank)  # all six summed
