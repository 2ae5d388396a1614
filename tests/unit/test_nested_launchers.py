"""Issue 30 §3: a launcher inside a launcher multiplies. Processes per node = tasks per node
x processes each task starts, for srun x torchrun, srun x accelerate, srun x deepspeed and
mpirun x python; read from the job script alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import load_workspace

HEAD = (
    "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node={tasks}\n#SBATCH --gpus-per-node=8\n"
)


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    monkeypatch.delenv("TUNEADVISOR_SITE", raising=False)
    monkeypatch.delenv("TUNEADVISOR_RULES", raising=False)


@pytest.mark.parametrize(
    ("tasks", "launch", "per_node"),
    [
        (8, "srun torchrun --nproc-per-node=8 train.py", 64),  # the case
        (8, "srun python -m torch.distributed.run --nproc_per_node 8 train.py", 64),
        (2, "srun accelerate launch --num_processes 16 --num_machines 2 train.py", 16),
        (4, "srun deepspeed --num_gpus 8 train.py", 32),
        (8, "srun deepspeed train.py", 64),  # deepspeed: every GPU of the node by default
        (1, "mpiexec -n 32 -ppn 16 python train.py", 16),  # mpirun x python
        (1, "mpirun --npernode 12 python train.py", 12),
    ],
)
def test_processes_per_node_multiply(
    tmp_path: Path, tasks: int, launch: str, per_node: int
) -> None:
    job = tmp_path / "job.sh"
    job.write_text(HEAD.format(tasks=tasks) + launch + "\n")
    advice = load_workspace(Inputs(job=str(job))).advice
    assert advice is not None
    (finding,) = [f for f in advice.findings if f.id == "processes-share-gpus"]
    said = {e.label: e.value for e in finding.evidence}
    assert said["training processes per node"] == per_node
    assert said["GPUs per node"] == 8
    assert not advice.plan.sbatch  # which count is wrong is the user's call: nothing written


@pytest.mark.parametrize(
    ("tasks", "launch"),
    [
        (1, "srun torchrun --nproc-per-node=8 train.py"),
        (8, "srun python train.py"),
        (1, "mpirun -np 16 python train.py"),  # 8 a node over the 2 nodes
        (1, "torchrun --nproc-per-node=8 train.py"),
    ],
)
def test_launches_that_fit_the_gpus_are_left_alone(tmp_path: Path, tasks: int, launch: str) -> None:
    job = tmp_path / "job.sh"
    job.write_text(HEAD.format(tasks=tasks) + launch + "\n")
    advice = load_workspace(Inputs(job=str(job))).advice
    assert advice is not None
    assert "processes-share-gpus" not in [f.id for f in advice.findings]
