"""How "requests vs use" reads: the cores and memory the job asked Slurm for beside what its
processes use (the watch screen's line and the headless watch summary's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

LABEL = "Requests vs use"


def requested_cpus(job: Mapping[str, object]) -> int | None:
    """``--cpus-per-task`` as the watch knows it (``job.cpus_per_task``), or None."""
    cpus = job.get("job.cpus_per_task")
    return cpus if isinstance(cpus, int) else None


def requested_mem_mib(job: Mapping[str, object]) -> float | None:
    """The memory asked for in MiB (``job.mem_mib``), or None."""
    mem = job.get("job.mem_mib")
    return mem if isinstance(mem, float) else None


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


def _num(facts: Mapping[str, object], name: str) -> float | None:
    value = facts.get(name)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _count(value: float, one: str) -> str:
    return f"{value:g} {one}" + ("" if value == 1 else "s")


def job_request_lines(facts: Mapping[str, object]) -> list[str]:
    """A finished job as it ran, for the report: what it asked for per node, and what seff and
    sacct say it used. Accounting's memory and core figures are the job's, over all its
    nodes; a multi-node job's are also given per node (the busiest node's estimate where one
    task's peak or the tasks per node say more than the mean), so that they compare with
    --mem, which is per node."""
    nodes = (
        _num(facts, "job.nodes") or _num(facts, "sacct.alloc_nodes") or _num(facts, "seff.nodes")
    )
    if nodes is None or not any(k.startswith(("sacct.", "seff.")) for k in facts):
        return []
    asked = [_count(nodes, "node")]
    if (tasks := _num(facts, "job.tasks_per_node")) is not None:
        asked[0] += f" x {_count(tasks, 'task')}"
    if (cpus := _num(facts, "job.cpus_per_task")) is not None:
        per_node = f" ({cpus * tasks:g} per node)" if tasks is not None else ""
        asked.append(f"{_count(cpus, 'core')} per task{per_node}")
    if (mem := _num(facts, "job.mem_mib")) is not None:
        asked.append(f"{mem:.0f} MiB per node")
    if gpus := _num(facts, "job.gpus"):
        asked.append(f"{_count(gpus, 'GPU')} per node")
    lines = [f"  asked: {', '.join(asked)}"]
    used: list[str] = []
    cores = _num(facts, "sacct.alloc_cpus") or _num(facts, "seff.cores")
    eff = _num(facts, "usage.cpu_efficiency_pct")
    if eff is not None:
        of = f" of {_count(cores, 'core')}" if cores is not None else ""
        used.append(f"CPU {eff:.1f} %{of}")
    peak = _num(facts, "usage.mem_peak_mib")
    if peak is not None:
        estimated = facts.get("sacct.mem_peak_estimated") or facts.get("seff.mem_used_estimated")
        how = " (estimated: the largest task's peak x tasks)" if estimated else ""
        # the busiest node's estimate (advisor/measured_allocation.py), else the mean; said as which
        node_peak = _num(facts, "usage.mem_peak_node_mib")
        per_node = (
            f", about {node_peak:.0f} MiB on the busiest node"
            if node_peak is not None and nodes > 1 and node_peak > peak / nodes + 0.5
            else f", {peak / nodes:.0f} MiB per node (the mean)"
            if nodes > 1
            else ""
        )
        of = f" of {mem:.0f} MiB per node" if mem is not None and nodes > 1 else ""
        of = of or (f" of {mem:.0f} MiB" if mem is not None else "")
        used.append(f"memory peak {peak:.0f} MiB{per_node}{of}{how}")
    if used:
        lines.append(f"  used: {'; '.join(used)}")
    seff_nodes, seff_cores = _num(facts, "seff.nodes"), _num(facts, "seff.cores_per_node")
    if seff_nodes is not None:
        per = f", {seff_cores:g} cores per node" if seff_cores is not None else ""
        if (seff_mem := _num(facts, "seff.mem_efficiency_pct")) is not None:
            per += f", memory efficiency {seff_mem:.1f} %"
        lines.append(f"  seff: {_count(seff_nodes, 'node')}{per}")
    return [f"{LABEL} (the job as it ran):", *lines]
