"""GPU (and per-node host) figures in a job's accounting, with no log: Princeton jobstats'
summary in AdminComment, else Slurm's own GPU TRES of the job's steps.

jobstats (``slurm.accounting.jobstats``): one mean utilization and one memory peak per GPU over the
whole run, and per node the cores, CPU time and memory peak. Facts: ``gpu.count``,
``gpu.util.mean`` (the GPUs' means averaged: they cover the same run), ``gpu.util.min_gpu_mean``,
``gpu.idle_count``, ``gpu.mem_used.max_mib``, ``gpu.mem_total_mib``, ``gpu.mem_used.max_pct``,
``gpu.duration_s``, and ``gpu.samples``: the run time over jobstats' 30 s sampling period, the
samples each mean stands for. jobstats itself gives no GPU advice under ten periods
(``MIN_RUNTIME_SECONDS``), which is what the rules' ``gpu.samples >= 10`` asks too. Per
node: ``jobstats.cores``, ``jobstats.cpu_efficiency_pct``, ``jobstats.mem_peak_mib`` (the
nodes' peaks summed, as jobstats reports), ``jobstats.mem_peak_node_mib`` (the largest node's
peak), ``jobstats.mem_efficiency_pct``.

Slurm TRES (``gres/gpuutil``, ``gres/gpumem`` in TRESUsageInMax/Ave; Slurm 23.02 and later,
only with ``AutoDetect=nvml`` or ``rsmi``; 22.05 has neither TRES): per *task*, summed over
the GPUs the task used, and no mean over time: Max is the highest reading, Ave the tasks' last
readings averaged. So no ``gpu.util.mean`` and no ``gpu.samples`` come from them, and the GPU
utilization rules stay silent; ``gpu.util.max`` and ``gpu.mem_used.max_mib`` are facts only when
each task had one GPU (tasks = GPUs), where a task's reading is its GPU's. The peak still
bounds the mean: no GPU's mean exceeds the peak, so the GPUs' mean is at most
peak x tasks / GPUs (``util_bound_pct``, shown as "<= N %").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tuneadvisor.slurm.accounting.jobstats import (
    JobstatsError,
    JobstatsSummary,
    JobstatsTooLarge,
    is_jobstats,
    parse_jobstats,
)
from tuneadvisor.slurm.accounting.sacct.records import Facts, SacctJob, SacctStep

__all__ = ["AccountingGpu", "accounting_gpu"]

# As the metrics model counts a GPU idle (metrics/model.py IDLE_UTIL_PCT).
IDLE_UTIL_PCT = 5.0
_UNSET = 1e15  # Slurm's "infinite"/unset 64-bit values print as huge numbers


@dataclass(frozen=True)
class AccountingGpu:
    """What the accounting said about the job's GPUs (and, from jobstats, its nodes)."""

    source: Literal["jobstats", "slurm-tres"]
    facts: Facts
    summary: str  # one line for the report: what was read
    util_pct: float | None = None  # for a table: the GPUs' mean utilization ...
    util_bound: bool = False  # ... or, from Slurm's TRES, an upper bound of it

    @property
    def label(self) -> str:
        return {
            "jobstats": "jobstats (AdminComment)",
            "slurm-tres": "Slurm TRES (gres/gpuutil, gres/gpumem)",
        }[self.source]


def accounting_gpu(job: SacctJob) -> tuple[AccountingGpu | None, tuple[str, ...]]:
    """jobstats' summary when AdminComment has one, else Slurm's GPU TRES when the steps
    have them; and notes on what could not be read. A summary that inflates past its bound
    is no damage to note but a crafted input: ``JobstatsTooLarge`` goes to the caller, who
    knows the file."""
    notes: list[str] = []
    if is_jobstats(job.admin_comment):
        try:
            summary = parse_jobstats(job.admin_comment or "")
        except JobstatsTooLarge:
            raise
        except JobstatsError as exc:
            notes.append(f"job {job.job_id}: {exc}")
        else:
            if job.alloc_gpus and not summary.gpus:
                notes.append(
                    f"job {job.job_id} had {job.alloc_gpus} GPU{'s' if job.alloc_gpus > 1 else ''}"
                    " but its jobstats summary has no GPU figures (no GPU exporter data)"
                )
            return _from_jobstats(summary), tuple(notes)
    return _from_tres(job), tuple(notes)


# ------------------------------------------------------------------ jobstats


