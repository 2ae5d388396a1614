"""Your recent Slurm jobs as rows: state, efficiency and top finding, from one ``sacct -P``
read (and ``squeue --json`` for why queued jobs wait). Findings come from the accounting
alone (no job script is fetched): job states, cores and memory used against what was asked,
elapsed time against the limit, and the GPUs' use where the accounting has it (jobstats'
summary in AdminComment: a mean; Slurm's GPU TRES: an upper bound, from the peak)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tuneadvisor.advisor.engine import evaluate
from tuneadvisor.advisor.evidence import usage_facts
from tuneadvisor.advisor.rules import Rule
from tuneadvisor.numbers import is_ascii_digits
from tuneadvisor.slurm.accounting.as_run import as_run_facts
from tuneadvisor.slurm.accounting.jobstats import JobstatsError
from tuneadvisor.slurm.accounting.sacct.gpu import accounting_gpu
from tuneadvisor.slurm.accounting.sacct.records import SacctJob
from tuneadvisor.slurm.client import SlurmClient
from tuneadvisor.slurm.client.squeue import QueuedJob
from tuneadvisor.slurm.states import ACTIVE, UNFINISHED


@dataclass(frozen=True)
class JobRow:
    job_id: str
    name: str
    state: str
    elapsed_s: float | None
    cpu_efficiency_pct: float | None
    mem_efficiency_pct: float | None
    top_finding: str | None
    findings: int
    gpu_util_pct: float | None = None  # the GPUs' mean utilization ...
    gpu_util_bound: bool = False  # ... or an upper bound of it (Slurm TRES: from the peak)


def job_row(job: SacctJob, queued: QueuedJob | None, rules: Iterable[Rule]) -> JobRow:
    facts: dict[str, object] = {**job.facts(), **as_run_facts(None, job)}
    gpu = None
    if job.state is not None and job.state not in UNFINISHED:
        try:  # a summary that cannot be read leaves the cell empty
            gpu, _ = accounting_gpu(job)
        except JobstatsError:  # one inflating past its bound: not read, the row stays
            gpu = None
    if gpu is not None:
        facts.update(gpu.facts)
    usage_facts(facts)
    findings = evaluate(rules, facts).findings
    state = job.state or "?"
    if queued is not None and queued.state and queued.active:  # ahead of accounting
        state = queued.state + (f" ({queued.reason})" if queued.reason else "")
    return JobRow(
        job_id=job.job_id,
        name=job.name or "",
        state=state,
        elapsed_s=job.elapsed_s,
        # jobstats' figures where the accounting has them (measured per node), else seff's
        cpu_efficiency_pct=_number(facts.get("jobstats.cpu_efficiency_pct"))
        or job.cpu_efficiency_pct,
        mem_efficiency_pct=_number(facts.get("jobstats.mem_efficiency_pct"))
        or job.mem_efficiency_pct,
        top_finding=findings[0].id if findings else None,
        findings=len(findings),
        gpu_util_pct=None if gpu is None else gpu.util_pct,
        gpu_util_bound=gpu is not None and gpu.util_bound,
    )


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def recent_job_rows(
    client: SlurmClient, user: str, since: str, limit: int, rules: Iterable[Rule]
) -> list[JobRow]:
    """The newest ``limit`` jobs of ``user`` since ``since`` (as sacct -S reads it)."""
    newest = sorted(client.recent_jobs(user, since), key=_job_order, reverse=True)[:limit]
    queued = {}
    if any(job.state in ACTIVE for job in newest):  # squeue --json lists every job
        queued = {q.job_id: q for q in client.queue(user)}
    return [job_row(job, queued.get(job.job_id), rules) for job in newest]


def _job_order(job: SacctJob) -> tuple[int, ...]:
    """Job ids as numbers (array tasks after their job): newest last."""
    return tuple(int(part) for part in job.job_id.split("_") if is_ascii_digits(part))
