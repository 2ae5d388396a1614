"""Real Slurm: every job script of the real-world corpus, brought within the local node (one
node, its partitions, at most its cores, memory and GPU), goes through `apply` with seff
evidence of a busy core and of a job killed for memory, and sbatch --test-only accepts every
script apply writes (it creates no job). A script sbatch refuses before apply touches it is
left out, and said."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import BUSY_CORE_SEFF
from tests.integration.slurm_cluster import REPO, Cluster, start_cluster
from tuneadvisor.slurm.jobscript.model import JobScript

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

CORPUS = REPO / "tests" / "fixtures" / "realworld" / "jobscripts"
# Options that name things this cluster does not have: left out of the local copy.
ELSEWHERE = (
    "account", "qos", "reservation", "constraint", "nodelist", "exclude", "clusters",
    "partition", "gpus-per-task", "gpus-per-node", "gpus", "gres", "cpus-per-gpu",
    "mem-per-gpu", "mem-per-cpu", "ntasks-per-gpu", "gpu-bind", "cpus-per-task", "mem",
    "ntasks", "ntasks-per-node", "nodes", "array", "exclusive", "dependency", "mail-user",
)  # fmt: skip
BUSY = BUSY_CORE_SEFF.read_text()
OOM = BUSY.replace("COMPLETED", "OUT_OF_MEMORY").replace("316.26 MB", "0.00 MB")


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster(start_cluster())


def local_copy(script: Path, gpus: int) -> bytes | None:
    """The script within the local node: one node, one task, one core, 1 GB, the GPU when
    it asks for GPUs; None for a file tuneadvisor does not read as a job script."""
    job = JobScript.parse(script.read_bytes(), script.name)
    if job.not_a_script is not None:
        return None
    wants_gpu = bool(job.request().node_gpus)
    for option in ELSEWHERE:
        job = job.without_directive(option)
    job = job.with_directive("nodes", "1").with_directive("ntasks", "1")
    job = job.with_directive("cpus-per-task", "1").with_directive("mem", "1G")
    if wants_gpu and gpus:
        job = job.with_directive("gres", "gpu:1")
    return job.render()


def test_every_script_apply_writes_passes_sbatch_test_only(
    cluster: Cluster, tmp_path: Path
) -> None:
    [node] = [p for p in cluster.client.partitions() if p.default]
    site = tmp_path / "site.toml"
    site.write_text(
        f'[partitions.debug]\ncores = {node.cpus}\nmem = "4G"\ngpus = 1\ndefault = true\n'
    )
    for name, text in (("busy.seff", BUSY), ("oom.seff", OOM)):
        (tmp_path / name).write_text(text)
    refused_before, written, refused_after = [], 0, []
    for script in sorted(CORPUS.glob("*.sh")):
        local = local_copy(script, gpus=1)
        if local is None:
            continue
        job = tmp_path / script.name
        job.write_bytes(local)
        if cluster.test_only(job) is not None:
            refused_before.append(script.name)
            continue
        for seff in ("busy.seff", "oom.seff"):
            out = tmp_path / f"{seff}.{script.name}"
            done = cluster.tuneadvisor(
                tmp_path, "apply", "--job", str(job), "--seff", str(tmp_path / seff),
                "--site", str(site), "-o", str(out), "--force",
            )  # fmt: skip
            assert done.returncode == 0, f"{script.name} + {seff}: {done.stderr}"
            written += 1
            said = cluster.test_only(out)
            if said is not None:
                refused_after.append(f"{script.name} + {seff}: {said}")
    assert not refused_after, "\n".join(refused_after)
    assert written >= 60, (written, refused_before)
