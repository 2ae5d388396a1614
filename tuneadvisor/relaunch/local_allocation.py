"""A local stand-in for a Slurm allocation: the ``SLURM_*`` variables a job step sees, and
CPU affinity limited to the cores the job asked for, so that ``--cpus-per-task`` changes on
a workstation what it changes on a cluster."""

from __future__ import annotations

import os
import random
import re
import socket
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

# runrecord holds the run record's model (below the session); named here too for
# relaunch's importers.
from tuneadvisor.runrecord.allocation_record import Allocation as Allocation
from tuneadvisor.runrecord.settings import Settings


def available_cores() -> list[int]:
    """The cores this process may run on (its affinity), sorted."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return list(range(os.cpu_count() or 1))


_NVIDIA_DEVICE = re.compile(r"nvidia[0-9]+")


def gpus_here(dev: Path = Path("/dev"), environ: Mapping[str, str] | None = None) -> int | None:
    """NVIDIA GPUs this machine shows its processes (the ``/dev/nvidiaN`` files CUDA opens),
    less any ``CUDA_VISIBLE_DEVICES`` hides; None where that cannot be read (no ``/dev``)."""
    env = os.environ if environ is None else environ
    try:
        count = sum(1 for p in dev.iterdir() if _NVIDIA_DEVICE.fullmatch(p.name))
    except OSError:
        return None
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        count = min(count, len([d for d in visible.split(",") if d.strip() not in ("", "-1")]))
    return count


def describe_here(settings: Settings, gpus: int | None) -> str:
    """The settings in one line as a run here will have them: a GPU asked for on a machine
    without one is not labelled as if the run had it (``gpus``: :func:`gpus_here`)."""
    return ", ".join(describe_parts_here(settings, gpus))


def describe_parts_here(settings: Settings, gpus: int | None) -> list[str]:
    """The words of :func:`describe_here`, one setting each."""
    if settings.gpus and gpus == 0:
        parts = replace(settings, gpus=0).describe_parts()
        return [*parts, f"no GPU here ({settings.gpus} asked)"]
    return settings.describe_parts()


def emulate(
    settings: Settings,
    *,
    name: str,
    submit_dir: str,
    cores: Sequence[int] | None = None,
    gpus: int | None = None,
) -> Allocation:
    """Cores for each task (consecutive, as Slurm's block distribution gives them) and the
    job's variables. Asking for more cores than there are shares them, with a note."""
    pool = list(cores) if cores is not None else available_cores()
    want = settings.ntasks * settings.cpus_per_task
    notes: list[str] = []
    if want > len(pool):
        notes.append(
            f"asked for {want} cores ({settings.ntasks} x {settings.cpus_per_task}), this "
            f"machine has {len(pool)}: tasks share them"
        )
    per_task: list[tuple[int, ...]] = []
    for task in range(settings.ntasks):
        start = task * settings.cpus_per_task
        per_task.append(
            tuple(sorted({pool[(start + i) % len(pool)] for i in range(settings.cpus_per_task)}))
        )
    if settings.gpus and gpus == 0:
        notes.append(
            f"asked for {settings.gpus} GPU(s): this machine has none, the run trains on the CPU"
        )
    elif settings.gpus:
        notes.append(f"asked for {settings.gpus} GPU(s): the scripts use CUDA only if it is here")
    hostname = socket.gethostname().split(".")[0] or "localhost"
    job_id = str(random.randint(1_000_000, 9_999_999))
    env = {
        "SLURM_JOB_ID": job_id,
        "SLURM_JOBID": job_id,
        "SLURM_JOB_NAME": name,
        "SLURM_JOB_NODELIST": hostname,
        "SLURM_NODELIST": hostname,
        "SLURM_JOB_NUM_NODES": "1",
        "SLURM_NNODES": "1",
        "SLURM_NTASKS": str(settings.ntasks),
        "SLURM_NPROCS": str(settings.ntasks),
        "SLURM_NTASKS_PER_NODE": str(settings.ntasks),
        "SLURM_CPUS_PER_TASK": str(settings.cpus_per_task),
        "SLURM_CPUS_ON_NODE": str(len({c for t in per_task for c in t})),
        "SLURM_JOB_CPUS_PER_NODE": str(want),
        "SLURM_SUBMIT_DIR": submit_dir,
        "SLURM_SUBMIT_HOST": hostname,
        "SLURM_CLUSTER_NAME": "tuneadvisor-local",
        # as the bundled job scripts do: PyTorch's threads follow the job's cores
        "OMP_NUM_THREADS": str(settings.cpus_per_task),
    }
    if settings.mem:
        env["SLURM_MEM_PER_NODE"] = settings.mem
    if settings.gpus:
        env["SLURM_GPUS_ON_NODE"] = str(settings.gpus)
    return Allocation(job_id, hostname, tuple(per_task), env, tuple(notes))


_CLEARED_PREFIXES = ("SLURM_", "SLURMD_", "TORCHELASTIC_", "MASTER_")
_CLEARED = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK")


def clean_environ(base: Mapping[str, str]) -> dict[str, str]:
    """The caller's environment without any job or rank variables of its own."""
    return {
        k: v for k, v in base.items() if not k.startswith(_CLEARED_PREFIXES) and k not in _CLEARED
    }


def pin(pid: int, cores: Sequence[int]) -> bool:
    """Limit a process (and what it starts later) to ``cores``; False where impossible."""
    try:
        os.sched_setaffinity(pid, set(cores))
    except (AttributeError, OSError):
        return False
    return True
