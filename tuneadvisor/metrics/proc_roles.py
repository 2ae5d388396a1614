"""What a watched process is, and what the watched tree adds up to.

``ProcStatic``: what does not change while a process runs one program (name, command line,
user, the Slurm/CUDA environment), read once; ``Tracked``: one process (pid + start time)
across the sampler's rounds.

Roles: ``worker`` is a child of a Python process that is a ``multiprocessing`` child of it
(fork keeps the parent's command line; spawn and forkserver run ``spawn_main``), which is how
PyTorch starts DataLoader workers; ``main`` is a Python process that is not a worker, with its
DDP ``rank`` from ``RANK`` (torchrun) or ``SLURM_PROCID`` (srun with several tasks);
``launcher`` is torchrun, srun, mpirun or a shell; ``helper`` is multiprocessing's resource
tracker or forkserver, or slurmstepd.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from tuneadvisor.metrics.model import HostSample
from tuneadvisor.metrics.snapshot import (
    ROLE_CHILD,
    ROLE_HELPER,
    ROLE_LAUNCHER,
    ROLE_MAIN,
    ROLE_OTHER,
    ROLE_WORKER,
    ProcSample,
)
from tuneadvisor.numbers import ascii_int

_LAUNCHERS = frozenset({"torchrun", "srun", "mpirun", "mpiexec", "accelerate", "deepspeed"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "tcsh", "csh", "slurm_script"})

# ---------------------------------------------------------------------- per process state


def base_name(arg: str) -> str:
    return os.path.basename(arg)


def is_python(cmdline: Sequence[str], name: str) -> bool:
    first = base_name(cmdline[0]) if cmdline else name
    return first.startswith("python") or name.startswith("python")


@dataclass(frozen=True)
class ProcStatic:
    """What does not change while a process runs one program; read once (psutil)."""

    name: str
    cmdline: tuple[str, ...]
    text: str  # the command line joined with spaces
    user: str | None
    env: dict[str, str] | None  # None: not readable
    denied: tuple[str, ...]

    @property
    def python(self) -> bool:
        return is_python(self.cmdline, self.name)


@dataclass(eq=False)
class Tracked:
    """One process (pid + start time) across rounds."""

    start: float
    image: tuple[str, int, int]
    static: ProcStatic | None = None
    last_t: float | None = None
    last_cpu_s: float | None = None
    last_io: tuple[int, int] | None = None
    role: tuple[str, int | None] | None = None  # cached with what it was decided from:
    role_ppid: int | None = None
    role_parent: ProcStatic | None = None
    empty_cmdlines: int = 0  # rounds its command line read empty (caught inside its exec)


# ---------------------------------------------------------------------- roles


def role_of(me: ProcStatic, parent: ProcStatic | None) -> tuple[str, int | None]:
    cmd = me.cmdline
    text = me.text
    python = me.python
    if python and parent is not None and parent.python:
        forked = cmd == parent.cmdline and bool(cmd)
        if forked or "spawn_main" in text:  # forkserver children: forked from it
            return ROLE_WORKER, None
    if "multiprocessing.resource_tracker" in text or "multiprocessing.forkserver" in text:
        return ROLE_HELPER, None
    if me.name == "slurmstepd":
        return ROLE_HELPER, None
    words = {base_name(a) for a in cmd[:3]} | {me.name}
    if words & _LAUNCHERS or "torch.distributed." in text:
        return ROLE_LAUNCHER, None
    if python:
        return ROLE_MAIN, _rank(me.env)
    if me.name in _SHELLS:
        return ROLE_LAUNCHER, None
    # a child is some process's: one with no parent read (init, a whole node's daemons) is not
    return (ROLE_CHILD if parent is not None else ROLE_OTHER), None


def _rank(env: dict[str, str] | None) -> int | None:
    if not env:
        return None
    # another process's environment: any text (int() raised on "x" and read "٣" as 3)
    value = env.get("RANK")
    if value is None and (ascii_int(env.get("SLURM_NTASKS", "")) or 1) > 1:
        value = env.get("SLURM_PROCID")
    return None if value is None else ascii_int(value)


def tree_totals(host: HostSample, procs: Iterable[ProcSample]) -> HostSample:
    """The host sample with the watched tree's totals filled in."""
    procs = list(procs)
    cpu = [p.cpu_pct for p in procs if p.cpu_pct is not None]
    rss = [p.rss_mib for p in procs if p.rss_mib is not None]
    mains = [p.cpu_pct for p in procs if p.role == ROLE_MAIN and p.cpu_pct is not None]
    return replace(
        host,
        proc_cpu_pct=sum(cpu) if cpu else None,
        proc_rss_mib=sum(rss) if rss else None,
        proc_count=len(procs),
        main_cpu_pct=max(mains) if mains else None,
        workers=sum(1 for p in procs if p.role == ROLE_WORKER),
        proc_read_mib_s=storage_read(procs),
    )


def storage_read(procs: Iterable[ProcSample]) -> float | None:
    """The tree's storage reads in MiB/s: the sum over its processes, None (never 0) where
    one's ``/proc/PID/io`` could not be read (another user's: a part would be taken for the
    whole) or none has a rate yet (a process's first round has none)."""
    rates = []
    for p in procs:
        if "io" in p.denied or "all" in p.denied:
            return None
        if p.read_mib_s is not None:
            rates.append(p.read_mib_s)
    return sum(rates) if rates else None
