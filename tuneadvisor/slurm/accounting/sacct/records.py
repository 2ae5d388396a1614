"""sacct's records: one job with its steps, seff's arithmetic on them, and the facts."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from tuneadvisor.numbers import is_ascii_digits
from tuneadvisor.slurm.states import ENDED

__all__ = [
    "FactValue",
    "Facts",
    "SacctError",
    "SacctJob",
    "SacctStep",
    "het_base",
    "merge_het_jobs",
    "select_job",
]

FactValue = bool | int | float | str
Facts = dict[str, FactValue]


class SacctError(ValueError):
    """The text is not sacct output this module reads. The message names the line or field."""


@dataclass(frozen=True)
class SacctStep:
    """One step (``batch``, ``extern``, ``0``, ...). Seconds, MiB, percent."""

    step_id: str
    name: str | None = None
    state: str | None = None
    exit_code: int | None = None
    exit_signal: int | None = None
    elapsed_s: float | None = None
    cpu_time_s: float | None = None  # TotalCPU: user + system of all tasks
    max_rss_mib: float | None = None  # the largest per-task RSS peak (MaxRSS)
    total_rss_mib: float | None = None  # the tasks' peaks summed (JSON only)
    ntasks: int | None = None
    alloc_cpus: int | None = None
    nodes: int | None = None
    # Slurm's GPU TRES (23.02+ with AutoDetect=nvml or rsmi): per task, summed over the GPUs
    # the task used. Max: the highest reading of any task; Ave: the tasks' last readings
    # averaged (slurmstepd keeps each task's latest value, slurmdbd divides by the tasks).
    gpu_util_max_pct: float | None = None  # TRESUsageInMax gres/gpuutil
    gpu_util_ave_pct: float | None = None  # TRESUsageInAve gres/gpuutil
    gpu_mem_max_mib: float | None = None  # TRESUsageInMax gres/gpumem

    @property
    def cpu_efficiency_pct(self) -> float | None:
        return _efficiency(self.cpu_time_s, _product(self.elapsed_s, self.alloc_cpus))

    @property
    def mem_estimate_mib(self) -> float | None:
        """seff's estimate for a step: MaxRSS x tasks (each task may peak as high)."""
        if self.max_rss_mib is None:
            return None
        return self.max_rss_mib * (self.ntasks or 1)


