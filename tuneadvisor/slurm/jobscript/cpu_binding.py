"""Whether the launch gives its tasks the job's cores: srun's cores per task, and the OpenMP
threads of torchrun's ranks. The facts say what the script does; the Slurm version that makes
it matter is the advisor's to combine (``advisor/slurm_release.py``).

**srun and --cpus-per-task (Slurm 22.05 to 23.02).** Slurm 22.05's RELEASE_NOTES: "srun will
no longer read in SLURM_CPUS_PER_TASK. This means you will implicitly have to specify
--cpus-per-task on your srun calls, or set the new SRUN_CPUS_PER_TASK env var to accomplish
the same thing." 23.11's: "Replace SRUN_CPUS_PER_TASK with SLURM_CPUS_PER_TASK and get back
to the behavior before Slurm 22.05" (github.com/SchedMD/slurm, tags slurm-22-05-0-1 and
slurm-23-11-0-1). So a step started by ``srun`` inside a batch job of ``--cpus-per-task=N``
(N > 1) asks for one CPU per task, on 22.05.x and 23.02.x, unless srun gets ``-c`` /
``--cpus-per-task`` or ``SRUN_CPUS_PER_TASK`` is set. What a rank then runs on depends on the
node's binding (task/affinity, 22.05.8's ``lllp_distribution``; checked on a local 22.05.8
cluster with TaskPlugin=task/affinity, 2 CPUs, ``sbatch -n1 -c2``):

- binding by cores (``--cpu-bind=cores``, ``SLURM_CPU_BIND=cores``, a node's ``CpuBind``):
  each task is bound to 1 core of its N (seen: ``Cpus_allowed_list 0`` instead of ``0-1``);
- ``srun --exact``, or tasks x 1 equal to the step's cores on the node: implicit binding to
  one core per task (``srun --exact``: ``0``); ``srun -n 2`` inside the one-task ``-c 2``
  job is accepted and gives each task one CPU (it asked 2 x 1);
- otherwise "auto binding off": every task gets the step's whole mask (the plain one-task
  step: ``0-1``), so nothing is lost to binding, but the step still asks N times too little.

With ``srun -c $SLURM_CPUS_PER_TASK`` or ``SRUN_CPUS_PER_TASK`` set, every case above gave the
task both CPUs. Reported as tasks that "behave as if they have a single core"
(snakemake-executor-plugin-slurm #41) and as a slowdown fixed by adding ``--cpus-per-task`` to
srun (NOAA-EMC/global-workflow #2044).

**torchrun and OMP_NUM_THREADS.** ``torch.distributed.run`` sets ``OMP_NUM_THREADS=1`` for
every process when it starts more than one per node and the variable is not set ("to avoid
your system being overloaded, please further tune the variable"): each rank's intra-op CPU
work (CPU-side preprocessing, the optimizer on the CPU) runs on one thread of its share.
"""

from __future__ import annotations

import re

from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.launch_line.model import LaunchLine

SRUN_CPUS = "SRUN_CPUS_PER_TASK"
OMP_THREADS = "OMP_NUM_THREADS"
_SRUN_CORES = ("-c", "--cpus-per-task")


def binding_facts(job: JobScript, launch: LaunchLine | None) -> dict[str, object]:
    """``job.omp_threads_set`` where a launch was read; ``job.srun_cpus_unset`` where srun
    starts the tasks. Whether the script gives ``--cpus-per-task`` is left out on purpose:
    ``apply`` may add it, and a condition on it would fire on the second apply only."""
    if launch is None:
        return {}
    facts: dict[str, object] = {"job.omp_threads_set": sets_variable(job, launch, OMP_THREADS)}
    srun = launch.launcher("srun")
    if srun is not None:
        given = any(_has_option(srun.words, name) for name in _SRUN_CORES)
        facts["job.srun_cpus_unset"] = not (given or sets_variable(job, launch, SRUN_CPUS))
    return facts


def sets_variable(job: JobScript, launch: LaunchLine, name: str) -> bool:
    """``name`` set for the launch: on its line, exported before it (as the launch-line
    reader follows the script), or assigned or exported anywhere in the script (``X=1;
    export X``, in a block, in a function: read as set, so nothing is added twice)."""
    if name in launch.env or name in launch.exported:
        return True
    assigned = re.compile(rf"(?<![\w$]){re.escape(name)}=|\bexport\b[^\n#]*\b{re.escape(name)}\b")
    return any(assigned.search(line.text) for line in job.lines if not _comment(line.text))


def _comment(text: str) -> bool:
    return text.lstrip().startswith("#")


def _has_option(words: tuple[str, ...], name: str) -> bool:
    """``-c 8``, ``-c8``, ``--cpus-per-task=8``, ``--cpus-per-task 8``."""
    if name.startswith("--"):
        return any(w == name or w.startswith(name + "=") for w in words)
    return any(w == name or (w.startswith(name) and w[len(name) :].lstrip("=")[:1].isalnum())
               for w in words)  # fmt: skip
