"""What ``sbatch --test-only`` says: when and where the scheduler would start a script.

sbatch prints one line on stderr (nothing on stdout), in Slurm's own words since 17.11::

    sbatch: Job 1941 to start at 2026-12-06T10:19:44 using 1 processors on nodes vm in
      partition debug   (one line)

Slurm 17.02 and before leave out ``in partition P``; a heterogeneous job says ``on HOSTS``
without ``nodes`` (and a ``Preempts:`` line may follow). The time is written by
``slurm_make_time_str``, so its form follows ``SLURM_TIME_FORMAT``: the client asks with
``standard`` (ISO 8601, the default), and any other form (``relative`` prints ``10:19:44``
or ``Tomorr 10:19``) is refused here rather than guessed at. The time is the cluster's
local time, without a zone, as sbatch printed it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

__all__ = ["WillRun", "WillRunError", "parse_will_run"]

# Matched from the line's start (sbatch's own prefix, "sbatch: ", or none), so the long node
# list costs one pass.
_LINE = re.compile(
    r"[ \t]{0,16}(?:[a-z]{1,16}: )?Job ([0-9]{1,12}) to start at (\S{1,64}) "
    r"using ([0-9]{1,9}) processors on (?:nodes )?(\S{1,1024})(?: in partition (\S{1,256}))?"
)
_ISO = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}")


class WillRunError(ValueError):
    """sbatch said when, in a form that is not read here."""


@dataclass(frozen=True)
class WillRun:
    job_id: int  # the id it would have had (none is taken)
    start: datetime  # naive: the cluster's local time
    processors: int
    nodes: str
    partition: str | None  # None where sbatch does not say (17.02 and before)


def parse_will_run(said: str) -> WillRun | None:
    """The last start line of sbatch's stderr; None where it printed none. A start line
    whose time is not an ISO 8601 date and time is a ``WillRunError`` naming it."""
    found = [m for line in said.splitlines() if (m := _LINE.match(line)) is not None]
    if not found:
        return None
    match = found[-1]
    text = match[2]
    if not _ISO.fullmatch(text):
        raise WillRunError(
            f"sbatch gave the start as {text!r}, not a date and time (SLURM_TIME_FORMAT "
            "other than standard?)"
        )
    try:
        start = datetime.fromisoformat(text)
    except ValueError:
        raise WillRunError(f"sbatch gave the start as {text!r}, not a real date") from None
    return WillRun(int(match[1]), start, int(match[3]), match[4], match[5])  # [0-9] only
