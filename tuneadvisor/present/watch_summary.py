"""The plain-text summary ``watch --headless`` prints at the end (and the TUI on quit)."""

from __future__ import annotations

import resource
from collections.abc import Mapping, Sequence

from tuneadvisor.metrics.affinity import rank_bindings
from tuneadvisor.metrics.model import MetricsSeries, Stats
from tuneadvisor.metrics.ring import to_series
from tuneadvisor.metrics.snapshot import ROLE_MAIN, ROLE_WORKER, Snapshot
from tuneadvisor.present.counts import counted
from tuneadvisor.present.gpu_figures import activity_parts
from tuneadvisor.present.live_findings import findings_heading, no_findings, summary_lines
from tuneadvisor.present.requests_use import (
    cores_use,
    memory_use,
    requested_cpus,
    requested_mem_mib,
    requests_line,
    workers_seen,
)
from tuneadvisor.present.terminal_safe import terminal_safe
from tuneadvisor.watch.merge import node_of
from tuneadvisor.watch.remote import RemoteSamplers
from tuneadvisor.watch.session import WatchSession, WatchSpan


def _f(value: float | None, fmt: str = ".0f", unit: str = "") -> str:
    return "n/a" if value is None else f"{value:{fmt}}{unit}"


def _get(stats: Stats | None, which: str) -> float | None:
    return None if stats is None else float(getattr(stats, which))


def _gpu_lines(series: MetricsSeries, no_data: Sequence[str]) -> list[str]:
    if not series.gpus:
        why = next((n for n in no_data if "no GPU data" in n), "no GPU data")  # "node: no ..."
        return [f"GPUs: {why}"]
    out = []
    for gpu in series.gpus:
        util = gpu.stats("util_pct")
        mem = gpu.stats("mem_used_mib")
        total = gpu.stats("mem_total_mib")
        power = gpu.stats("power_w")
        limit = gpu.stats("power_limit_w")
        temp = gpu.stats("temp_c")
        label = f"GPU {gpu.index}" if gpu.index is not None else gpu.key
        activity = "".join(f", {part}" for part in activity_parts(gpu))
        out.append(
            f"{label} {gpu.name or ''} ({gpu.key}): "
            # a unit only beside a number: "n/a", never "n/a %"
            f"util (time any kernel ran) mean {_f(_get(util, 'mean'), '.0f', ' %')} "
            f"p95 {_f(_get(util, 'p95'), '.0f', ' %')}{activity}, "
            f"memory peak {_f(_get(mem, 'max'), '.0f', ' MiB')} "
            f"of {_f(_get(total, 'max'), '.0f', ' MiB')}, "
            f"power mean {_f(_get(power, 'mean'), '.0f', ' W')} "
            f"of {_f(_get(limit, 'max'), '.0f', ' W')}, "
            f"temperature max {_f(_get(temp, 'max'), '.0f', ' °C')}"
        )
    return out


def _sampler_line(own: Stats | None, interval_s: float, merged: bool) -> str:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    whose = "the busiest node's sampler thread" if merged else "its own thread"
    if own is None:  # its use is a difference of two readings: one round has none
        used = f"{whose}'s CPU use is measured from the second round on"
    else:
        used = (
            f"{whose} used {own.mean:.2f} % of one core (p95 {own.p95:.2f} %) at {interval_s:g} s"
        )
    return (
        f"Sampler: {used}; "
        f"the whole watch process {usage.ru_utime + usage.ru_stime:.2f} s CPU, "
        f"peak RSS {usage.ru_maxrss / 1024:.0f} MiB"
    )


def render_summary(session: WatchSession, target: str, recording: str | None) -> str:
    state = session.state()
    span = WatchSpan.of(session.timeline())  # the rounds as recorded: no node labels added
    snaps = span.rounds
    series = to_series(snaps)
    latest = state.latest
    duration = (snaps[-1].t - snaps[0].t) if len(snaps) > 1 else 0.0
    out = [
        f"tuneadvisor watch: {target}: {counted(state.rounds, 'round')} over {duration:.1f} s "
        f"every {state.interval_s:g} s ({session.ended_because or 'ended'})"
    ]
    out += _gpu_lines(series, latest.no_data if latest else ())
    why = getattr(session.sampler, "activity_reason", None)  # said once, not per round
    if why and series.gpus:
        out.append(f"GPUs: {why}")
    hosts = [s.host for s in snaps if s.host is not None]
    if hosts:
        busy = Stats.of(h.busy_cores for h in hosts)
        cores = max(len(h.cpu_pct_per_core) for h in hosts)
        used_peak = max((h.mem_used_mib or 0) for h in hosts)
        out.append(
            f"CPU: {counted(cores, 'core')}, busy mean {_f(_get(busy, 'mean'), '.1f')} "
            f"(p95 {_f(_get(busy, 'p95'), '.1f')}) cores; memory used peak "
            f"{_f(used_peak)} MiB"
        )
        tree = Stats.of(h.proc_cpu_cores for h in hosts)
        rss = span.proc_rss
        if tree is not None:
            out.append(
                f"Processes: {_f(tree.mean, '.2f')} cores mean (p95 {_f(tree.p95, '.2f')}), "
                f"peak RSS {_f(_get(rss, 'max'))} MiB{_shared_pages(rss, used_peak)}; "
                f"{span.mains} main, {workers_seen(span.workers)}"
            )
            if len(_nodes(snaps)) <= 1:  # requests are per node: see the node lines
                out += _requests(state.job, tree, rss)
    nodes = _nodes(snaps)
    out += _node_lines(snaps, series, nodes)
    out += binding_lines(snaps)
    out.append(_sampler_line(span.sampler_cpu, state.interval_s, bool(nodes)))
    if isinstance(session.sampler, RemoteSamplers):
        out += [f"Said on a node: {line}" for line in session.sampler.messages]
    if state.findings:
        out.append(findings_heading(state.window_s))
        for live in state.findings:
            out += ["  " + line for line in summary_lines(live)]
    else:
        out.append(no_findings(state.window_s, gpu=any(s.gpus for s in snaps)))
    marks = [s for s in snaps if s.mark]
    for snap in marks:
        out.append(f"Mark at {snap.t - state.started:.1f} s: {snap.mark}")
    if recording:
        out.append(f"Recording: {recording} (read it with: tuneadvisor report --metrics FILE)")
    # a mark's text, a command line, a recording's node names: no control character runs
    return terminal_safe("\n".join(out) + "\n")


