"""Parse ``sacct --json`` and ``sacct -P`` output, and compute efficiencies exactly as seff does.

seff (contribs/seff/seff, the 2.x script shipped with Slurm 22.05) computes from the same
accounting record:

- CPU utilized: the steps' user+system CPU time summed (seconds and microseconds summed
  separately, microseconds rounded to whole seconds at the end: ``floor(total + 0.5)``);
  core-walltime: elapsed x allocated CPUs (1 when unknown); efficiency: utilized / core-walltime.
- Memory utilized: over the steps, the largest per-task RSS peak (``MaxRSS``); the step that has
  it counts for its task count, so the estimate is ``MaxRSS x NTasks`` of that step.
- Memory requested: ``--mem`` x nodes or ``--mem-per-cpu`` x CPUs (22.05's sacct prints this
  total as ``ReqMem``, from the requested TRES; older ones print the per-node or per-CPU value
  with an ``n``/``c`` suffix).

JSON (Slurm 22.05, openapi dbv0.0.38): the job-level ``time.total`` is 0, so the CPU time is
the sum over steps; ``microseconds`` can exceed 10**6 and is added as microseconds. A step's
``tres.requested.max`` holds usage maxima per task (``mem`` in bytes is MaxRSS) and
``tres.requested.total`` their sum. ``time.limit`` is in minutes. Later schemas (wrapped numbers
``{"set", "infinite", "number"}``, ``required.memory_per_cpu|node``, list states) are read too.

Pipe (``sacct -P`` or ``-p``): the header names the columns, mapped by name; rows are keyed on
``JobID``, or on ``JobIDRaw`` when only that is there (the query Princeton's jobstats runs).
Sizes carry binary
suffixes (``323852K``, ``500M``, ``1.50G``); MaxRSS without a suffix is bytes, ReqMem and TRES
``mem`` without one are MiB; ``16?`` (an overflowing "unknown") reads as unknown. Durations are
``MM:SS.mmm``, ``HH:MM:SS`` or ``D-HH:MM:SS``.

JSON whose ``tres.allocated`` is empty falls back to ``tres.requested`` and ``required.CPUs``.
Text that is not sacct output (``squeue --json``, ``scontrol show job``, seff, another
``--delimiter``, an empty file) is refused with a line saying what it looks like.

Several jobs: ``select_job`` takes the one ``--jobid`` names; a heterogeneous job's components
(``1853+0``, ``1853+1``) are one job, ``1853``, with their allocations summed.

Accounting lags the job's end by seconds: ``SacctJob.missing`` lists what is not filled yet
(state still running, Partition or ReqMem or End empty) so a poller can wait for ``complete``.

Facts (absent when the input lacks them): ``sacct.state``, ``sacct.exit_code``,
``sacct.exit_signal``, ``sacct.elapsed_s``, ``sacct.timelimit_s``, ``sacct.cpu_used_s``,
``sacct.core_walltime_s``, ``sacct.cpu_efficiency_pct``, ``sacct.mem_peak_mib`` (seff's
estimate), ``sacct.mem_peak_node_mib`` (the busiest node's share of it: MaxRSS x the tasks a
node runs), ``sacct.mem_peak_estimated`` (bool: several tasks), ``sacct.mem_efficiency_pct``,
``sacct.alloc_cpus``, ``sacct.alloc_nodes``, ``sacct.alloc_gpus``, ``sacct.alloc_mem_mib``,
``sacct.req_cpus``, ``sacct.req_mem_mib``, ``sacct.max_tasks``, ``sacct.complete`` (bool).
"""

from __future__ import annotations

from tuneadvisor.slurm.accounting.sacct.json_format import parse_sacct_json
from tuneadvisor.slurm.accounting.sacct.pipe_format import parse_sacct_pipe
from tuneadvisor.slurm.accounting.sacct.records import SacctJob

__all__ = ["parse_sacct"]


def parse_sacct(text: str) -> tuple[SacctJob, ...]:
    """``sacct --json`` or ``sacct -P``/``-p`` with a header, told apart by the first character."""
    return parse_sacct_json(text) if text.lstrip().startswith("{") else parse_sacct_pipe(text)
