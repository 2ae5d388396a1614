"""The `jobs` table: one line per job, columns as wide as their widest cell. GPU: the GPUs'
mean utilization from jobstats' summary, or "<=N%" from Slurm's GPU TRES (a bound from the
peak: Slurm keeps no mean), or "-" where the accounting has neither."""

from __future__ import annotations

import math
from collections.abc import Sequence

from tuneadvisor.present.terminal_safe import one_line_safe
from tuneadvisor.workspace.jobs import JobRow


def _elapsed(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, secs = divmod(math.floor(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _gpu(row: JobRow) -> str:
    """jobstats' mean ("97%"), or Slurm TRES's upper bound of it ("<=100%"), or "-"."""
    if row.gpu_util_pct is None:
        return "-"
    return ("<=" if row.gpu_util_bound else "") + _pct(row.gpu_util_pct)


def render_rows(rows: Sequence[JobRow]) -> str:
    table = [("JOBID", "NAME", "STATE", "ELAPSED", "CPU", "MEM", "GPU", "TOP FINDING")]
    for r in rows:
        more = f" (+{r.findings - 1})" if r.findings > 1 else ""
        table.append(
            (
                r.job_id,
                one_line_safe(r.name)[:20],  # a job's name is its owner's text
                r.state,
                _elapsed(r.elapsed_s),
                _pct(r.cpu_efficiency_pct),
                _pct(r.mem_efficiency_pct),
                _gpu(r),
                (r.top_finding or "-") + more,
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in table]  # fmt: skip
    return "\n".join(lines) + "\n"
