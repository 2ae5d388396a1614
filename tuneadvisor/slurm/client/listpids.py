"""Parse ``scontrol listpids JOBID``: the job's processes on this node, as Slurm tracks them.

The table (22.05)::

    PID      JOBID    STEPID   LOCALID GLOBALID
    27686    133      batch    0       0
    27691    133      batch    -       -
    27703    133      0        0       0

One row per process of every step running here (``batch``, ``extern``, ``0``, ...). A row
with a task id (``LOCALID``) is the task itself (what slurmstepd started: the batch script,
``srun``'s program); ``-`` is a process the task started (its children, DataLoader workers).
A step that is starting lists its task as PID -1 (left out). slurmstepd answers from this
node only (no slurmctld call): a job with no step here prints the header alone (and "There
are no steps for job ..." on stderr, exit status 1).
"""

from __future__ import annotations

from dataclasses import dataclass

from tuneadvisor.numbers import ascii_int, is_ascii_digits

_COLUMNS = ("PID", "JOBID", "STEPID")


class ListpidsError(ValueError):
    """The text is not the table ``scontrol listpids`` prints."""


@dataclass(frozen=True)
class StepPid:
    pid: int
    job_id: str
    step: str  # batch, extern, interactive, or the step number ("0")
    local_id: int | None  # None ("-"): started by a task, not a task itself

    @property
    def task(self) -> bool:
        return self.local_id is not None


def _opt_int(text: str) -> int | None:
    return ascii_int(text)


def parse_listpids(text: str) -> tuple[StepPid, ...]:
    """The rows, in Slurm's order; an empty tuple for the header alone."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    if not lines:
        return ()
    header = lines[0]
    if tuple(header[:3]) != _COLUMNS:
        raise ListpidsError(f"no PID JOBID STEPID header: {' '.join(header)[:60]!r}")
    local = header.index("LOCALID") if "LOCALID" in header else None
    rows = []
    for number, cells in enumerate(lines[1:], start=2):
        if len(cells) < 3 or not is_ascii_digits(cells[0].lstrip("-")):
            raise ListpidsError(f"line {number}: not a PID row: {' '.join(cells)[:60]!r}")
        if int(cells[0]) <= 0:
            continue  # a step whose task has not started yet prints PID -1
        rows.append(
            StepPid(
                pid=int(cells[0]),
                job_id=cells[1],
                step=cells[2],
                local_id=_opt_int(cells[local]) if local is not None and local < len(cells) else 0,
            )
        )
    return tuple(rows)
