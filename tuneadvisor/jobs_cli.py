"""`tuneadvisor jobs`: your recent Slurm jobs with state, efficiency and top finding, to pick
one to look at (`tuneadvisor report --jobid ID`, `open --jobid ID`).

One ``sacct -P`` read covers them all, and ``squeue --json`` says why queued jobs wait.
Findings come from the accounting alone (no job script is fetched): job states, cores and
memory used against what was asked, elapsed time against the limit.
"""

from __future__ import annotations

import argparse
import getpass
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from tuneadvisor.advisor.engine import evaluate
from tuneadvisor.advisor.gather import usage_facts
from tuneadvisor.advisor.live_job import as_run_facts
from tuneadvisor.advisor.rules import Rule, load_rules, rule_dirs
from tuneadvisor.errors import InputError
from tuneadvisor.slurm.client import SlurmClient
from tuneadvisor.slurm.sacct import SacctJob
from tuneadvisor.slurm.scontrol import ACTIVE_STATES
from tuneadvisor.slurm.squeue import QueuedJob


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


def job_row(job: SacctJob, queued: QueuedJob | None, rules: Iterable[Rule]) -> JobRow:
    facts: dict[str, object] = {**job.facts(), **as_run_facts(None, job)}
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
        cpu_efficiency_pct=job.cpu_efficiency_pct,
        mem_efficiency_pct=job.mem_efficiency_pct,
        top_finding=findings[0].id if findings else None,
        findings=len(findings),
    )


def _elapsed(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, secs = divmod(math.floor(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def render_rows(rows: Sequence[JobRow]) -> str:
    table = [("JOBID", "NAME", "STATE", "ELAPSED", "CPU", "MEM", "TOP FINDING")]
    for r in rows:
        more = f" (+{r.findings - 1})" if r.findings > 1 else ""
        table.append(
            (
                r.job_id,
                r.name[:20],
                r.state,
                _elapsed(r.elapsed_s),
                _pct(r.cpu_efficiency_pct),
                _pct(r.mem_efficiency_pct),
                (r.top_finding or "-") + more,
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in table]  # fmt: skip
    return "\n".join(lines) + "\n"


def run_jobs(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise InputError(None, "jobs: --limit must be at least 1")
    rules = load_rules(rule_dirs(args.rules))
    client = SlurmClient()
    user = args.user or getpass.getuser()
    newest = sorted(client.recent_jobs(user, args.since), key=_job_order, reverse=True)
    newest = newest[: args.limit]
    queued = {}
    if any(job.state in ACTIVE_STATES for job in newest):  # squeue --json lists every job
        queued = {q.job_id: q for q in client.queue(user)}
    rows = [job_row(job, queued.get(job.job_id), rules) for job in newest]
    if args.format == "json":
        print(json.dumps([asdict(r) for r in rows], indent=2))
        return 0
    if not rows:
        print(f"no jobs of {user} since {args.since}")
        return 0
    print(render_rows(rows), end="")
    print("\nlook at one: tuneadvisor report --jobid ID   (or: tuneadvisor open --jobid ID)")
    return 0


def _job_order(job: SacctJob) -> tuple[int, ...]:
    """Job ids as numbers (array tasks after their job): newest last."""
    return tuple(int(part) for part in job.job_id.split("_") if part.isdigit())
