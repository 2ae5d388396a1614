"""Real job scripts (tests/fixtures/realworld/jobscripts/) read for their CPU binding, as a
careful reader reads them: srun without ``-c``/``SRUN_CPUS_PER_TASK`` on more than one core
per task, torchrun with several ranks a task and no ``OMP_NUM_THREADS`` (threads per rank =
cores / ranks); and what `apply` writes for them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import load_workspace

JOBS = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "jobscripts"

# file -> (srun without its cores fires, OMP_NUM_THREADS suggested or None)
EXPECTED = {
    # srun torchrun --nproc_per_node=4 in one task of 40 cores
    "cscfi-pytorch-ddp-examples-run-ddp-gpu4.sh": (True, 10),
    # python -m torch.distributed.launch --nproc_per_node=8, 32 cores, no srun
    "jh-lee-kr-nodestest-template.sh": (False, 4),
    # srun singularity run $SIF bash -c 'python -m torch.distributed.run --nproc_per_node=8'
    "lumi-supercomputer-lumi-ai-guide-05-multi-gpu-and-node-run_ddp_torchrun_4.sh": (True, 7),
    # torchrun --standalone --nproc_per_node=8 in one task of 80 cores, no srun
    "niccolo-ajroldi-nanogpt-scripts-run.sh": (False, 10),
    # exports OMP_NUM_THREADS for accelerate's torch.distributed.run; srun bash -c without -c
    "mila-iqia-mila-docs-docs-examples-distributed-llm_training-job.sh": (True, None),
    # srun python on 2 tasks a node of 8 cores each
    "princetonuniversity-multi_gpu_training-02_pytorch_ddp-job.sh": (True, None),
    # torch.distributed.launch with 2 ranks in a task of 1 core: one thread is the share
    "777pomingzi-urs-test.sh": (False, None),
    # srun python with one core per task: nothing to lose
    "mila-iqia-mila-docs-docs-examples-distributed-003_multi_node-job.sh": (False, None),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_cpu_binding_of_a_real_job_script(name: str, tmp_path: Path) -> None:
    srun_fires, threads = EXPECTED[name]
    job = tmp_path / name
    shutil.copyfile(JOBS / name, job)
    workspace = load_workspace(Inputs(job=str(job)))
    advice = workspace.advice
    assert advice is not None
    ids = {f.id for f in advice.findings}
    assert ("srun-cpus-not-inherited" in ids) is srun_fires
    assert ("omp-num-threads-unset" in ids) is (threads is not None)
    omp = advice.plan.env.get("OMP_NUM_THREADS")
    assert (omp.value if omp is not None else None) == threads
    tuned = workspace.tuned.tuned_job
    assert tuned is not None
    text = tuned.render_text()
    if threads is not None:
        assert f"export OMP_NUM_THREADS={threads}\n" in text
    if srun_fires:
        assert "then export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK; fi" in text
    bash = shutil.which("bash")
    if bash is not None and workspace.tuned.job_diff:
        original = subprocess.run([bash, "-n", str(JOBS / name)], capture_output=True)
        job.write_text(text)
        after = subprocess.run([bash, "-n", str(job)], capture_output=True)
        assert after.returncode == original.returncode, after.stderr
