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
``--cpus-per-task`` or ``SRUN_CPUS_PER_TASK`` is set. Whether a rank then runs on fewer CPUs
than its N is the node's binding (task/affinity's ``lllp_distribution`` at
slurm-22-05-8-1): with no binding asked for, it binds implicitly to sockets, cores or
threads only where the step's tasks on the node x 1 equal that many whole ones of the step
there, else "auto binding off" gives every task the step's whole mask. Seen on a local
22.05.8 node with task/affinity, ``sbatch -n1 -c2`` (tests/fixtures/slurm-local/cpu-binding/):

- plain ``srun``: the whole mask (``Cpus_allowed_list 0-1``): one task is one socket
  there, or no binding at all; nothing lost, all tasks of a node share it;
- binding to cores asked for: ``srun --cpu-bind=cores``, ``SLURM_CPU_BIND=cores`` (or a
  node's ``CpuBind``): ``0``, one core of the two;
- ``TaskPluginParam=autobind=cores`` with the node's tasks not one per socket (the node
  declared as 2 sockets of 1 core; by the same test in the source, 4 DDP tasks on a
  2-socket node would be too, not run here): plain ``srun`` gives ``0``;
- ``srun --exact``: ``0``; ``srun -n 2`` inside the one-task ``-c 2`` job is accepted
  (it asks 2 x 1) and gives each task one CPU.

With ``srun -c $SLURM_CPUS_PER_TASK`` or ``SRUN_CPUS_PER_TASK`` set, every case gave the task
both CPUs. Not reproduced here (2 CPUs): several tasks of several cores each on one node,
and task/cgroup. Reported as tasks that "behave as if they have a single core"
(snakemake-executor-plugin-slurm #41, where the jobstep srun passed ``-c 1``) and as a
slowdown fixed by adding ``--cpus-per-task`` to srun (NOAA-EMC/global-workflow #2044). srun
refuses an empty ``SRUN_CPUS_PER_TASK`` ("Invalid numeric value"): a job without
``--cpus-per-task`` has no SLURM_CPUS_PER_TASK to pass on (``exports.export_line``).

**torchrun and OMP_NUM_THREADS.** ``torch.distributed.run`` sets ``OMP_NUM_THREADS=1`` for
every process when it starts more than one per node and the variable is not set ("to avoid
your system being overloaded, please further tune the variable"): each rank's intra-op CPU
work (CPU-side preprocessing, the optimizer on the CPU) runs on one thread of its share
(``torch/distributed/run.py``: ``if "OMP_NUM_THREADS" not in os.environ and nproc_per_node >
1``; torch.distributed.launch did the same).
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
    if facts["job.omp_threads_set"]:
        facts["job.omp_threads_follow_cores"] = follows_cores(job, launch, OMP_THREADS)
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


def follows_cores(job: JobScript, launch: LaunchLine, name: str) -> bool:
    """``name`` set from the task's cores (``OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK``, as the
    bundled jobs do): its value on the launch line, exported before it, or any assignment in
    the script names SLURM_CPUS_PER_TASK (a fixed number, e.g. torchrun's 1, does not)."""
    cores = re.compile(r"\$\{?SLURM_CPUS_PER_TASK\b")
    given = [v for v in (launch.env.get(name), launch.exported.get(name)) if v is not None]
    assigned = re.compile(rf"(?<![\w$]){re.escape(name)}=(\S*)")
    for line in job.lines:
        if not _comment(line.text):
            given += [m.group(1) for m in assigned.finditer(line.text)]
    return any(cores.search(value) for value in given)


def _comment(text: str) -> bool:
    return text.lstrip().startswith("#")


def _has_option(words: tuple[str, ...], name: str) -> bool:
    """``-c 8``, ``-c8``, ``--cpus-per-task=8``, ``--cpus-per-task 8``."""
    if name.startswith("--"):
        return any(w == name or w.startswith(name + "=") for w in words)
    return any(w == name or (w.startswith(name) and w[len(name) :].lstrip("=")[:1].isalnum())
               for w in words)  # fmt: skip
