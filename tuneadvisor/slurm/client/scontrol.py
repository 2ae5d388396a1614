"""Parse ``scontrol show job -o`` (one record per line, as ``show node -o`` and others print).

Each record is ``Key=Value`` pairs separated by spaces; a value may itself hold spaces
(``OS=Linux 6.1 #1 SMP``) or ``=`` (``TRES=cpu=1,mem=200M``), so a new key starts only at a
space followed by a name and ``=``. Sizes are MiB unless suffixed (``200M``, ``4G``);
``TimeLimit`` is ``[D-]HH:MM:SS`` or ``UNLIMITED``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from tuneadvisor.numbers import ascii_int, is_ascii_digits
from tuneadvisor.slurm.states import ACTIVE
from tuneadvisor.slurm.units import (
    UnitError,
    gpus_in_gres,
    parse_size_mib,
    parse_timelimit,
    parse_tres,
)

# A key: at the line's start or after a blank (the lookbehind, not ``\s+`` before it: a
# search then never re-reads a run of blanks or of key characters from inside it).
_KEY = re.compile(r"(?<!\S)([A-Za-z][A-Za-z0-9_:/]*)=")
_NO_VALUES = frozenset({"", "(null)", "N/A", "None", "Unknown"})


class ScontrolError(ValueError):
    """The text is not what ``scontrol show ... -o`` prints."""


def parse_records(text: str) -> list[dict[str, str]]:
    """One dict per non-empty line; keys as scontrol spells them (``CPUs/Task``)."""
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        matches = list(_KEY.finditer(line))
        if not matches or line[: matches[0].start()].strip():
            raise ScontrolError(f"line {number}: not Key=Value pairs: {line.strip()[:60]!r}")
        record: dict[str, str] = {}
        for this, following in zip(matches, [*matches[1:], None], strict=True):
            end = following.start() if following is not None else len(line)
            record[this.group(1)] = line[this.end() : end].strip()
        records.append(record)
    return records


def _value(record: Mapping[str, str], key: str) -> str | None:
    value = record.get(key)
    return None if value is None or value in _NO_VALUES else value


def _int(record: Mapping[str, str], key: str) -> int | None:
    value = _value(record, key)
    return None if value is None else ascii_int(value)


def _minimum(record: Mapping[str, str], key: str) -> int | None:
    """A count, or the minimum of a range (``NumNodes=1-2`` while pending)."""
    return ascii_int((_value(record, key) or "").split("-")[0])


def _mib(record: Mapping[str, str], key: str) -> float | None:
    value = _value(record, key)
    try:
        return None if value is None else parse_size_mib(value, "M")
    except UnitError:
        return None


@dataclass(frozen=True)
class JobInfo:
    """One job as slurmctld knows it (until MinJobAge after its end)."""

    job_id: str
    name: str | None
    state: str | None  # COMPLETED, RUNNING, PENDING, TIMEOUT, ...
    reason: str | None
    user: str | None
    partition: str | None
    time_limit_s: int | None  # None: unlimited or unknown
    run_time_s: int | None
    cpus_per_task: int | None  # CPUs/Task: 1 for a --cpus-per-gpu job, whatever it has
    num_cpus: int | None
    num_tasks: int | None
    num_nodes: int | None  # the minimum
    mem_per_node_mib: float | None
    mem_per_cpu_mib: float | None
    gpus: int  # from TRES (allocated when running or done, else requested)
    cpus_per_gpu: int | None  # CpusPerTres=gres:gpu:N (22.05) or gres/gpu:N
    exit_code: str | None
    command: str | None  # the submitted file, or None for --wrap jobs
    work_dir: str | None
    std_out: str | None
    std_err: str | None = None  # the same file as std_out unless --error named another

    @property
    def active(self) -> bool:
        """Still queued or running: accounting is not final."""
        return self.state in ACTIVE


def _time(record: Mapping[str, str], key: str) -> int | None:
    value = _value(record, key)
    try:
        return None if value is None else parse_timelimit(value)
    except UnitError:
        return None


def _cpus_per_gpu(value: str | None) -> int | None:
    """``gres:gpu:2`` (22.05) or ``gres/gpu:2``, among other TRES, comma-separated."""
    for item in (value or "").split(","):
        match = re.fullmatch(r"gres[:/]gpu(?::[^:,]+)?:([0-9]+)", item.strip())
        if match:
            return int(match[1])
    return None


def job_info(record: Mapping[str, str]) -> JobInfo:
    job_id = _value(record, "JobId")
    if job_id is None:
        raise ScontrolError("no JobId= in the scontrol record")
    array_job, task = _value(record, "ArrayJobId"), _value(record, "ArrayTaskId")
    if array_job and task and is_ascii_digits(task):
        job_id = f"{array_job}_{task}"
    tres = parse_tres(_value(record, "TRES") or "")
    gpus = int(tres.get("gres/gpu", 0)) or gpus_in_gres(_value(record, "TresPerNode"))
    state = _value(record, "JobState")
    return JobInfo(
        job_id=job_id,
        name=_value(record, "JobName"),
        state=state.split()[0] if state else None,
        reason=_value(record, "Reason"),
        user=(_value(record, "UserId") or "").split("(")[0] or None,
        partition=_value(record, "Partition"),
        time_limit_s=_time(record, "TimeLimit"),
        run_time_s=_time(record, "RunTime"),
        cpus_per_task=_int(record, "CPUs/Task"),
        num_cpus=_int(record, "NumCPUs"),
        num_tasks=_int(record, "NumTasks"),
        num_nodes=_minimum(record, "NumNodes"),
        mem_per_node_mib=_mib(record, "MinMemoryNode"),
        mem_per_cpu_mib=_mib(record, "MinMemoryCPU"),
        gpus=gpus,
        cpus_per_gpu=_cpus_per_gpu(_value(record, "CpusPerTres")),
        exit_code=_value(record, "ExitCode"),
        command=_value(record, "Command"),
        work_dir=_value(record, "WorkDir"),
        std_out=_value(record, "StdOut"),
        std_err=_value(record, "StdErr"),
    )


def parse_job(text: str) -> JobInfo:
    """The one job of ``scontrol show job -o ID``."""
    records = parse_records(text)
    if len(records) != 1:
        raise ScontrolError(f"expected one job record, got {len(records)}")
    try:
        return job_info(records[0])
    except UnitError as exc:  # a field not in its unit's format (TRES, a time)
        raise ScontrolError(str(exc)) from None
