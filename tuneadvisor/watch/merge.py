"""One round of a multi-node watch, made from the latest round of every node.

Each node's sampler (``watch --this-node --stream`` started by ``srun``) sends whole rounds;
``merge_nodes`` tags them with their node and joins them, so the rest of ``watch`` (the
store, the rules, the recording, the screen) sees one round as from a single sampler:

- GPUs: every node's, ids prefixed with the node (``node1:GPU-...``, or ``node1:gpu0``
  without a UUID), so two nodes' GPU 0 stay two GPUs in the facts and the screen.
- processes: every node's, each with its ``node`` (pids repeat across nodes).
- host: the cores of every node one after the other, memory and the process-tree totals
  summed, the busiest main process, DataLoader workers summed (as for several ranks on one
  node).
- the samplers' own CPU: the busiest node's (what a sampler costs the job).

``MergedSession`` shows the node beside each process and GPU name on the live screen (the
screen draws names and command lines; the recorded rounds keep them as they were).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from tuneadvisor.metrics.model import GpuSample, HostSample
from tuneadvisor.metrics.snapshot import Snapshot
from tuneadvisor.watch.session import LiveState, WatchSession


def node_key(node: str, key: str) -> str:
    return f"{node}:{key}"


def node_of(gpu: GpuSample) -> str | None:
    """The node of a merged GPU (its id is ``node:...``); None for a single-node one."""
    node, sep, _ = (gpu.uuid or "").partition(":")
    return node if sep else None


def _sum(values: Iterable[float | int | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(sum(present)) if present else None


def _merge_hosts(t: float, hosts: Sequence[HostSample]) -> HostSample | None:
    if not hosts:
        return None
    mains = [h.main_cpu_pct for h in hosts if h.main_cpu_pct is not None]
    count = _sum(h.proc_count for h in hosts)
    workers = _sum(h.workers for h in hosts)
    return HostSample(
        t=t,
        cpu_pct_per_core=tuple(c for h in hosts for c in h.cpu_pct_per_core),
        mem_used_mib=_sum(h.mem_used_mib for h in hosts),
        mem_total_mib=_sum(h.mem_total_mib for h in hosts),
        proc_cpu_pct=_sum(h.proc_cpu_pct for h in hosts),
        proc_rss_mib=_sum(h.proc_rss_mib for h in hosts),
        proc_count=None if count is None else int(count),
        main_cpu_pct=max(mains) if mains else None,
        workers=None if workers is None else int(workers),
    )


def merge_nodes(
    parts: Sequence[tuple[str, Snapshot]], t: float, notes: Sequence[str] = ()
) -> Snapshot:
    """The nodes' latest rounds (in node order) as one round at time ``t``."""
    gpus = []
    gpu_procs = []
    procs = []
    no_data = []
    own = []
    for node, snap in parts:
        for g in snap.gpus:
            gpus.append(replace(g, t=t, uuid=node_key(node, g.gpu_key)))
        for gp in snap.gpu_procs:
            gpu_procs.append(replace(gp, gpu_key=node_key(node, gp.gpu_key), node=node))
        procs += [replace(p, node=node) for p in snap.procs]
        no_data += [f"{node}: {n}" for n in snap.no_data]
        if snap.sampler_cpu_pct is not None:
            own.append(snap.sampler_cpu_pct)
    hosts = [s.host for _, s in parts if s.host is not None]
    return Snapshot(
        t=t,
        gpus=tuple(gpus),
        gpu_procs=tuple(gpu_procs),
        host=_merge_hosts(t, hosts),
        procs=tuple(procs),
        no_data=(*no_data, *notes),
        sampler_cpu_pct=max(own) if own else None,
    )


def for_display(snap: Snapshot) -> Snapshot:
    """The node in front of each GPU name and process command line, for the screen."""
    gpus = tuple(
        replace(g, name=f"{node} · {g.name or g.gpu_key}") if (node := node_of(g)) else g
        for g in snap.gpus
    )
    procs = tuple(
        replace(p, cmdline=f"[{p.node}] {p.cmdline or p.name}") if p.node else p for p in snap.procs
    )
    return replace(snap, gpus=gpus, procs=procs)


class MergedSession(WatchSession):
    """A watch of several nodes: rounds from ``RemoteSamplers``; the newest round is shown
    with its nodes (the screen draws labels from it alone)."""

    def view(self, seconds: float | None) -> list[Snapshot]:
        snaps = super().view(seconds)
        if snaps:
            snaps[-1] = for_display(snaps[-1])
        return snaps

    def state(self) -> LiveState:
        state = super().state()
        if state.latest is None:
            return state
        return replace(state, latest=for_display(state.latest))
