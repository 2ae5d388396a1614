"""`watch --job ID` of a running 3-node DDP job, from the login node of the multi-node
cluster: one sampler per node through `srun --overlap`, each node's ranks and DataLoader
workers, one merged recording that `report --metrics` reads, a node's sampler ending early,
and the nodes (namespaces of this one machine) counted once for the machine's cores and
memory, said so."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.multinode_cluster import ROOT, WAIT_S, MultiCluster
from tuneadvisor.metrics.recording import parse_recording
from tuneadvisor.metrics.snapshot import ROLE_MAIN, ROLE_WORKER

pytestmark = [
    pytest.mark.multinode,
    pytest.mark.slow,
    pytest.mark.torch,
    pytest.mark.xdist_group("multinode"),
]

NODES = ("node1", "node2", "node3")
# The course's DDP over 3 nodes, one rank a node with one DataLoader worker, long enough to
# outlast the module (cancelled at its end). Persistent workers: the short epochs would
# otherwise end and start each rank's worker several times a second; the test loader's own
# worker still joins it while a rank evaluates.
JOB = """\
#!/bin/bash
#SBATCH --job-name=watched
#SBATCH --nodes=3
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=2
#SBATCH --mem=3000M
#SBATCH --time=00:20:00
export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_PORT=$((10000 + SLURM_JOB_ID % 20000))
srun python training/mnist_ddp.py --epochs 1000 --num-workers 1 --persistent-workers \
  --batch-size 16 --log-interval 1000
"""


@pytest.fixture(scope="module")
def job(
    mn: MultiCluster, mnist_data: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("watched")
    (folder / "training").symlink_to(Path(__file__).resolve().parents[2] / "training")
    (folder / "data").symlink_to(mnist_data)
    (folder / "watched.sbatch").write_text(JOB)
    job_id = mn.submit(folder, folder / "watched.sbatch")
    try:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:  # every rank is in its loop with its worker
            rows = mn.client.job_pids(job_id) if _running(mn, job_id) else ()
            if _ranks_training(folder, job_id):
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"job {job_id} did not start training: {rows}")
        yield job_id
    finally:
        subprocess.run(["scancel", job_id], env=mn.env, check=False)


def _running(mn: MultiCluster, job_id: str) -> bool:
    shown = mn.client.show_job(job_id)
    return shown is not None and shown.state == "RUNNING"


def _ranks_training(folder: Path, job_id: str) -> bool:
    out = folder / f"slurm-{job_id}.out"
    return out.exists() and '"event": "step"' in out.read_text(errors="replace")


def _watch(mn: MultiCluster, cwd: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(ROOT / "bin" / "ta-login"), sys.executable, "-m", "tuneadvisor", "watch",
         "--headless", "--interval", "0.5", *args],
        env=mn.job_env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_one_sampler_per_node_merged(mn: MultiCluster, job: str, tmp_path: Path) -> None:
    record = tmp_path / "merged.jsonl"
    done = mn.tuneadvisor(tmp_path, "watch", "--headless", "--interval", "0.5", "--job", job,
                          "--duration", "4", "--record", str(record))  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"job {job} on 3 nodes (node1, node2, node3; a sampler on each through srun" in out
    for node in NODES:  # each node: its rank and its worker (and the test loader's, in an eval)
        assert re.search(
            rf"^Node {node}: \d+ processes \(1 main, [12] DataLoader workers?\)", out, re.M
        ), out
    # the three nodes are this machine: its cores once, and said so
    assert f"CPU: {os.cpu_count()} cores" in out
    assert "node1, node2 and node3 are one machine (the same boot id)" in out
    rec = parse_recording(record.read_text())
    assert rec.header is not None and rec.header.nodes == NODES
    last = rec.snapshots[-1]
    roles = {(p.node, p.role) for p in last.procs}
    assert {(n, ROLE_MAIN) for n in NODES} | {(n, ROLE_WORKER) for n in NODES} <= roles
    assert last.host is not None and len(last.host.cpu_pct_per_core) == os.cpu_count()
    read = mn.tuneadvisor(tmp_path, "report", "--metrics", str(record))
    assert read.returncode == 0, read.stderr
    assert "Metrics read:" in read.stdout


def _sampler_pid(node: str) -> int | None:
    """The `watch --this-node --stream` of NODE (one PID namespace for all nodes here)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            b"--stream" in cmd
            and b"--this-node" in cmd
            and f"SLURMD_NODENAME={node}".encode() in environ
        ):
            return int(entry.name)
    return None


def test_survives_a_node_sampler_ending(mn: MultiCluster, job: str, tmp_path: Path) -> None:
    record = tmp_path / "early.jsonl"
    watcher = _watch(mn, tmp_path, "--job", job, "--duration", "9", "--record", str(record))
    try:
        deadline = time.monotonic() + WAIT_S
        while (pid := _sampler_pid("node3")) is None or not record.exists() or len(
            record.read_text().splitlines()) < 3:  # fmt: skip
            assert watcher.poll() is None and time.monotonic() < deadline, watcher.communicate()
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)
        out, err = watcher.communicate(timeout=120)
    finally:
        if watcher.poll() is None:
            watcher.kill()
    assert watcher.returncode == 0, err
    rounds = parse_recording(record.read_text()).snapshots
    assert {p.node for p in rounds[0].procs} == set(NODES)
    assert any("node3: no round for" in n for n in rounds[-1].no_data), rounds[-1].no_data
    assert {p.node for p in rounds[-1].procs} == {"node1", "node2"}  # the others go on
    assert "Node node1: " in out and "Node node2: " in out
