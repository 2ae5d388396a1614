"""One sampling round of ``watch``: GPUs, the host, and the watched process tree.

A ``Snapshot`` is what the live screen draws, what a recording stores one line of, and what
the ring buffers keep. Its GPU and host parts are the ``model`` samples every metrics source
produces, so facts and rules do not care whether a value came live or from a file.
"""

from __future__ import annotations

from dataclasses import dataclass

from tuneadvisor.metrics.model import GpuSample, HostSample

# Process roles, as the tree shows them.
ROLE_MAIN = "main"  # the watched process (or each rank's own process)
ROLE_WORKER = "worker"  # a DataLoader worker (a multiprocessing child of a Python process)
ROLE_LAUNCHER = "launcher"  # torchrun / torch.distributed.run / srun around the ranks
ROLE_HELPER = "helper"  # multiprocessing's resource tracker, forkserver
ROLE_CHILD = "child"  # anything else in the tree, under a parent read with it
ROLE_OTHER = "other"  # anything else with no parent in the tree (PID 1 of a whole-node watch)


@dataclass(frozen=True, kw_only=True)
class ProcSample:
    """One process of the watched tree. Values the OS would not give are None."""

    pid: int
    ppid: int | None = None
    name: str = ""
    cmdline: str = ""
    role: str = ROLE_CHILD
    rank: int | None = None  # RANK / SLURM_PROCID of a DDP rank
    user: str | None = None
    state: str | None = None  # psutil status: running, sleeping, disk-sleep, zombie, ...
    cpu_pct: float | None = None  # 100 = one core busy; None on the first sight
    rss_mib: float | None = None
    threads: int | None = None
    read_mib_s: float | None = None
    write_mib_s: float | None = None
    denied: tuple[str, ...] = ()  # what AccessDenied kept from us
    # The CPUs it may run on, as the kernel's Cpus_allowed_list ("0-3,8"); None when not
    # read (recordings before it, the whole node, the OS would not say): metrics.affinity.
    affinity: str | None = None
    node: str | None = None  # set when a watch merges several nodes (pids repeat across them)


@dataclass(frozen=True, kw_only=True)
class GpuProcess:
    """A process NVML says holds memory on a GPU."""

    gpu_key: str
    pid: int
    used_mib: float | None = None
    node: str | None = None  # as ProcSample.node


@dataclass(frozen=True, kw_only=True)
class Snapshot:
    """Everything one round sampled, at time ``t`` (seconds, monotonic within one watch)."""

    t: float
    gpus: tuple[GpuSample, ...] = ()
    gpu_procs: tuple[GpuProcess, ...] = ()
    host: HostSample | None = None
    procs: tuple[ProcSample, ...] = ()
    no_data: tuple[str, ...] = ()  # why something is missing ("GPU: NVML ... Not Found")
    sampler_cpu_pct: float | None = None  # the sampler's own CPU since the last round
    mark: str | None = None  # a moment the user marked
