"""A local run's other load, measured beside it (``resources.cpu_others`` in run.json): how
many cores' worth of the CPUs the run could use other processes held over the run.

- Busy time: the kernel's per-CPU counters (``/proc/stat``'s ``cpuN`` lines, read by label:
  an offline CPU leaves a gap a position would miss), user + nice + system + irq + softirq
  + steal (a hypervisor's other guests held that time too), over the CPUs the run could be
  given (this process's affinity: inside a Slurm job its cgroup's CPUs, so another job on
  the node is not counted; on a shared machine every CPU).
- The run's own: its children's CPU time once reaped (``getrusage(RUSAGE_CHILDREN)``: the
  tasks, every DataLoader worker however short it lived, the watch sampler) and this
  process's (``RUSAGE_SELF``: following the output). Read after the watcher is reaped.

Others = busy less own, in cores' worth of the wall time (never below 0: the kernel counts in
ticks). A figure that cannot be read is absent, with why in ``not_read``; never a zero.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from tuneadvisor.runrecord.others_use import OthersUse

PROC_STAT = Path("/proc/stat")
# /proc/stat's fields after the label: user nice system idle iowait irq softirq steal ...
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)


def cpu_busy_ticks(text: str) -> dict[int, int]:
    """Each CPU's busy ticks by its id, from ``/proc/stat``'s text (guest time is inside
    user already; idle and iowait are not busy)."""
    out: dict[int, int] = {}
    for line in text.splitlines():
        label, _, rest = line.partition(" ")
        if not label.startswith("cpu") or not label[3:].isdigit():
            continue
        values = rest.split()
        out[int(label[3:])] = sum(int(values[i]) for i in _BUSY_FIELDS if i < len(values))
    return out


def _read_busy() -> tuple[dict[int, int] | None, str | None]:
    if not sys.platform.startswith("linux"):
        return None, f"no per-CPU counters read on {sys.platform}"
    try:
        return cpu_busy_ticks(PROC_STAT.read_text()), None
    except (OSError, ValueError) as exc:
        return None, f"{PROC_STAT} could not be read ({exc})"


def _own_cpu_s() -> float:
    """CPU seconds of this process and its reaped children."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


def others_cores(
    before: Mapping[int, int],
    after: Mapping[int, int],
    cpus: Sequence[int],
    own_s: float,
    wall_s: float,
    hz: float,
) -> tuple[float, float, float] | str:
    """(busy, own, others) cores' worth over ``cpus``, or why not (a CPU without a counter,
    a wall time of nothing)."""
    missing = [c for c in cpus if c not in before or c not in after]
    if missing:
        return f"no busy counter for CPU {missing[0]} in {PROC_STAT}"
    if wall_s <= 0 or hz <= 0:
        return "the run took no time"
    busy_s = sum(max(0, after[c] - before[c]) for c in cpus) / hz
    busy, own = busy_s / wall_s, max(0.0, own_s) / wall_s
    return busy, own, max(0.0, busy - own)


class CpuMeter:
    """Started before the tasks, finished after they (and the watcher) were reaped."""

    def __init__(self, cpus: Sequence[int]) -> None:
        self.cpus = tuple(sorted(cpus))
        self.t0 = time.perf_counter()
        self.own0 = _own_cpu_s()
        self.busy0, self.why = _read_busy()

    def finish(self) -> OthersUse:
        wall = time.perf_counter() - self.t0
        own = _own_cpu_s() - self.own0
        busy1, why = _read_busy()
        why = self.why or why
        figures: tuple[float, float, float] | str
        if self.busy0 is None or busy1 is None:
            figures = why or "not read"
        else:
            figures = others_cores(
                self.busy0, busy1, self.cpus, own, wall, float(os.sysconf("SC_CLK_TCK"))
            )
        if isinstance(figures, str):
            return OthersUse(self.cpus, wall_s=round(wall, 3), not_read={"others_cores": figures})
        busy, mine, others = figures
        return OthersUse(
            allowed_cpus=self.cpus,
            busy_cores=round(busy, 3),
            own_cores=round(mine, 3),
            others_cores=round(others, 3),
            wall_s=round(wall, 3),
        )
