"""Real Slurm: the job-script corpus (tests/fixtures/jobscripts, expected.json) submitted on
hold. Scripts sbatch refuses on its own are refused; the ones it accepts reach slurmctld,
and where this small cluster can hold the request (cores, memory, GPU types, node count),
`scontrol show job` shows the directives expected.json says sbatch applies. Then scancel."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.slurm_cluster import REPO, Cluster, start_cluster
from tuneadvisor.slurm.client import SlurmError
from tuneadvisor.slurm.client.scontrol import JobInfo
from tuneadvisor.slurm.options import parse_nodes
from tuneadvisor.slurm.units import parse_memory, parse_time

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

CORPUS = REPO / "tests" / "fixtures" / "jobscripts"
EXPECTED: dict[str, dict[str, object]] = json.loads((CORPUS / "expected.json").read_text())[
    "scripts"
]
# What slurmctld answers when the cluster cannot hold a request sbatch itself accepted.
TOO_BIG = (
    "Requested node configuration is not available",
    "More processors requested than permitted",
    "Invalid generic resource (gres) specification",
    "Node count specification invalid",
    "Memory required by task is not available",
    "Invalid account or account/partition combination specified",
    "Invalid qos specification",
)


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster(start_cluster())


# directive -> (JobInfo attribute, how expected.json's value reads)
FIELDS: dict[str, tuple[str, Callable[[str], object]]] = {
    "job-name": ("name", str),
    "partition": ("partition", str),
    "cpus-per-task": ("cpus_per_task", int),
    "ntasks": ("num_tasks", int),
    "nodes": ("num_nodes", lambda v: parse_nodes(v).minimum),
    "mem": ("mem_per_node_mib", parse_memory),
    "mem-per-cpu": ("mem_per_cpu_mib", parse_memory),
    "time": ("time_limit_s", lambda v: parse_time(v).seconds),
}


def compare(shown: JobInfo, directives: dict[str, str]) -> tuple[dict[str, object], ...]:
    """(what slurmctld shows, what expected.json says) for the directives it shows."""
    named = [(d, attr, read) for d, (attr, read) in FIELDS.items() if d in directives]
    got = {d: getattr(shown, attr) for d, attr, _ in named}
    want = {d: read(directives[d]) for d, _, read in named}
    return got, want


def test_corpus_as_slurm_reads_it(cluster: Cluster, tmp_path: Path) -> None:
    accepted, too_big = [], []
    for name, expected in EXPECTED.items():
        script = shutil.copy(CORPUS / name, tmp_path / name)
        try:
            job_id = cluster.client.submit(Path(script), chdir=str(tmp_path), options=["--hold"])
        except SlurmError as exc:
            said = exc.one_line()
            if expected["sbatch"] == "refuses":
                continue
            assert any(reason in said for reason in TOO_BIG), f"{name}: {said}"
            too_big.append(name)
            continue
        try:
            assert expected["sbatch"] == "accepts", f"{name}: sbatch accepted it"
            got, want = compare(cluster.show(job_id), expected["directives"])  # type: ignore[arg-type]
            assert got == want, name
            accepted.append(name)
        finally:
            cluster.run("scancel", job_id)
    assert accepted, f"the cluster held none of the corpus (too big: {too_big})"