def _from_jobstats(summary: JobstatsSummary) -> AccountingGpu:
    facts: Facts = {}
    _put(facts, "jobstats.cores", summary.cores)
    _put(facts, "jobstats.cpu_efficiency_pct", summary.cpu_efficiency_pct)
    _put(facts, "jobstats.mem_peak_mib", summary.mem_used_mib)
    peaks = [n.mem_used_mib for n in summary.nodes if n.mem_used_mib is not None]
    _put(facts, "jobstats.mem_peak_node_mib", max(peaks, default=None))  # --mem is per node
    _put(facts, "jobstats.mem_efficiency_pct", summary.mem_efficiency_pct)
    gpus = summary.gpus
    means = [g.util_pct for g in gpus if g.util_pct is not None]
    if gpus:
        facts["gpu.source"] = "jobstats"
        facts["gpu.count"] = len(gpus)
        _put(facts, "gpu.duration_s", summary.elapsed_s)
    if means:
        facts["gpu.util.mean"] = sum(means) / len(means)
        facts["gpu.util.min_gpu_mean"] = min(means)
        facts["gpu.idle_count"] = sum(1 for m in means if m < IDLE_UTIL_PCT)
        _put(facts, "gpu.samples", summary.sampling_rounds)
    used = [g.mem_used_mib for g in gpus if g.mem_used_mib is not None]
    totals = [g.mem_total_mib for g in gpus if g.mem_total_mib is not None]
    shares = [
        100.0 * g.mem_used_mib / g.mem_total_mib
        for g in gpus
        if g.mem_used_mib is not None and g.mem_total_mib
    ]
    _put(facts, "gpu.mem_used.max_mib", max(used, default=None))
    _put(facts, "gpu.mem_total_mib", max(totals, default=None))
    _put(facts, "gpu.mem_used.max_pct", max(shares, default=None))
    mean = facts.get("gpu.util.mean")
    return AccountingGpu(
        source="jobstats",
        facts=facts,
        summary=_jobstats_line(summary),
        util_pct=mean if isinstance(mean, float) else None,
    )


def _jobstats_line(summary: JobstatsSummary) -> str:
    parts = []
    for gpu in summary.gpus:
        util = (
            "no utilization" if gpu.util_pct is None else f"utilization mean {gpu.util_pct:.1f} %"
        )
        mem = ""
        if gpu.mem_used_mib is not None:
            of = f" of {gpu.mem_total_mib:.0f}" if gpu.mem_total_mib else ""
            mem = f", memory peak {gpu.mem_used_mib:.0f}{of} MiB"
        parts.append(f"GPU {gpu.index} on {gpu.node}: {util}{mem}")
    for node in summary.nodes:
        host = [f"node {node.name}: {node.cpus or '?'} cores"]
        if node.cpu_time_s is not None and summary.elapsed_s:
            host.append(f"{node.cpu_time_s / summary.elapsed_s:.2f} busy on average")
        if node.mem_used_mib is not None:
            of = f" of {node.mem_total_mib:.0f}" if node.mem_total_mib else ""
            host.append(f"memory peak {node.mem_used_mib:.0f}{of} MiB")
        parts.append(", ".join(host))
    return f"over {_duration(summary.elapsed_s)}, " + "; ".join(parts)


# ------------------------------------------------------------------ Slurm TRES


def _from_tres(job: SacctJob) -> AccountingGpu | None:
    steps = [s for s in job.steps if _known(s.gpu_util_max_pct) or _known(s.gpu_mem_max_mib)]
    if not steps:
        return None
    peak_step = max(steps, key=lambda s: _known(s.gpu_util_max_pct) or 0.0)
    util = _known(peak_step.gpu_util_max_pct)
    mem = max((m for s in steps if (m := _known(s.gpu_mem_max_mib)) is not None), default=None)
    gpus = job.alloc_gpus
    tasks = peak_step.ntasks
    facts: Facts = {"gpu.source": "slurm-tres"}
    if gpus:
        facts["gpu.count"] = gpus
    per_gpu = gpus is not None and gpus > 0 and (tasks or 1) == gpus
    if per_gpu:  # each task's reading is its own GPU's
        _put(facts, "gpu.util.max", util)
        _put(facts, "gpu.mem_used.max_mib", mem)
    bound = None
    if util is not None and gpus and (tasks or gpus == 1):
        bound = min(100.0, util * (tasks or 1) / gpus)
    return AccountingGpu(
        source="slurm-tres",
        facts=facts,
        summary=_tres_line(peak_step, util, mem, gpus, per_gpu),
        util_pct=bound,
        util_bound=bound is not None,
    )


def _tres_line(
    step: SacctStep, util: float | None, mem: float | None, gpus: int | None, per_gpu: bool
) -> str:
    each = "per GPU" if per_gpu else "per task, summed over its GPUs"
    parts = [f"{gpus} GPU{'s' if gpus != 1 else ''}"] if gpus is not None else []
    if util is not None:
        last = _known(step.gpu_util_ave_pct)
        at_end = f", {last:.0f} % at the last reading" if last is not None else ""
        parts.append(f"utilization peak {util:.0f} % ({each}, step {step.step_id}){at_end}")
    if mem is not None:
        parts.append(f"memory peak {mem:.0f} MiB ({each})")
    parts.append("no mean over time: Slurm keeps peaks and last readings only")
    return "; ".join(parts)


def _known(value: float | None) -> float | None:
    return None if value is None or value >= _UNSET else value


# ------------------------------------------------------------------ helpers


def _put(facts: Facts, name: str, value: float | None) -> None:
    if value is not None:
        facts[name] = value


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds >= 7200:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 120:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"
