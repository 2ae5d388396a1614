"""One round of a multi-node watch, made from the latest round of every node.

Each node's sampler (``watch --this-node --stream`` started by ``srun``) sends whole rounds;
``merge_nodes`` tags them with their node and joins them, so the rest of ``watch`` (the
store, the rules, the recording, the screen) sees one round as from a single sampler:

- GPUs: every node's, ids prefixed with the node (``node1:GPU-...``, or ``node1:gpu0``
  without a UUID), so two nodes' GPU 0 stay two GPUs in the facts and the screen.
- processes: every node's, each with its ``node`` (pids repeat across nodes).
- host: the cores of every machine one after the other and their memory summed; the
  process-tree totals summed, the busiest main process, DataLoader workers summed (as for
  several ranks on one node). Nodes that are one machine (the same boot id in their
  sampler's header: containers, or the test cluster's namespaces) share its cores and
  memory, which are counted once (``same_machine_note`` says so).
- the samplers' own CPU: the busiest node's (what a sampler costs the job).

``MergedSession`` shows the node beside each process and GPU name on the live screen (the
screen draws names and command lines; the recorded rounds keep them as they were).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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


def _sum_all(values: Iterable[float | None]) -> float | None:
    """The sum where every value is known; None where any is not (or there is none)."""
    known = list(values)
    if not known or any(v is None for v in known):
        return None
    return float(sum(v for v in known if v is not None))


def machines(nodes: Sequence[str], boot_ids: Mapping[str, str | None]) -> dict[str, str]:
    """node -> the first node of its machine (nodes with the same boot id; a node without
    one is a machine of its own)."""
    first: dict[str, str] = {}
    out = {}
    for node in nodes:
        boot = boot_ids.get(node)
        out[node] = node if boot is None else first.setdefault(boot, node)
    return out


def same_machine_note(nodes: Sequence[str], boot_ids: Mapping[str, str | None]) -> str | None:
    """'node1, node2 and node3 are one machine (the same boot id): ...', or None."""
    groups: dict[str, list[str]] = {}
    for node, machine in machines(nodes, boot_ids).items():
        groups.setdefault(machine, []).append(node)
    shared = [g for g in groups.values() if len(g) > 1]
    if not shared:
        return None
    said = "; ".join(
        f"{', '.join(g[:-1])} and {g[-1]} are one machine (the same boot id)" for g in shared
    )
    return f"{said}: its cores and memory are counted once, the processes per node"


def _merge_hosts(
    t: float, hosts: Sequence[tuple[str, HostSample]], machine: Mapping[str, str]
) -> HostSample | None:
    if not hosts:
        return None
    # machine-wide figures (/proc/stat, /proc/meminfo): once per machine
    once: dict[str, HostSample] = {}
    for node, h in hosts:
        once.setdefault(machine.get(node, node), h)
    wide = list(once.values())
    mains = [h.main_cpu_pct for _, h in hosts if h.main_cpu_pct is not None]
    count = _sum(h.proc_count for _, h in hosts)
    workers = _sum(h.workers for _, h in hosts)
    return HostSample(
        t=t,
        cpu_pct_per_core=tuple(c for h in wide for c in h.cpu_pct_per_core),
        mem_used_mib=_sum(h.mem_used_mib for h in wide),
        mem_total_mib=_sum(h.mem_total_mib for h in wide),
        proc_cpu_pct=_sum(h.proc_cpu_pct for _, h in hosts),
        proc_rss_mib=_sum(h.proc_rss_mib for _, h in hosts),
        proc_count=None if count is None else int(count),
        main_cpu_pct=max(mains) if mains else None,
        workers=None if workers is None else int(workers),
        # every node's tree or none: a node whose reads are unknown leaves the sum unknown
        proc_read_mib_s=_sum_all(h.proc_read_mib_s for _, h in hosts if h.proc_count),
    )


def merge_nodes(
    parts: Sequence[tuple[str, Snapshot]],
    t: float,
    notes: Sequence[str] = (),
    machine: Mapping[str, str] | None = None,
) -> Snapshot:
    """The nodes' latest rounds (in node order) as one round at time ``t``; ``machine``:
    node -> its machine (``machines``; default: every node its own)."""
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
    hosts = [(node, s.host) for node, s in parts if s.host is not None]
    return Snapshot(
        t=t,
        gpus=tuple(gpus),
        gpu_procs=tuple(gpu_procs),
        host=_merge_hosts(t, hosts, machine or {}),
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
