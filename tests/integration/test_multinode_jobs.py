"""The course's multi-node DDP jobs, for real, on the multi-node cluster (three nodes, each its
own network namespace and hostname; gloo on the CPU, synthetic MNIST, a few steps).

* The Princeton shape: the bundled slurm/mnist_ddp.sbatch over 3 nodes x 2 tasks: `srun` of
  kernprof + training/mnist_ddp.py per task, MASTER_ADDR from `scontrol show hostnames`.
* The bundled slurm/mnist_torchrun.sbatch over 2 nodes: one torchrun agent per node, c10d
  rendezvous on the first node.

Each rank writes its own profile. The finished jobs are then read back (`report --jobid`),
their per-rank profiles merged, in test_multinode_report.py, which shares the jobs through
`tests/integration/multinode_jobs.py`.
"""

from __future__ import annotations

import json

import pytest

from tests.integration.multinode_cluster import MultiCluster
from tests.integration.multinode_jobs import FinishedJob, step_nodes, training_records

pytestmark = [
    pytest.mark.multinode,
    pytest.mark.slow,
    pytest.mark.torch,
    pytest.mark.xdist_group("multinode"),
]


def test_princeton_job_runs_six_ranks_over_three_nodes(
    mn: MultiCluster, ddp_job: FinishedJob
) -> None:
    acct = ddp_job.accounting
    assert acct.state == "COMPLETED", acct
    records = training_records(ddp_job.output)
    start = next(r for r in records if r["event"] == "start")
    assert (start["launcher"], start["world_size"], start["backend"]) == ("srun", 6, "gloo")
    assert any(r["event"] == "end" and r["steps"] >= 1 for r in records), records
    # one profile per rank, each written by its own task
    assert sorted(p.name for p in ddp_job.profiles) == [f"{ddp_job.id}_{r}.lprof" for r in range(6)]
    # step 0 (srun): six tasks over the three nodes
    assert step_nodes(mn, ddp_job.id) == ("node[1-3]", 6)


def test_torchrun_job_joins_two_nodes_through_c10d(
    mn: MultiCluster, torchrun_job: FinishedJob
) -> None:
    assert torchrun_job.accounting.state == "COMPLETED", torchrun_job.accounting
    records = training_records(torchrun_job.output)
    start = next(r for r in records if r["event"] == "start")
    # two agents, two ranks each (the nodes' fake gpu:2): four ranks in one rendezvous
    assert (start["launcher"], start["world_size"]) == ("torchrun", 4), start
    assert any(r["event"] == "end" for r in records), json.dumps(records)[-2000:]
    assert sorted(p.name for p in torchrun_job.profiles) == [
        f"{torchrun_job.id}_{r}.lprof" for r in range(4)
    ]
    assert step_nodes(mn, torchrun_job.id) == ("node[1-2]", 2)  # one agent per node
