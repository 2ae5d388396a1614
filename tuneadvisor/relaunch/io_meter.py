"""A local run's storage evidence, measured beside it (``resources.io`` in run.json): what
a prediction's miss may name storage with (relaunch/predicted.py), and nothing else does.

- Read bytes: the kernel's accounting of the ended children (``getrusage(RUSAGE_CHILDREN)``'s
  ``ru_inblock``, 512-byte blocks: ``/proc/PID/io``'s ``read_bytes`` of every process of
  the tree once reaped, DataLoader workers included, however short they lived: a sampler
  would miss a worker that lives less than a round). Read like ``cores_used``: before the
  tasks start and after they end, before the watcher is reaped (its reads are not ours).
  At the first step's event, psutil reads the live tree's counters: what start-up read.
- I/O wait: the machine's (``psutil.cpu_times().iowait``, Linux): every process's, so it is
  evidence of storage only beside the run's own idle cores.
- The file system under the data folder: the longest mount point above its resolved path
  (``psutil.disk_partitions(all=True)``: ``all=False`` leaves nfs and tmpfs out).

A figure that cannot be read is absent, with why in ``not_read``; never a zero.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import psutil

from tuneadvisor.runrecord.io_use import IoUse

BLOCK = 512  # ru_inblock's unit on Linux (read_bytes >> 9)
# Without task I/O accounting in the kernel ru_inblock is always 0: told by /proc/self/io.
_ACCOUNTED = sys.platform.startswith("linux") and os.path.exists("/proc/self/io")


def children_read_bytes() -> int | None:
    """Bytes the reaped children read from storage; None where the kernel does not count."""
    if not _ACCOUNTED:
        return None
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_inblock * BLOCK


def tree_read_bytes(pids: Sequence[int]) -> tuple[int | None, str | None]:
    """The live trees' read bytes now (processes and all their descendants), or None and
    why (not ours to read, no such counter here). A process that ended meanwhile is left
    out: the kernel's total counts it."""
    if not _ACCOUNTED:
        return None, _why_not_accounted()
    total = 0
    try:
        for pid in pids:
            try:
                root = psutil.Process(pid)
                tree = [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                continue
            for proc in tree:
                try:
                    total += int(proc.io_counters().read_bytes)
                except psutil.NoSuchProcess:
                    continue
    except psutil.AccessDenied:
        return None, "the training processes' I/O counters were not ours to read"
    except (AttributeError, OSError) as exc:
        return None, f"the I/O counters could not be read ({exc})"
    return total, None


def _why_not_accounted() -> str:
    if not sys.platform.startswith("linux"):
        return f"no per-process storage accounting read on {sys.platform}"
    return "the kernel keeps no per-process I/O accounting (/proc/self/io is missing)"


def _cpu_times() -> tuple[float, float] | None:
    """(iowait, total) seconds of the machine's CPUs; None without an iowait field."""
    try:
        times = psutil.cpu_times()
    except (OSError, AttributeError):
        return None
    iowait = getattr(times, "iowait", None)
    return None if iowait is None else (float(iowait), float(sum(times)))


def data_filesystem(data_dir: Path) -> tuple[str, str] | str:
    """(type, mount point) of the file system under ``data_dir``, or why not."""
    try:
        path = os.path.realpath(data_dir)
        parts = psutil.disk_partitions(all=True)
    except (OSError, RuntimeError) as exc:
        return f"the mounts could not be read ({exc})"
    best: tuple[str, str] | None = None
    for part in parts:  # the last of equal mount points is the one on top
        mount = part.mountpoint
        under = mount == "/" or path == mount or path.startswith(mount.rstrip("/") + "/")
        if under and (best is None or len(mount) >= len(best[1])):
            best = (part.fstype, mount)
    return best if best is not None else f"no mount point found above {path}"


class IoMeter:
    """Started before the tasks, marked at the first step, finished after they ended."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.t0 = time.perf_counter()
        self.read0 = children_read_bytes()
        self.cpu0 = _cpu_times()
        self.before_first_step: int | None = None
        self.first_step_s: float | None = None
        self.first_step_why: str | None = None
        self._marked = False

    def first_step(self, pids: Sequence[int]) -> None:
        """At the first step's event: what the tree read so far (once)."""
        if self._marked:
            return
        self._marked = True
        read, why = tree_read_bytes(pids)
        if read is None:
            self.first_step_why = why
            return
        self.before_first_step = read
        self.first_step_s = round(time.perf_counter() - self.t0, 3)

    def finish(self) -> IoUse:
        """The figures, once the tasks are reaped (and before the watcher is)."""
        wall = time.perf_counter() - self.t0
        not_read: dict[str, str] = {}
        read1 = children_read_bytes()
        read: int | None = None
        if self.read0 is None or read1 is None:
            not_read["read_bytes"] = _why_not_accounted()
        else:
            read = max(0, read1 - self.read0)
        before = self.before_first_step
        # an orphan (not reaped through the tree) is in the mark and not in the total
        before = None if read is None or before is None else min(before, read)
        if read is not None and not self._marked:
            not_read["read_bytes_before_first_step"] = "no step was reported"
        elif read is not None and before is None:  # the mark could not be read
            not_read["read_bytes_before_first_step"] = self.first_step_why or "not read"
        iowait_pct = iowait_cores = None
        cpu1 = _cpu_times()
        if self.cpu0 is None or cpu1 is None:
            not_read["iowait"] = f"no iowait figure from the CPU times on {sys.platform}"
        else:
            waited, total = cpu1[0] - self.cpu0[0], cpu1[1] - self.cpu0[1]
            if total > 0:
                iowait_pct = round(100 * max(0.0, waited) / total, 2)
                iowait_cores = round(max(0.0, waited) / wall, 3) if wall > 0 else None
            else:
                not_read["iowait"] = "the CPU times did not advance"
        fs = data_filesystem(self.data_dir)
        if isinstance(fs, str):
            not_read["fs_type"] = fs
        return IoUse(
            read_bytes=read,
            read_bytes_before_first_step=before,
            first_step_s=self.first_step_s if before is not None else None,
            wall_s=round(wall, 3),
            iowait_pct=iowait_pct,
            iowait_cores=iowait_cores,
            data_dir=os.path.realpath(self.data_dir),
            fs_type=fs[0] if not isinstance(fs, str) else None,
            fs_mount=fs[1] if not isinstance(fs, str) else None,
            not_read=not_read,
        )
