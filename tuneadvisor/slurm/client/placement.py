"""Where a job runs: its state and nodes from ``scontrol show job -o``, and node lists.

``NodeList`` is a compressed host list (``gpu[01-03,07],login1``); Slurm's own
``scontrol show hostnames LIST`` expands it (one name a line), so the client only calls it
for a list with brackets. ``JobId`` stays the numeric id Slurm's commands take (an array
task has its own: ``JobId=140 ArrayJobId=139 ArrayTaskId=1``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tuneadvisor.slurm.client.scontrol import JobInfo, ScontrolError, job_info, parse_records

_NONE = frozenset({"", "(null)", "None", "N/A"})


@dataclass(frozen=True)
class Placement:
    info: JobInfo  # everything else slurmctld says (state, reason, requests)
    job_id: str  # numeric, for listpids and srun --jobid
    node_list: str | None  # compressed; None while pending
    batch_host: str | None

    @property
    def state(self) -> str | None:
        return self.info.state


def _value(record: Mapping[str, str], key: str) -> str | None:
    value = record.get(key)
    return None if value is None or value in _NONE else value


class JobArrayError(ScontrolError):
    """The id names a job array: one record per task, and no one job to watch."""


def parse_placement(text: str) -> Placement:
    """The one job of ``scontrol show job -o ID``."""
    records = parse_records(text)
    tasks = [
        f"{r['ArrayJobId']}_{r['ArrayTaskId']}"
        + (" (running)" if r.get("JobState") == "RUNNING" else "")
        for r in records
        if r.get("ArrayJobId") and r.get("ArrayTaskId")
    ]
    if len(records) > 1 and len(tasks) == len(records):
        raise JobArrayError(
            f"a job array of {len(tasks)} tasks: give one task, {', '.join(tasks[:6])}"
            + (", ..." if len(tasks) > 6 else "")
        )
    if len(records) != 1:
        raise ScontrolError(f"expected one job record, got {len(records)}")
    record = records[0]
    info = job_info(record)
    return Placement(
        info=info,
        job_id=_value(record, "JobId") or info.job_id,
        node_list=_value(record, "NodeList"),
        batch_host=_value(record, "BatchHost"),
    )


def simple_names(node_list: str) -> tuple[str, ...] | None:
    """``a,b`` without brackets -> its names; None when Slurm must expand it."""
    if "[" in node_list:
        return None
    return tuple(name for name in node_list.split(",") if name)


def parse_hostnames(text: str) -> tuple[str, ...]:
    """``scontrol show hostnames``: one name a line."""
    return tuple(line.strip() for line in text.splitlines() if line.strip())
