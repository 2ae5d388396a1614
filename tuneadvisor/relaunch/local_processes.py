"""How many processes a run here may start: a report (a file) must not decide that alone.

A run here starts its tasks on this machine, each with its DataLoader workers. A report
advising 200 tasks, sized for a cluster, would start 200 training processes on a laptop (up
to a million passed the count's own bound: a fork bomb by file). So a run here starts at
most ``LOCAL_PROCESSES_PER_CORE`` processes per core of this machine (never fewer than
``MIN_LOCAL_PROCESSES``) unless the command line gives the numbers itself (``--ntasks``,
``--num-workers``). ``--submit`` goes to sbatch, which bounds it by the cluster's nodes.
"""

from __future__ import annotations

from tuneadvisor.errors import InputError
from tuneadvisor.runrecord.settings import Settings

__all__ = ["LOCAL_PROCESSES_PER_CORE", "MIN_LOCAL_PROCESSES", "check_local_processes"]

LOCAL_PROCESSES_PER_CORE = 4
MIN_LOCAL_PROCESSES = 32  # a two-core laptop still runs the bundled DDP example with workers


def _workers(settings: Settings) -> int:
    workers = settings.knobs.get("num_workers")
    return workers if isinstance(workers, int) and not isinstance(workers, bool) else 0


def check_local_processes(
    settings: Settings,
    cores: int,
    source: str | None,
    *,
    tasks_given: bool,
    workers_given: bool,
) -> None:
    """InputError naming ``source`` (the report, or None for the inputs' advice) when these
    settings would start more processes here than this machine's ``cores`` allow, and the
    command line did not ask for them: every factor above one (tasks, workers) given there
    is the user's word."""
    workers = _workers(settings)
    processes = settings.ntasks * (1 + workers)
    most = max(MIN_LOCAL_PROCESSES, LOCAL_PROCESSES_PER_CORE * cores)
    if processes <= most:
        return
    if (settings.ntasks == 1 or tasks_given) and (workers == 0 or workers_given):
        return
    asked = f"{settings.ntasks:,} task{'s' if settings.ntasks != 1 else ''}"
    if workers:
        asked += f" x (1 + {workers:,} DataLoader workers)"
    raise InputError(
        source,
        f"{asked} would start {processes:,} processes here, and this machine "
        f"has {cores} core{'s' if cores != 1 else ''}: a run here starts at most {most} "
        "unless the command line asks for more (--ntasks, --num-workers), or --submit it",
    )
