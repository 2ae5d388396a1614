"""Slurm job state names and the groups the readers of Slurm's output sort them into.

Every reader (scontrol, squeue, sacct, seff) and the advisor take their state groups from
here, so "is this job still going?" has one answer. The names are the base states Slurm
prints (``JobState=``, sacct's ``State``, ``job_state`` in JSON), without flags such as
``+`` or ``by 0``.
"""

from __future__ import annotations

__all__ = ["ACTIVE", "ENDED", "UNFINISHED"]

# Queued or running: slurmctld still holds the job and its accounting is not final.
ACTIVE = frozenset(
    {"PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "REQUEUED", "RESIZING"}
)
# Not ended yet: the active states and the transient ones around a step's end. Usage
# numbers read while a job is in one of these are partial.
UNFINISHED = ACTIVE | frozenset({"STOPPED", "SIGNALING", "STAGE_OUT"})
# Ended: the record will not change any more (once accounting has caught up).
ENDED = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "TIMEOUT",
        "REVOKED",
    }
)
