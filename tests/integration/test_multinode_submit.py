"""Submitting multi-node jobs from the login node of the multi-node cluster, as a user would:

* `run mnist_ddp --nodes 2 --ntasks-per-node 2 --submit --wait`: the job script tuneadvisor
  writes asks for two nodes with two tasks each, srun spreads the four ranks over them, each
  rank writes its profile, the job's own `tuneadvisor watch` records both nodes, and the run's
  record is completed from the job's output and that recording;
* `apply --submit` of the bundled DDP job script set to two nodes: the tuned script keeps its
  shape (two nodes, two tasks each), gets the advice's memory per node, runs to the end and
  records itself (the bundled script's `tuneadvisor watch`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.multinode_cluster import REPO, WAIT_S, MultiCluster
from tests.integration.multinode_jobs import step_nodes, training_records
from tuneadvisor.metrics.recording import parse_recording

pytestmark = [
    pytest.mark.multinode,
    pytest.mark.slow,
    pytest.mark.torch,
    pytest.mark.xdist_group("multinode"),
]

TWO_NODES = ("node1", "node2")


def _nodes_recorded(path: Path) -> set[str]:
    recording = parse_recording(path.read_text())
    assert recording.header is not None, path
    return {p.node for snap in recording.snapshots for p in snap.procs if p.node}


def test_run_submit_spreads_the_ranks_over_two_nodes_and_records_them(
    mn: MultiCluster, mnist_data: Path, tmp_path: Path
) -> None:
    done = mn.tuneadvisor(
        tmp_path, "run", "mnist_ddp", "--nodes", "2", "--ntasks-per-node", "2",
        "--cpus-per-task", "1", "--mem", "4000M", "--data-dir", str(mnist_data),
        "--max-steps", "2", "--epochs", "1", "--batch-size", "32", "--num-workers", "0",
        "--log-interval", "1", "--max-eval-batches", "1", "--no-progress", "--profile",
        "--runs", "runs", "--submit", "--wait", str(WAIT_S),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = (tmp_path / "runs").glob("*/run.json")
    run: dict[str, Any] = json.loads(path.read_text())
    folder, job_id = path.parent, run["slurm_job_id"]
    assert run["status"] == "completed", run
    assert (run["settings"]["nodes"], run["settings"]["ntasks"]) == (2, 4)
    job = (folder / "job.sbatch").read_text()
    assert "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n" in job
    # Slurm put two tasks on each node, and the four ranks made one DDP group
    assert step_nodes(mn, job_id) == ("node[1-2]", 4)
    start = run["start"]
    assert (start["launcher"], start["world_size"]) == ("srun", 4), start
    assert run["summary"]["steps"] == 2 and run["epochs"], run["summary"]
    # one profile per rank, each named by its own task
    assert run["paths"]["profiles"] == [f"{job_id}_{rank}.lprof" for rank in range(4)]
    assert all((folder / name).is_file() for name in run["paths"]["profiles"])
    # the job's watch sampled both nodes into one recording, which the record read
    (metrics,) = run["paths"]["metrics"]
    assert _nodes_recorded(folder / metrics) == set(TWO_NODES)
    assert run["resources"]["sampled"]["samples"] >= 1, run["resources"]


# Two nodes' use as seff reports it: 4 GB at most over both (2 GB a node) of 16 GB a node.
SEFF = """\
Job ID: 1
Cluster: mn
User/Group: root/root
State: COMPLETED (exit code 0)
Nodes: 2
Cores per node: 2
CPU Utilized: 00:18:00
CPU Efficiency: 45.00% of 00:40:00 core-walltime
Job Wall-clock time: 00:10:00
Memory Utilized: 4.00 GB (estimated maximum)
Memory Efficiency: 12.50% of 32.00 GB (16.00 GB/node)
"""


def test_apply_submit_of_a_two_node_job_script(
    mn: MultiCluster, mnist_data: Path, tmp_path: Path
) -> None:
    (tmp_path / "training").symlink_to(REPO / "training")
    (tmp_path / "data").symlink_to(mnist_data)
    # the bundled script over two nodes, one core a task (each node has two)
    text = (REPO / "slurm" / "mnist_ddp.sbatch").read_text()
    for old, new in (("--nodes=1 ", "--nodes=2 "), ("--cpus-per-task=4 ", "--cpus-per-task=1 ")):
        assert old in text, old
        text = text.replace(old, new)
    (tmp_path / "ddp.sbatch").write_text(text)  # submitted from here, as `sbatch` would be
    (tmp_path / "seff.txt").write_text(SEFF)
    script = tmp_path / "ddp.sbatch"
    done = mn.tuneadvisor(tmp_path, "apply", "--job", str(script), "--seff", "seff.txt",
                          "--submit")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "over-requested-memory" in done.stdout
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("submitted batch job ")]
    job_id = line.split()[3]
    # slurmctld's view: the shape kept, the memory per node lowered under the nodes' 6000 MB
    shown = mn.client.show_job(job_id)
    assert shown is not None and shown.command == str(tmp_path / "ddp.tuned.sbatch")
    assert (shown.num_nodes, shown.num_tasks) == (2, 4), shown
    assert shown.mem_per_node_mib is not None and shown.mem_per_node_mib < 6000, shown
    assert mn.wait(job_id).state == "COMPLETED"
    assert step_nodes(mn, job_id) == ("node[1-2]", 4)
    records = training_records((tmp_path / f"slurm-{job_id}.out").read_text(errors="replace"))
    assert any(r["event"] == "start" and r["world_size"] == 4 for r in records), records
    # the tuned script's own watch recorded both nodes
    assert _nodes_recorded(tmp_path / f"metrics-{job_id}.jsonl") == set(TWO_NODES)
