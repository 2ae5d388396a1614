"""Parse ``squeue --json``: the jobs slurmctld holds now (queued, running, recently ended).

Slurm 22.05 (openapi v0.0.38) prints every job and ignores squeue's filters in JSON mode, so
callers filter by user here. Numbers are plain in 22.05 and ``{"set", "infinite",
"number"}`` objects in later versions; ``job_state`` is a string in 22.05 and a list later.
``time_limit`` is in minutes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuneadvisor.numbers import is_finite_number
from tuneadvisor.slurm.states import ACTIVE
from tuneadvisor.slurm.units import NO_VAL32


class SqueueError(ValueError):
    """The text is not ``squeue --json`` output."""


@dataclass(frozen=True)
class QueuedJob:
    job_id: str
    name: str | None
    user: str | None
    state: str | None
    reason: str | None
    partition: str | None
    time_limit_s: int | None  # None: unlimited
    submit_time: int | None  # epoch seconds
    start_time: int | None

    @property
    def active(self) -> bool:
        """Queued or running (squeue also lists jobs that ended minutes ago)."""
        return self.state in ACTIVE


def _number(value: Any) -> int | None:
    if isinstance(value, Mapping):
        if value.get("infinite") or not value.get("set", True):
            return None
        value = value.get("number")
    if not is_finite_number(value):  # not a number, NaN, infinite or beyond any real one
        return None
    return None if value >= NO_VAL32 else int(value)


def _text(value: Any) -> str | None:
    if isinstance(value, list):
        value = value[0] if value else None
    return value if isinstance(value, str) and value else None


def _job(raw: Mapping[str, Any]) -> QueuedJob:
    job_id = _number(raw.get("job_id"))
    if job_id is None:
        raise SqueueError("a job without job_id")
    array_job, task = _number(raw.get("array_job_id")), _number(raw.get("array_task_id"))
    limit = _number(raw.get("time_limit"))
    reason = _text(raw.get("state_reason"))
    return QueuedJob(
        job_id=f"{array_job}_{task}" if array_job and task is not None else str(job_id),
        name=_text(raw.get("name")),
        user=_text(raw.get("user_name")),
        state=_text(raw.get("job_state")),
        reason=None if reason == "None" else reason,
        partition=_text(raw.get("partition")),
        time_limit_s=None if limit is None else limit * 60,
        submit_time=_number(raw.get("submit_time")),
        start_time=_number(raw.get("start_time")),
    )


def parse_squeue_json(text: str) -> tuple[QueuedJob, ...]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SqueueError(f"not JSON: {exc}") from None
    except (RecursionError, ValueError) as exc:  # nested too deep, huge integers
        raise SqueueError(f"not readable: {str(exc).split(':')[0]}") from None
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, list):
        raise SqueueError("no 'jobs' list: not squeue --json output")
    return tuple(_job(raw) for raw in jobs if isinstance(raw, Mapping))
