"""Whether the training waits for its DataLoader workers, from the process tree alone.

A worker works only while its prefetch queue has room: where the training loop takes batches
faster than the workers make them, they never wait, and where the loop is the slower side
(the GPU's or the model's work), the queue fills and the workers sleep until it drains. So
workers seen running in (nearly) every round, while the main process idles, say the loop
waits for them, whatever does the model's work: no GPU sample is needed for it (a CPU-only
recording has none). The kernel's state is a point sample each round (``R``: running or
waiting for a CPU), so the share is over rounds, as the CPU figures are.

Beside it, what they got of the CPUs they may use: a worker that runs all the time but gets
a third of a core waits for a CPU (the kernel's ``R`` is running or runnable). Whether other
processes held those CPUs is read, never assumed: each round's per-core busy share over the
CPUs the tree may run on (its affinity), less the tree's own cores, is what others used of
them. Where the affinity or the per-core figures are not in the round, that is not known.
"""

from __future__ import annotations

from collections.abc import Sequence

from tuneadvisor.metrics.affinity import cpu_list
from tuneadvisor.metrics.snapshot import ROLE_WORKER, Snapshot

RUNNING = "running"


def loader_facts(window: Sequence[Snapshot]) -> dict[str, object]:
    """``host.proc.workers.rounds``, ``host.proc.workers.running_share``,
    ``host.proc.workers.cores.mean``, ``host.proc.workers.cores_each.mean`` and
    ``host.proc.cpus_allowed.others_cores.mean`` (over the rounds that saw a worker with a
    state), and ``host.proc.cpus_allowed`` (the CPUs the watched processes may run on, newest
    round with an affinity read); each absent where not seen."""
    facts: dict[str, object] = {}
    states: list[bool] = []
    cores: list[float] = []
    each: list[float] = []
    others: list[float] = []
    rounds = 0
    for snap in window:
        workers = [p for p in snap.procs if p.role == ROLE_WORKER and p.state is not None]
        if not workers:
            continue
        rounds += 1
        states += [p.state == RUNNING for p in workers]
        cpu = [p.cpu_pct for p in workers if p.cpu_pct is not None]
        if cpu:
            cores.append(sum(cpu) / 100.0)
            each.append(sum(cpu) / 100.0 / len(cpu))
        held = _others_cores(snap)
        if held is not None:
            others.append(held)
    if states:
        facts["host.proc.workers.rounds"] = rounds
        facts["host.proc.workers.running_share"] = sum(states) / len(states)
    if cores:
        facts["host.proc.workers.cores.mean"] = sum(cores) / len(cores)
        facts["host.proc.workers.cores_each.mean"] = sum(each) / len(each)
    if others:
        facts["host.proc.cpus_allowed.others_cores.mean"] = sum(others) / len(others)
    latest = next((s for s in reversed(window) if any(p.affinity for p in s.procs)), None)
    if latest is not None:
        allowed = frozenset().union(*(cpu_list(p.affinity or "") for p in latest.procs))
        if allowed:
            facts["host.proc.cpus_allowed"] = len(allowed)
    return facts


def _others_cores(snap: Snapshot) -> float | None:
    """Cores of the CPUs the round's processes may run on that other processes kept busy:
    those CPUs' busy share (the host's per-core reading) less the tree's own cores; None
    where the round has no affinity, no per-core reading or no CPU of the tree's."""
    host = snap.host
    if host is None or not host.cpu_pct_per_core or host.proc_cpu_pct is None:
        return None
    allowed = frozenset().union(*(cpu_list(p.affinity or "") for p in snap.procs))
    per_core = host.cpu_pct_per_core
    if not allowed or max(allowed) >= len(per_core):
        return None  # a CPU the reading does not cover (offline CPUs renumber it)
    busy = sum(per_core[cpu] for cpu in allowed) / 100.0
    return max(0.0, busy - host.proc_cpu_pct / 100.0)
