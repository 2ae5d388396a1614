"""How the host sampler reads processes and the node: straight from ``/proc`` on Linux (a
round costs a third of psutil's), else through psutil. Both give the same values in the same
units; ``Readers`` bundles one set, so the sampler (and its tests) can take either.

``stat`` gives what changes per round plus the process's identity (start time and program
image, so that a reused pid or an ``exec`` is noticed); ``None`` means no such process,
``PermissionError`` a process that is not ours to read, ``Gone`` one that ended mid-read.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import psutil

from tuneadvisor.numbers import is_ascii_digits

ZOMBIE = "zombie"  # psutil.STATUS_ZOMBIE
STATES = {  # the state letter of /proc/PID/stat, named as psutil's status() names it
    "R": "running",
    "S": "sleeping",
    "D": "disk-sleep",
    "T": "stopped",
    "t": "tracing-stop",
    "Z": "zombie",
    "X": "dead",
    "x": "dead",
    "K": "wake-kill",
    "W": "waking",
    "I": "idle",
    "P": "parked",
}


def procfs_ok() -> bool:
    try:
        with open("/proc/self/stat", "rb") as f:
            return sys.platform.startswith("linux") and f.read().startswith(b"%d " % os.getpid())
    except OSError:
        return False


PROCFS = procfs_ok()
_TICKS = float(os.sysconf("SC_CLK_TCK")) if PROCFS else 100.0
_PAGE = os.sysconf("SC_PAGE_SIZE") if PROCFS else 4096
# /proc/PID/io exists only with task I/O accounting; /proc/loadavg's last pid only helps when
# /proc shows our own pid namespace.
_HAS_IO = PROCFS and os.path.exists("/proc/self/io")
_SAME_PIDNS = PROCFS and os.readlink("/proc/self") == str(os.getpid())


class Stat(NamedTuple):
    """One reading of a process: what changes from round to round, plus its identity."""

    image: tuple[str, int, int]  # changes on exec: the program name, where its argv lies
    state: str  # psutil's status names
    ppid: int
    cpu_s: float  # user + system
    threads: int
    start: float  # with the pid, which process this is (start time; units of the source)
    rss: int | None  # bytes; None: read from /proc/PID/statm when measured


class Gone(Exception):
    """The process ended while we read it."""


# ---------------------------------------------------------------------- readers: /proc


def _read(path: str, size: int = 8192) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def proc_stat(pid: int) -> Stat | None:
    """None: no such process. PermissionError: not ours to read (hidepid)."""
    try:
        data = _read(f"/proc/{pid}/stat")
    except (FileNotFoundError, ProcessLookupError):
        return None
    rpar = data.rfind(b")")  # the name may hold spaces and parentheses
    f = data[rpar + 2 :].split()
    if len(f) < 22:
        return None
    comm = data[data.find(b"(") + 1 : rpar].decode("utf-8", "replace")
    # An exec keeps the pid, the start time and often the name (python starting python);
    # arg_start and arg_end (fields 48-49: 0 unless we may ptrace it) move with every exec
    # (the new stack is randomized, and its length follows the command line).
    return Stat(
        (comm, int(f[45]), int(f[46])) if len(f) > 46 else (comm, 0, 0),
        STATES.get(f[0].decode(), "?"),
        int(f[1]),
        (int(f[11]) + int(f[12])) / _TICKS,
        int(f[17]),
        float(f[19]),
        None,  # stat's RSS is a per-CPU estimate on recent kernels; statm's is exact
    )


def proc_rss(pid: int) -> int:
    """Resident memory in bytes, as psutil's memory_info().rss (/proc/PID/statm)."""
    try:
        return int(_read(f"/proc/{pid}/statm", 256).split()[1]) * _PAGE
    except (FileNotFoundError, ProcessLookupError):
        raise Gone from None


def proc_io(pid: int) -> tuple[int, int] | None:
    """(read_bytes, write_bytes); None: no I/O accounting here. PermissionError: not ours."""
    if not _HAS_IO:
        return None
    try:
        words = _read(f"/proc/{pid}/io", 1024).split()
    except (FileNotFoundError, ProcessLookupError):
        raise Gone from None
    fields = dict(zip(words[::2], words[1::2], strict=False))
    try:
        return int(fields[b"read_bytes:"]), int(fields[b"write_bytes:"])
    except (KeyError, ValueError):
        return None


