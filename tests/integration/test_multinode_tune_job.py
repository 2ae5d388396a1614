"""`tune --job --spread` on the three-node cluster: the trials of one job array run side by
side, one per node (each node --exclusive), and the ledger says which node each ran on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.multinode_cluster import MultiCluster
from tests.integration.test_tune_job_slurm import JOB, TRAIN_PY

pytestmark = [
    pytest.mark.multinode,
    pytest.mark.slow,
    pytest.mark.torch,
    pytest.mark.xdist_group("multinode"),
]


def test_the_array_spreads_over_the_nodes_and_says_where(mn: MultiCluster, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN_PY)
    (tmp_path / "train.sbatch").write_text(JOB)
    done = mn.tuneadvisor(
        tmp_path, "tune", "--job", "train.sbatch", "--steps", "10", "--repeats", "2",
        "--spread", "--format", "json", timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    ledger = json.loads(done.stdout)
    trials = ledger["trials"]
    assert not [t["failed"] for t in trials if t["failed"]]
    nodes = {t["node"] for t in trials}
    assert nodes <= {"node1", "node2", "node3"} and len(nodes) >= 2, nodes
    array = next((tmp_path).glob("tune-train-*/array.sbatch")).read_text()
    assert "#SBATCH --array=0-7%3\n" in array and "#SBATCH --exclusive\n" in array