@dataclass(frozen=True)
class SacctJob:
    """One job (an array task is one job: ``123_4``) with its steps."""

    job_id: str
    name: str | None = None
    user: str | None = None
    cluster: str | None = None
    partition: str | None = None  # empty until accounting catches up
    state: str | None = None  # first word: "CANCELLED" of "CANCELLED by 0"
    state_detail: str | None = None  # the rest: "by 0"
    exit_code: int | None = None
    exit_signal: int | None = None
    elapsed_s: float | None = None
    timelimit_s: int | None = None  # None: unknown or unlimited
    end_time: int | None = None  # epoch seconds; 0 / None while running
    alloc_cpus: int | None = None
    alloc_nodes: int | None = None
    alloc_gpus: int | None = None  # None: no TRES in the input; 0: none allocated
    alloc_mem_mib: float | None = None
    req_cpus: int | None = None
    req_mem_mib: float | None = None  # the job's total
    req_mem_per: Literal["node", "cpu"] | None = None
    reported_cpu_time_s: float | None = None  # the job line's own TotalCPU
    admin_comment: str | None = None  # where Princeton's jobstats keeps its summary
    steps: tuple[SacctStep, ...] = ()
    lagging: tuple[str, ...] = ()  # fields present in the input but not filled yet

    def step(self, step_id: str) -> SacctStep | None:
        return next((s for s in self.steps if s.step_id == step_id), None)

    @property
    def cpu_time_s(self) -> float | None:
        """The job line's TotalCPU (sacct sums before rounding to ms); else the steps' sum
        (the 22.05 JSON job total is 0)."""
        if self.reported_cpu_time_s:
            return self.reported_cpu_time_s
        times = [s.cpu_time_s for s in self.steps if s.cpu_time_s is not None]
        return math.fsum(times) if times else self.reported_cpu_time_s

    @property
    def cpu_used_s(self) -> int | None:
        """Whole seconds, rounded half up like seff."""
        total = self.cpu_time_s
        return None if total is None else math.floor(total + 0.5)

    @property
    def cores(self) -> int:
        """seff's core count: allocated CPUs, 1 when unknown or 0."""
        return self.alloc_cpus or 1

    @property
    def core_walltime_s(self) -> float | None:
        return _product(self.elapsed_s, self.cores)

    @property
    def cpu_efficiency_pct(self) -> float | None:
        return _efficiency(self.cpu_used_s, self.core_walltime_s)

    @property
    def peak_step(self) -> SacctStep | None:
        """The step with the largest per-task RSS peak (first of equals, like seff)."""
        best: SacctStep | None = None
        for step in self.steps:
            if step.max_rss_mib is not None and (
                best is None or best.max_rss_mib is None or step.max_rss_mib > best.max_rss_mib
            ):
                best = step
        return best

    @property
    def mem_peak_mib(self) -> float | None:
        step = self.peak_step
        return None if step is None else step.mem_estimate_mib

    @property
    def mem_peak_node_mib(self) -> float | None:
        """The busiest node's share of that estimate: MaxRSS is the largest task's peak, so
        a node running k of the step's tasks may hold k x MaxRSS (the tasks spread evenly:
        its nodes, else the job's, never more nodes than tasks). --mem is per node."""
        step = self.peak_step
        if step is None or step.max_rss_mib is None:
            return None
        tasks = step.ntasks or 1
        nodes = max(1, min(tasks, step.nodes or self.alloc_nodes or 1))
        return step.max_rss_mib * math.ceil(tasks / nodes)

    @property
    def mem_efficiency_pct(self) -> float | None:
        return _efficiency(self.mem_peak_mib, self.req_mem_mib)

    @property
    def missing(self) -> tuple[str, ...]:
        """Why the record is not final yet: empty when accounting has caught up."""
        reasons = list(self.lagging)
        if self.state is None or self.state not in ENDED:
            reasons.insert(0, f"state {self.state or 'unknown'}")
        return tuple(reasons)

    @property
    def complete(self) -> bool:
        return not self.missing

    def facts(self) -> Facts:
        facts: Facts = {"sacct.complete": self.complete}
        peak = self.peak_step
        if peak is not None and peak.max_rss_mib is not None:
            facts["sacct.mem_peak_estimated"] = (peak.ntasks or 1) > 1
        tasks = [s.ntasks for s in self.steps if s.ntasks is not None]
        if tasks:
            facts["sacct.max_tasks"] = max(tasks)
        for name in _FACT_FIELDS:
            value = getattr(self, name)
            if value is not None:
                facts[f"sacct.{name}"] = value
        return facts


_FACT_FIELDS = (
    "state",
    "exit_code",
    "exit_signal",
    "elapsed_s",
    "timelimit_s",
    "cpu_used_s",
    "core_walltime_s",
    "cpu_efficiency_pct",
    "mem_peak_mib",
    "mem_peak_node_mib",
    "mem_efficiency_pct",
    "alloc_cpus",
    "alloc_nodes",
    "alloc_gpus",
    "alloc_mem_mib",
    "req_cpus",
    "req_mem_mib",
)