def proc_pids() -> set[int]:
    return {int(name) for name in os.listdir("/proc") if is_ascii_digits(name)}


def proc_last_pid() -> int | None:
    """The pid the kernel handed out last (a process's or a thread's)."""
    if not _SAME_PIDNS:
        return None
    try:
        return int(_read("/proc/loadavg", 256).split()[-1])
    except (OSError, ValueError, IndexError):
        return None


def proc_cores() -> list[tuple[float, float]]:
    out = []
    with open("/proc/stat", "rb") as f:
        for line in f:  # the cpu lines come first; the rest (interrupts) can be long
            if not line.startswith(b"cpu"):
                break
            if line.startswith(b"cpu "):
                continue
            values = [int(v) for v in line.split()[1:11]]  # the 10 fields psutil knows
            idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
            total = sum(values)
            out.append((float(total - idle), float(total)))
    return out


def proc_memory() -> tuple[float, float] | None:
    """(used, total) in bytes as psutil computes them (total - MemAvailable)."""
    fields: dict[bytes, int] = {}
    with open("/proc/meminfo", "rb") as f:
        for line in f:
            if line.startswith((b"MemTotal:", b"MemAvailable:")):
                key, value = line.split()[:2]
                fields[key] = int(value) * 1024
                if len(fields) == 2:
                    break
    if len(fields) < 2:
        return None  # an old kernel without MemAvailable: psutil estimates it
    total, avail = fields[b"MemTotal:"], fields[b"MemAvailable:"]
    return float(total - avail), float(total)


# ---------------------------------------------------------------------- readers: psutil


def psutil_stat(pid: int) -> Stat | None:
    try:
        p = psutil.Process(pid)
        with p.oneshot():
            cpu = p.cpu_times()
            return Stat(
                (p.name(), 0, 0),
                p.status(),
                p.ppid(),
                cpu.user + cpu.system,
                p.num_threads(),
                p.create_time(),
                p.memory_info().rss,
            )
    except psutil.ZombieProcess:
        return Stat(("", 0, 0), ZOMBIE, 0, 0.0, 0, 0.0, 0)
    except psutil.NoSuchProcess:
        return None
    except psutil.AccessDenied:
        raise PermissionError(pid) from None


def psutil_io(pid: int) -> tuple[int, int] | None:
    try:
        c = psutil.Process(pid).io_counters()
    except AttributeError:  # not on this platform
        raise PermissionError(pid) from None
    except psutil.NoSuchProcess:
        raise Gone from None
    except psutil.AccessDenied:
        raise PermissionError(pid) from None
    return int(c.read_bytes), int(c.write_bytes)


def psutil_cores() -> list[tuple[float, float]]:
    out = []
    for ct in psutil.cpu_times(percpu=True):
        total = sum(ct)
        idle = ct.idle + getattr(ct, "iowait", 0.0)
        out.append((total - idle, total))
    return out


def psutil_pids() -> set[int]:
    return set(psutil.pids())


def no_last_pid() -> int | None:
    return None


def no_memory() -> tuple[float, float] | None:
    return None  # psutil's virtual_memory() is read by the sampler itself


@dataclass(frozen=True)
class Readers:
    """One way of reading processes and the node (``/proc`` or psutil)."""

    stat: Callable[[int], Stat | None]
    io: Callable[[int], tuple[int, int] | None]
    rss: Callable[[int], int]  # bytes, when ``stat`` left it None
    pids: Callable[[], set[int]]
    last_pid: Callable[[], int | None]  # None: unknown (then every round looks at new pids)
    cores: Callable[[], list[tuple[float, float]]]  # per core (busy, total) CPU time
    memory: Callable[[], tuple[float, float] | None]  # (used, total) bytes; None: ask psutil


def _psutil_rss(pid: int) -> int:
    raise Gone  # psutil's stat always carries the RSS


PSUTIL = Readers(psutil_stat, psutil_io, _psutil_rss, psutil_pids, no_last_pid, psutil_cores,
                 no_memory)  # fmt: skip
PROC = Readers(proc_stat, proc_io, proc_rss, proc_pids, proc_last_pid, proc_cores, proc_memory)
DEFAULT = PROC if PROCFS else PSUTIL
