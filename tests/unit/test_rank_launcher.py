"""Who starts the ranks: a launcher that spawns one process per GPU behind srun is the
launcher, not srun, so a one-task-per-node job is not told to start one task per GPU."""

from __future__ import annotations

import pytest

from tuneadvisor.slurm.jobscript.facts import job_facts
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.launch_line.choose import choose_launch
from tuneadvisor.slurm.launch_line.search import find_launches

HEADER = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:4\n"


@pytest.mark.parametrize(
    ("line", "launcher"),
    [
        ("srun python train.py", "srun"),
        ("srun torchrun --nproc_per_node=4 train.py", "torchrun"),
        ("srun python -m torch.distributed.launch --nproc_per_node=4 --use_env train.py",
         "python -m torch.distributed.launch"),
        ("srun lightning run model --devices=4 train.py", "lightning run model"),
        ("srun fabric run --devices=4 train.py", "fabric run"),
        ("srun accelerate launch --num_processes 4 train.py", "accelerate launch"),
        ("srun deepspeed --num_gpus 4 train.py", "deepspeed"),
        ("srun kernprof -l train.py", "srun"),
    ],
)  # fmt: skip
def test_the_rank_launcher(line: str, launcher: str) -> None:
    job = JobScript.parse(HEADER + line + "\n", "job.sbatch")
    facts = job_facts(job, choose_launch(find_launches(job)))
    assert facts["job.launcher"] == launcher
