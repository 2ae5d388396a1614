"""How many tasks on each node the launch's ``srun`` line asks for: its own
``--ntasks-per-node``, or ``-n``/``--ntasks`` over ``-N``/``--nodes`` (or the job's nodes).
What srun is told on its line is the step's; without it, srun starts the job's tasks (as
sbatch, or the job as it ran, has them: not this module's business)."""

from __future__ import annotations

import math
import re

from tuneadvisor.numbers import ascii_int, is_ascii_digits
from tuneadvisor.slurm.launch_line.model import LaunchLine
from tuneadvisor.slurm.units import INT_MAX

__all__ = ["srun_tasks_per_node"]

# Slurm's own counts stand for the job's: `srun -n $SLURM_NTASKS` is the job's tasks.
_JOBS_OWN = re.compile(r"\$\{?SLURM_(NTASKS|NPROCS|NTASKS_PER_NODE|NNODES|JOB_NUM_NODES)\}?")
_SHORT = re.compile(r"-([nN])([0-9]+)")  # `srun -n8`, `-N2`


def srun_tasks_per_node(launch: LaunchLine, nodes: int) -> int | None:
    """The tasks per node the launch's srun line asks for; 0 when it sets none (or sets the
    job's own, ``-n $SLURM_NTASKS``) or there is no srun; None when the line sets them from
    something only running would tell (``-n $WORLD``)."""
    srun = launch.launcher("srun")
    if srun is None:
        return _mpi_tasks_per_node(launch, nodes)
    options = dict(srun.options)
    for word in srun.words:
        short = _SHORT.fullmatch(word)
        if short is not None:
            options[f"-{short.group(1)}"] = short.group(2)
    per_node = _count(options, "--ntasks-per-node")
    ntasks = _count(options, "--ntasks", "-n")
    step_nodes = _count(options, "--nodes", "-N")
    if None in (per_node, ntasks, step_nodes):  # given, but not as a number
        return None
    if per_node:
        return per_node
    if ntasks:
        return math.ceil(ntasks / max(step_nodes or nodes, 1))
    return 0


# Open MPI's and MPICH's (Hydra's) spellings: processes in all, and per node.
_MPI_TOTAL = ("-np", "--np", "-n", "-c")
_MPI_PER_NODE = ("--npernode", "-npernode", "-N", "-ppn", "--ppn")


def _mpi_tasks_per_node(launch: LaunchLine, nodes: int) -> int:
    """mpirun's or mpiexec's processes per node: its per-node count, else its total over the
    job's nodes; 0 without either (it then starts one per slot Slurm gave: the job's tasks)."""
    mpi = next((launcher for launcher in launch.launchers if launcher.name.startswith("mpi")), None)
    if mpi is None:
        return 0
    options = mpi.options
    per_node = _count(options, *_MPI_PER_NODE)
    total = _count(options, *_MPI_TOTAL)
    if per_node:
        return per_node
    if total:
        return math.ceil(total / max(nodes, 1))
    return 0


def _count(options: dict[str, str], *names: str) -> int | None:
    """The option's number; 0 when it is not given (or is the job's own count); None when
    it is given as something else."""
    value = next((options[name] for name in names if name in options), None)
    if value is None or _JOBS_OWN.fullmatch(value.strip("'\"")):
        return 0
    value = value.strip("'\"")
    if "-" in value and is_ascii_digits(value.split("-", 1)[0]):  # --nodes=2-4: at least 2
        value = value.split("-", 1)[0]
    count = ascii_int(value)
    # srun reads its counts as C ints: past INT_MAX is no count (nor arithmetic's to do)
    return count if count is not None and 1 <= count <= INT_MAX else None
