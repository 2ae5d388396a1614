"""Which CPUs each process may run on, and the ranks bound to fewer than their share.

Slurm 22.05 to 23.02 start ``srun``'s tasks with one CPU each unless srun is given
``-c``/``SRUN_CPUS_PER_TASK`` (see ``slurm/jobscript/cpu_binding.py``); where the node binds
tasks to cores, a DDP rank then runs on one core of the eight its task was given. The kernel
says what a process may use (``sched_getaffinity``, the ``Cpus_allowed_list`` of
``/proc/PID/status``); this module keeps it as that list's text ("0-3,8") and compares ranks.

A rank's share is the CPUs the watched processes of its node may use together (the job's
batch shell or launcher holds the whole allocation there) divided by the ranks on that node.
Watching the ranks alone (no parent in the tree), the union is only what the ranks have, and
a short rank cannot be told from a small allocation: nothing is flagged then.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import psutil

from tuneadvisor.metrics.snapshot import ROLE_MAIN, ProcSample, Snapshot
from tuneadvisor.numbers import is_ascii_digits


def cpu_list_text(cpus: Iterable[int]) -> str:
    """{0, 1, 2, 3, 8} -> "0-3,8", as the kernel writes ``Cpus_allowed_list``."""
    ranges: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def cpu_list(text: str) -> frozenset[int]:
    """ "0-3,8" -> {0, 1, 2, 3, 8}; a part that is no number or range is left out (a
    recording is a file anyone may edit)."""
    cpus: set[int] = set()
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        if not is_ascii_digits(low) or (high and not is_ascii_digits(high)):
            continue
        first, last = int(low), int(high or low)
        if last - first > 65536:  # no machine has that many: a crafted range
            continue
        cpus.update(range(first, last + 1))
    return frozenset(cpus)


def read_affinity(pid: int) -> str | None:
    """The CPUs ``pid`` may run on, as list text; None when the OS will not say (the process
    ended, another user's, no such call on this system). ``os.sched_getaffinity`` is the
    syscall psutil's ``cpu_affinity()`` makes, without building a ``Process``."""
    try:
        if hasattr(os, "sched_getaffinity"):
            return cpu_list_text(os.sched_getaffinity(pid))
        return cpu_list_text(psutil.Process(pid).cpu_affinity() or ())  # pragma: no cover
    except (OSError, psutil.Error, AttributeError):
        return None


@dataclass(frozen=True)
class RankBinding:
    """One rank's CPUs against its share on its node."""

    pid: int
    rank: int | None
    node: str | None
    cpus: frozenset[int]
    share: float  # the node's CPUs / its ranks

    @property
    def short(self) -> bool:
        """Bound to fewer CPUs than its share (a whole CPU short: 2.5 each is no fault)."""
        return len(self.cpus) <= self.share - 1

    def text(self) -> str:
        who = f"rank {self.rank}" if self.rank is not None else f"pid {self.pid}"
        where = f" on {self.node}" if self.node else ""
        cpus = len(self.cpus)
        return (
            f"{who}{where}: {cpus} CPU{'s' if cpus != 1 else ''} "
            f"({cpu_list_text(self.cpus)}) of a share of {self.share:g}"
        )


def rank_bindings(procs: Sequence[ProcSample]) -> list[RankBinding]:
    """Each main process (a rank) whose affinity is known, with its node's share."""
    out: list[RankBinding] = []
    for node in dict.fromkeys(p.node for p in procs):
        mine = [p for p in procs if p.node == node and p.affinity]
        ranks = [p for p in mine if p.role == ROLE_MAIN]
        if not ranks:
            continue
        node_cpus = frozenset().union(*(cpu_list(p.affinity or "") for p in mine))
        share = len(node_cpus) / len(ranks)
        out += [
            RankBinding(p.pid, p.rank, node, cpu_list(p.affinity or ""), share)
            for p in sorted(ranks, key=lambda p: (p.rank is None, p.rank or 0, p.pid))
        ]
    return out


def affinity_facts(window: Sequence[Snapshot]) -> dict[str, object]:
    """host.proc.affinity.*: the ranks of the newest round with an affinity read, against
    their share (absent when no rank's affinity was read)."""
    latest = next((s for s in reversed(window) if any(p.affinity for p in s.procs)), None)
    bindings = rank_bindings(latest.procs) if latest is not None else []
    if not bindings:
        return {}
    short = [b for b in bindings if b.short]
    fewest = min(bindings, key=lambda b: len(b.cpus))
    facts: dict[str, object] = {
        "host.proc.affinity.ranks": len(bindings),
        "host.proc.affinity.short_ranks": len(short),
        "host.proc.affinity.min_cpus": len(fewest.cpus),
        "host.proc.affinity.share": round(fewest.share, 2),
    }
    if short:
        facts["host.proc.affinity.short"] = "; ".join(b.text() for b in short[:4]) + (
            f"; and {len(short) - 4} more" if len(short) > 4 else ""
        )
    return facts
