"""The bundled job script of the profiling courses, submitted as a user would.

`slurm/mnist_single.sbatch` is copied into a project folder (the training scripts beside it,
small synthetic MNIST in ./data) and submitted to the local Slurm with `sbatch`. The job must
leave what the course loop needs: the kernprof profile named after the job, and the
`tuneadvisor watch` recording beside it; `report` then reads all three together.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.integration.slurm_cluster import Cluster, start_cluster
from tests.integration.test_training_mnist import _make_data, _need
from tests.report_schema import checked
from tuneadvisor.metrics.recording import parse_recording

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster(start_cluster())


def test_mnist_single_sbatch_leaves_a_profile_and_a_recording(
    cluster: Cluster, tmp_path: Path
) -> None:
    python = _need("torch", "torchvision")
    if not (Path(python).parent / "kernprof").exists():
        pytest.skip(f"no kernprof beside {python}")
    project = tmp_path / "course"
    (project / "slurm").mkdir(parents=True)
    shutil.copytree(REPO / "training", project / "training")
    shutil.copy(REPO / "slurm" / "mnist_single.sbatch", project / "slurm")
    _make_data(python, project / "data", 256, 64)
    env = dict(cluster.env)
    # The job inherits the submitting shell's PATH: torch's python, kernprof, tuneadvisor.
    env["PATH"] = os.pathsep.join([str(Path(python).parent), str(Path(sys.executable).parent),
                                   env["PATH"]])  # fmt: skip
    submitted = Cluster(env)
    job = submitted.client.submit(
        project / "slurm" / "mnist_single.sbatch",
        chdir=str(project),
        options=("--mem=2G",),  # the node here is smaller than the course's 8G request
    )
    accounting = submitted.wait(job)
    out = project / f"slurm-{job}.out"
    assert accounting.state == "COMPLETED", out.read_text() if out.exists() else accounting
    profile = project / f"{job}.lprof"
    metrics = project / f"metrics-{job}.jsonl"
    assert profile.is_file(), out.read_text()
    recording = parse_recording(metrics.read_text())
    assert recording.snapshots, (project / f"watch-{job}.log").read_text()
    assert any(p.role == "main" for s in recording.snapshots for p in s.procs)
    report = submitted.tuneadvisor(
        project, "report", profile.name, "--job", "slurm/mnist_single.sbatch",
        "--metrics", metrics.name, "--format", "json",
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    doc = checked(json.loads(report.stdout))
    (train,) = [f for f in doc["profile"]["functions"] if f["name"] == "train"]
    assert any(line["kind"] == "dataloader" for line in train["lines"])
    facts = doc["advice"]["facts"]
    assert facts["script.num_workers.source"]  # the script was found from the launch line
    assert facts["host.samples"] >= 1  # the recording was read as metrics
