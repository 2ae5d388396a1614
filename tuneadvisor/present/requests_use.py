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


def requests_line(parts: Sequence[str], sep: str) -> str:
    """'Requests vs use: ...' with the parts joined by ``sep`` ('; ' in the summary, ' · '
    on the screen)."""
    return f"{LABEL}: {sep.join(parts)}"


def per_node_heading(job: Mapping[str, object]) -> str:
    """A merged watch: sums over nodes are no match for per-task asks, so each node alone."""
    cpus = requested_cpus(job)
    asked = f" (asked: {cpus} per task)" if cpus is not None else ""
    return f"Use per node{asked}"
