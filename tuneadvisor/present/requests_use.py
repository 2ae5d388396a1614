"""How "requests vs use" reads: the cores and memory the job asked Slurm for beside what its
processes use (the watch screen's line and the headless watch summary's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tuneadvisor.advisor.fact_view import FactView, Job, view

LABEL = "Requests vs use"


def requested_cpus(job: Mapping[str, object]) -> int | None:
    """``--cpus-per-task`` as the watch knows it (``job.cpus_per_task``), or None."""
    return Job.read(job).cpus_per_task


def requested_mem_mib(job: Mapping[str, object]) -> float | None:
    """The memory asked for in MiB (``job.mem_mib``), or None."""
    mem = Job.read(job).mem_mib
    return mem if isinstance(mem, float) else None  # as the watch gives it


def cores_use(used: str, cpus: int | None) -> str:
    """'cores used 1.02 of 4 requested' (``used`` as the caller writes it)."""
    of = f" of {cpus} requested" if cpus is not None else ""
    return f"cores used {used}{of}"


def memory_use(peak_mib: float, mem_mib: float | None) -> str:
    """'memory peak 2500 MiB of 16384 MiB requested'."""
    of = f" of {mem_mib:.0f} MiB requested" if mem_mib is not None else ""
    return f"memory peak {peak_mib:.0f} MiB{of}"


def workers_seen(most: int) -> str:
    """'up to 2 DataLoader workers': the most any round saw (the last round of a run that
    ended saw none), or 'no DataLoader workers'."""
    if not most:
        return "no DataLoader workers"
    return f"up to {most} DataLoader worker{'' if most == 1 else 's'}"


def requests_line(parts: Sequence[str], sep: str) -> str:
    """'Requests vs use: ...' with the parts joined by ``sep`` ('; ' in the summary, ' · '
    on the screen)."""
    return f"{LABEL}: {sep.join(parts)}"


def per_node_heading(job: Mapping[str, object]) -> str:
    """A merged watch: sums over nodes are no match for per-task asks, so each node alone."""
    cpus = requested_cpus(job)
    asked = f" (asked: {cpus} per task)" if cpus is not None else ""
    return f"Use per node{asked}"


def _count(value: float, one: str) -> str:
    return f"{value:g} {one}" + ("" if value == 1 else "s")


def job_request_lines(facts: Mapping[str, object]) -> list[str]:
    """A finished job as it ran, for the report: what it asked for per node, and what seff and
    sacct say it used. Accounting's memory and core figures are the job's, over all its
    nodes; a multi-node job's are also given per node (the busiest node's estimate where one
    task's peak or the tasks per node say more than the mean), so that they compare with
    --mem, which is per node. Where no node count was read (a seff without its Nodes line),
    what was used is still said, with no "asked" line and no per-node share."""
    v = view(facts)
    nodes = v.job.nodes or v.sacct.alloc_nodes or v.seff.nodes
    if not any(k.startswith(("sacct.", "seff.")) for k in facts):
        return []
    lines = [] if nodes is None else [_asked_line(v, nodes)]
    lines += _used_lines(v, nodes)
    return [f"{LABEL} (the job as it ran):", *lines] if lines else []


def _asked_line(v: FactView, nodes: float) -> str:
    job = v.job
    asked = [_count(nodes, "node")]
    if (tasks := job.tasks_per_node) is not None:
        asked[0] += f" x {_count(tasks, 'task')}"
    if (cpus := job.cpus_per_task) is not None:
        per_node = f" ({cpus * tasks:g} per node)" if tasks is not None else ""
        asked.append(f"{_count(cpus, 'core')} per task{per_node}")
    if (mem := job.mem_mib) is not None:
        asked.append(f"{mem:.0f} MiB per node")
    if gpus := job.gpus:
        asked.append(f"{_count(gpus, 'GPU')} per node")
    return f"  asked: {', '.join(asked)}"


def _used_lines(v: FactView, nodes: float | None) -> list[str]:
    """'used: CPU ... of N cores; memory peak ...', and seff's own 'seff: ...' line."""
    seff = v.seff
    lines: list[str] = []
    used: list[str] = []
    cores = v.sacct.alloc_cpus or seff.cores
    eff = v.usage.cpu_efficiency_pct
    if eff is not None:
        of = f" of {_count(cores, 'core')}" if cores is not None else ""
        used.append(f"CPU {eff:.1f} %{of}")
    peak = v.usage.mem_peak_mib
    if peak is not None:
        used.append(_memory_used(v, peak, nodes))
    if used:
        lines.append(f"  used: {'; '.join(used)}")
    seff_nodes, seff_cores = seff.nodes, seff.cores_per_node
    if seff_nodes is not None:
        per = f", {_count(seff_cores, 'core')} per node" if seff_cores is not None else ""
        # with the peak shown above, seff's own rounding of the same share (17.7 % against
        # the finding's 17.8 %) would be a second figure for one thing
        if (seff_mem := seff.mem_efficiency_pct) is not None and peak is None:
            per += f", memory efficiency {seff_mem:.1f} %"
        lines.append(f"  seff: {_count(seff_nodes, 'node')}{per}")
    return lines


def _memory_used(v: FactView, peak: float, nodes: float | None) -> str:
    mem = v.job.mem_mib
    estimated = v.sacct.mem_peak_estimated or v.seff.mem_used_estimated
    how = " (estimated: the largest task's peak x tasks)" if estimated else ""
    # the busiest node's estimate (advisor/measured_allocation.py), else the mean; said as which
    node_peak = v.usage.mem_peak_node_mib
    several = nodes is not None and nodes > 1
    per_node = (
        f", about {node_peak:.0f} MiB on the busiest node"
        if several and nodes and node_peak is not None and node_peak > peak / nodes + 0.5
        else f", {peak / nodes:.0f} MiB per node (the mean)"
        if several and nodes
        else ""
    )
    of = f" of {mem:.0f} MiB per node" if mem is not None and several else ""
    of = of or (f" of {mem:.0f} MiB" if mem is not None else "")
    return f"memory peak {peak:.0f} MiB{per_node}{of}{how}"