def _shared_pages(rss: Stats | None, used_peak: float) -> str:
    """Why the processes' RSS can top the node's memory in use: each process counts the
    pages it shares (forked DataLoader workers share the main's) as its own, and the sum
    counts them once per process."""
    if rss is None or used_peak <= 0 or rss.max <= used_peak:
        return ""
    return " (summed over the processes, shared pages once per process: above the node's)"


def binding_lines(snaps: Sequence[Snapshot]) -> list[str]:
    """'CPU binding: rank 0: 1 CPU (0) of a share of 2 (bound short); rank 1: ...': each
    rank's CPUs in the newest round that read any (the last rounds of a watch that ended
    with its processes have none), nothing when no affinity was read."""
    latest = next((s for s in reversed(snaps) if any(p.affinity for p in s.procs)), None)
    bindings = rank_bindings(latest.procs) if latest is not None else []
    if not bindings:
        return []
    parts = [b.text() + (" (bound short)" if b.short else "") for b in bindings]
    return ["CPU binding: " + "; ".join(parts)]


def _nodes(snaps: Sequence[Snapshot]) -> list[str]:
    """The nodes of a multi-node watch, in order of appearance (none for one node)."""
    seen: dict[str, None] = {}
    for snap in snaps:
        for p in snap.procs:
            if p.node is not None:
                seen.setdefault(p.node)
        for g in snap.gpus:
            node = node_of(g)
            if node is not None:
                seen.setdefault(node)
    return list(seen)


def _node_lines(snaps: Sequence[Snapshot], series: MetricsSeries, nodes: list[str]) -> list[str]:
    """A multi-node watch: each node's process tree and GPUs."""
    out = []
    for node in nodes:
        mine = [[p for p in s.procs if p.node == node] for s in snaps]
        cores = Stats.of(
            sum(p.cpu_pct for p in procs if p.cpu_pct is not None) / 100.0
            for procs in mine
            if any(p.cpu_pct is not None for p in procs)
        )
        rss = max((sum(p.rss_mib or 0.0 for p in procs) for procs in mine), default=0.0)
        # the node's last round with processes: after the run ended the last has none
        now = next((procs for procs in reversed(mine) if procs), [])
        mains = sum(1 for p in now if p.role == ROLE_MAIN)
        workers = sum(1 for p in now if p.role == ROLE_WORKER)
        gpus = [g for g in series.gpus if g.key.startswith(f"{node}:")]
        util = Stats.of(x for g in gpus for x in g.values("util_pct"))
        gpu_text = (
            f"{len(gpus)} GPUs, util mean {_f(_get(util, 'mean'), '.0f', ' %')}"
            if gpus
            else "no GPU data"
        )
        out.append(
            f"Node {node}: {counted(len(now), 'process', 'processes')} ({mains} main, "
            f"{counted(workers, 'DataLoader worker')}), "
            f"{_f(_get(cores, 'mean'), '.2f')} cores mean (p95 {_f(_get(cores, 'p95'), '.2f')}), "
            f"peak RSS {rss:.0f} MiB; {gpu_text}"
        )
    return out


def _requests(job: Mapping[str, object], tree: Stats, rss: Stats | None) -> list[str]:
    """Only what was requested: the summary compares, the screen also shows bare use."""
    parts = []
    cpus = requested_cpus(job)
    if cpus is not None:
        parts.append(cores_use(f"{tree.mean:.2f} (p95 {tree.p95:.2f})", cpus))
    mem = requested_mem_mib(job)
    if mem is not None and rss is not None:
        parts.append(memory_use(rss.max, mem))
    return [requests_line(parts, "; ")] if parts else []