def _product(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a * b


def _efficiency(used: float | None, available: float | None) -> float | None:
    """Percent; None (not 0) when the divisor is 0 or unknown: seff's 0.00% means no data."""
    if used is None or not available:
        return None
    return 100.0 * used / available


def select_job(jobs: Sequence[SacctJob], job_id: str | None = None) -> SacctJob:
    """The job asked for, or the only one; a clear error otherwise.

    A heterogeneous job's components (``1853+0``, ``1853+1``) are one job, ``1853``, their
    allocations summed; an array task is its own job (``1853_4``), and ``1853`` picks it when
    it is the only task of that array in the output.
    """
    if job_id is not None:
        wanted = str(job_id).strip()
        exact = [j for j in jobs if j.job_id == wanted]  # a het component asked for by name
        if exact:
            return exact[0]
    merged = merge_het_jobs(jobs)
    if job_id is None:
        if len(merged) == 1:
            return merged[0]
        if not merged:
            raise SacctError("no job in the sacct output")
        raise SacctError(
            f"{len(merged)} jobs in the sacct output ({_ids(merged)}): choose one with --jobid"
        )
    for job in merged:
        if job.job_id == wanted:
            return job
    tasks = [j for j in merged if j.job_id.partition("_")[0] == wanted]
    if len(tasks) == 1:
        return tasks[0]
    if tasks:
        raise SacctError(
            f"job {wanted} is an array of {len(tasks)} tasks in the sacct output"
            f" ({_ids(tasks)}): choose one with --jobid {tasks[0].job_id}"
        )
    raise SacctError(f"no job {wanted} in the sacct output (it has {_ids(merged)})")


_SHOWN_IDS = 5


def _ids(jobs: Sequence[SacctJob]) -> str:
    """The first few ids, then how many more: a month of jobs must not fill the screen."""
    ids = [j.job_id for j in jobs]
    if len(ids) <= _SHOWN_IDS + 1:
        return ", ".join(ids) or "none"
    return f"{', '.join(ids[:_SHOWN_IDS])} and {len(ids) - _SHOWN_IDS} more"


def het_base(job_id: str) -> str | None:
    """``1853`` of a heterogeneous component ``1853+1``; None for any other id."""
    base, plus, offset = job_id.partition("+")
    return base if plus and is_ascii_digits(offset) else None


def merge_het_jobs(jobs: Sequence[SacctJob]) -> tuple[SacctJob, ...]:
    """Each heterogeneous job's components as one job, in the order first seen."""
    # a plain id equal to a heterogeneous job's base ("1853" beside "1853+0") is a job of
    # its own, never a component (its offset, "", ended in int()'s ValueError)
    groups: dict[tuple[bool, str], list[SacctJob]] = {}
    for job in jobs:
        base = het_base(job.job_id)
        groups.setdefault((True, base) if base else (False, job.job_id), []).append(job)
    return tuple(
        _merge_components(base, parts) if het else parts[0] for (het, base), parts in groups.items()
    )


def _merge_components(base: str, parts: Sequence[SacctJob]) -> SacctJob:
    """The leader (offset 0) names the job; the components' allocations add up, and they run
    side by side, so the elapsed time is the longest."""
    parts = sorted(parts, key=lambda j: int(j.job_id.partition("+")[2]))
    lead = parts[0]
    pers = {j.req_mem_per for j in parts}
    return replace(
        lead,
        job_id=base,
        elapsed_s=_most(j.elapsed_s for j in parts),
        alloc_cpus=_sum_int(j.alloc_cpus for j in parts),
        alloc_nodes=_sum_int(j.alloc_nodes for j in parts),
        alloc_gpus=_sum_int(j.alloc_gpus for j in parts),
        alloc_mem_mib=_sum(j.alloc_mem_mib for j in parts),
        req_cpus=_sum_int(j.req_cpus for j in parts),
        req_mem_mib=_sum(j.req_mem_mib for j in parts),
        req_mem_per=lead.req_mem_per if len(pers) == 1 else None,
        reported_cpu_time_s=_sum(j.reported_cpu_time_s for j in parts),
        steps=tuple(step for j in parts for step in j.steps),
        lagging=tuple(dict.fromkeys(reason for j in parts for reason in j.lagging)),
    )


def _sum(values: Iterable[float | None]) -> float | None:
    """The total, or None when any part is unknown (a partial sum would mislead)."""
    known = list(values)
    return None if any(v is None for v in known) else math.fsum(v for v in known if v is not None)


def _sum_int(values: Iterable[int | None]) -> int | None:
    total = _sum(values)
    return None if total is None else int(total)


def _most(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def split_state(text: str) -> tuple[str | None, str | None]:
    words = text.strip().split(None, 1)
    if not words:
        return None, None
    return words[0].rstrip("+"), (words[1] if len(words) > 1 else None)


def tres_count(tres: Mapping[str, float], name: str) -> int | None:
    return int(tres[name]) if name in tres else None
