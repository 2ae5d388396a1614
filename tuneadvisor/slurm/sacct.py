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

Pipe (``sacct -P`` or ``-p``): the header names the columns, mapped by name. Sizes carry binary
suffixes (``323852K``, ``500M``, ``1.50G``); MaxRSS without a suffix is bytes, ReqMem and TRES
``mem`` without one are MiB; ``16?`` (an overflowing "unknown") reads as unknown. Durations are
``MM:SS.mmm``, ``HH:MM:SS`` or ``D-HH:MM:SS``.

Accounting lags the job's end by seconds: ``SacctJob.missing`` lists what is not filled yet
(state still running, Partition or ReqMem or End empty) so a poller can wait for ``complete``.

Facts (absent when the input lacks them): ``sacct.state``, ``sacct.exit_code``,
``sacct.exit_signal``, ``sacct.elapsed_s``, ``sacct.timelimit_s``, ``sacct.cpu_used_s``,
``sacct.core_walltime_s``, ``sacct.cpu_efficiency_pct``, ``sacct.mem_peak_mib`` (seff's
estimate), ``sacct.mem_peak_estimated`` (bool: several tasks), ``sacct.mem_efficiency_pct``,
``sacct.alloc_cpus``, ``sacct.alloc_nodes``, ``sacct.alloc_gpus``, ``sacct.alloc_mem_mib``,
``sacct.req_cpus``, ``sacct.req_mem_mib``, ``sacct.max_tasks``, ``sacct.complete`` (bool).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from tuneadvisor.slurm.states import ENDED
from tuneadvisor.slurm.units import (
    NO_VAL32,
    gpus_in_tres,
    parse_duration,
    parse_size_mib,
    parse_timelimit,
    parse_tres,
    to_mib,
)

FactValue = bool | int | float | str
Facts = dict[str, FactValue]
_T = TypeVar("_T")


class SacctError(ValueError):
    """The text is not sacct output this module reads. The message names the line or field."""


@dataclass(frozen=True)
class SacctStep:
    """One step (``batch``, ``extern``, ``0``, ...). Seconds, MiB, percent."""

    step_id: str
    name: str | None = None
    state: str | None = None
    exit_code: int | None = None
    exit_signal: int | None = None
    elapsed_s: float | None = None
    cpu_time_s: float | None = None  # TotalCPU: user + system of all tasks
    max_rss_mib: float | None = None  # the largest per-task RSS peak (MaxRSS)
    total_rss_mib: float | None = None  # the tasks' peaks summed (JSON only)
    ntasks: int | None = None
    alloc_cpus: int | None = None
    nodes: int | None = None

    @property
    def cpu_efficiency_pct(self) -> float | None:
        return _efficiency(self.cpu_time_s, _product(self.elapsed_s, self.alloc_cpus))

    @property
    def mem_estimate_mib(self) -> float | None:
        """seff's estimate for a step: MaxRSS x tasks (each task may peak as high)."""
        if self.max_rss_mib is None:
            return None
        return self.max_rss_mib * (self.ntasks or 1)


@dataclass(frozen=True)
class SacctJob:
    """One job (an array task is one job: ``123_4``) with its steps."""

    job_id: str
    name: str | None = None
    user: str | None = None
    cluster: str | None = None
    partition: str | None = None  # empty until accounting catches up
    state: str | None = None  # first word: "CANCELLED" of "CANCELLED by 0"
    state_detail: str | None = None  # the rest: "by 0"
    exit_code: int | None = None
    exit_signal: int | None = None
    elapsed_s: float | None = None
    timelimit_s: int | None = None  # None: unknown or unlimited
    end_time: int | None = None  # epoch seconds; 0 / None while running
    alloc_cpus: int | None = None
    alloc_nodes: int | None = None
    alloc_gpus: int | None = None  # None: no TRES in the input; 0: none allocated
    alloc_mem_mib: float | None = None
    req_cpus: int | None = None
    req_mem_mib: float | None = None  # the job's total
    req_mem_per: Literal["node", "cpu"] | None = None
    reported_cpu_time_s: float | None = None  # the job line's own TotalCPU
    steps: tuple[SacctStep, ...] = ()
    lagging: tuple[str, ...] = ()  # fields present in the input but not filled yet

    def step(self, step_id: str) -> SacctStep | None:
        return next((s for s in self.steps if s.step_id == step_id), None)

    @property
    def cpu_time_s(self) -> float | None:
        """The job line's TotalCPU (sacct sums before rounding to ms); else the steps' sum
        (the 22.05 JSON job total is 0)."""
        if self.reported_cpu_time_s:
            return self.reported_cpu_time_s
        times = [s.cpu_time_s for s in self.steps if s.cpu_time_s is not None]
        return math.fsum(times) if times else self.reported_cpu_time_s

    @property
    def cpu_used_s(self) -> int | None:
        """Whole seconds, rounded half up like seff."""
        total = self.cpu_time_s
        return None if total is None else math.floor(total + 0.5)

    @property
    def cores(self) -> int:
        """seff's core count: allocated CPUs, 1 when unknown or 0."""
        return self.alloc_cpus or 1

    @property
    def core_walltime_s(self) -> float | None:
        return _product(self.elapsed_s, self.cores)

    @property
    def cpu_efficiency_pct(self) -> float | None:
        return _efficiency(self.cpu_used_s, self.core_walltime_s)

    @property
    def peak_step(self) -> SacctStep | None:
        """The step with the largest per-task RSS peak (first of equals, like seff)."""
        best: SacctStep | None = None
        for step in self.steps:
            if step.max_rss_mib is not None and (
                best is None or best.max_rss_mib is None or step.max_rss_mib > best.max_rss_mib
            ):
                best = step
        return best

    @property
    def mem_peak_mib(self) -> float | None:
        step = self.peak_step
        return None if step is None else step.mem_estimate_mib

    @property
    def mem_efficiency_pct(self) -> float | None:
        return _efficiency(self.mem_peak_mib, self.req_mem_mib)

    @property
    def missing(self) -> tuple[str, ...]:
        """Why the record is not final yet: empty when accounting has caught up."""
        reasons = list(self.lagging)
        if self.state is None or self.state not in ENDED:
            reasons.insert(0, f"state {self.state or 'unknown'}")
        return tuple(reasons)

    @property
    def complete(self) -> bool:
        return not self.missing

    def facts(self) -> Facts:
        facts: Facts = {"sacct.complete": self.complete}
        peak = self.peak_step
        if peak is not None and peak.max_rss_mib is not None:
            facts["sacct.mem_peak_estimated"] = (peak.ntasks or 1) > 1
        tasks = [s.ntasks for s in self.steps if s.ntasks is not None]
        if tasks:
            facts["sacct.max_tasks"] = max(tasks)
        for name in _FACT_FIELDS:
            value = getattr(self, name)
            if value is not None:
                facts[f"sacct.{name}"] = value
        return facts


_FACT_FIELDS = (
    "state",
    "exit_code",
    "exit_signal",
    "elapsed_s",
    "timelimit_s",
    "cpu_used_s",
    "core_walltime_s",
    "cpu_efficiency_pct",
    "mem_peak_mib",
    "mem_efficiency_pct",
    "alloc_cpus",
    "alloc_nodes",
    "alloc_gpus",
    "alloc_mem_mib",
    "req_cpus",
    "req_mem_mib",
)


def _product(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a * b


def _efficiency(used: float | None, available: float | None) -> float | None:
    """Percent; None (not 0) when the divisor is 0 or unknown: seff's 0.00% means no data."""
    if used is None or not available:
        return None
    return 100.0 * used / available


def select_job(jobs: Sequence[SacctJob], job_id: str | None = None) -> SacctJob:
    """The job asked for, or the only one; a clear error otherwise."""
    if job_id is not None:
        for job in jobs:
            if job.job_id == str(job_id):
                return job
        raise SacctError(f"no job {job_id} in the sacct output ({_ids(jobs)})")
    if len(jobs) != 1:
        raise SacctError(f"{len(jobs)} jobs in the sacct output ({_ids(jobs)}): say which one")
    return jobs[0]


def _ids(jobs: Sequence[SacctJob]) -> str:
    return ", ".join(j.job_id for j in jobs) or "none"


def parse_sacct(text: str) -> tuple[SacctJob, ...]:
    """``sacct --json`` or ``sacct -P``/``-p`` with a header, told apart by the first character."""
    return parse_sacct_json(text) if text.lstrip().startswith("{") else parse_sacct_pipe(text)


# ----------------------------------------------------------------------------- values


def _split_state(text: str) -> tuple[str | None, str | None]:
    words = text.strip().split(None, 1)
    if not words:
        return None, None
    return words[0].rstrip("+"), (words[1] if len(words) > 1 else None)


def _exit(text: str) -> tuple[int | None, int | None]:
    """``3:0`` -> (3, 0): return code, signal."""
    code, sep, signal = text.strip().partition(":")
    if not code:
        return None, None
    if not code.isdigit() or (sep and not signal.isdigit()):
        raise SacctError(f"{text.strip()!r} is not an exit code like 0:0")
    return int(code), (int(signal) if sep else None)


def _int_or_none(text: str) -> int | None:
    value = text.strip()
    if not value:
        return None
    if not value.isdigit():
        raise SacctError(f"{value!r} is not a whole number")
    return int(value)


# ----------------------------------------------------------------------------- pipe


def parse_sacct_pipe(text: str, columns: Sequence[str] | None = None) -> tuple[SacctJob, ...]:
    """``sacct -P`` (``|`` between fields) or ``-p`` (also one at the end of each line).

    ``columns`` is the ``-o`` list for output written with ``-n`` (no header).
    """
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if columns is None:
        if not lines:
            raise SacctError("empty sacct output")
        header_no, header = lines.pop(0)
        if "|" not in header:
            raise SacctError(f"line {header_no}: no '|' between fields: print it with sacct -P")
        names = _pipe_fields(header)
    else:
        header_no, names = 0, [c.strip() for c in columns]
    keys = [n.strip().lower() for n in names]
    if "jobid" not in keys:
        raise SacctError(f"line {header_no or 1}: no JobID column in {'|'.join(names)!r}")
    rows = [_pipe_row(number, line, keys) for number, line in lines]
    return _group(rows, present=frozenset(keys))


def _pipe_fields(line: str) -> list[str]:
    fields = line.rstrip("\n").split("|")
    return fields[:-1] if len(fields) > 1 and fields[-1] == "" else fields  # -p: trailing '|'


def _pipe_row(number: int, line: str, keys: Sequence[str]) -> dict[str, str]:
    fields = line.rstrip("\n").split("|")
    if len(fields) == len(keys) + 1 and fields[-1] == "":
        fields.pop()  # -p ends every line with '|'; with -P an empty last value is kept
    if len(fields) != len(keys):
        raise SacctError(
            f"line {number}: {len(fields)} fields where the header has {len(keys)}"
            " (was it printed with -P?)"
        )
    row = dict(zip(keys, fields, strict=True))
    row["_line"] = str(number)
    return row


def _group(rows: Iterable[dict[str, str]], present: frozenset[str]) -> tuple[SacctJob, ...]:
    jobs: dict[str, dict[str, str]] = {}
    steps: dict[str, list[SacctStep]] = {}
    for row in rows:
        job_id, dot, step_id = row["jobid"].strip().partition(".")
        if not job_id:
            raise SacctError(f"line {row['_line']}: empty JobID")
        steps.setdefault(job_id, [])
        if dot:
            steps[job_id].append(_pipe_step(step_id, row))
        else:
            jobs[job_id] = row
    return tuple(
        _pipe_job(job_id, jobs.get(job_id, {}), tuple(job_steps), present)
        for job_id, job_steps in steps.items()
    )


def _at(row: dict[str, str], what: str) -> str:
    return f"line {row.get('_line', '?')}, {what}"


def _pipe_step(step_id: str, row: dict[str, str]) -> SacctStep:
    try:
        state, _ = _split_state(row.get("state", ""))
        code, signal = _exit(row.get("exitcode", ""))
        return SacctStep(
            step_id=step_id,
            name=row.get("jobname") or None,
            state=state,
            exit_code=code,
            exit_signal=signal,
            elapsed_s=_pipe_elapsed(row),
            cpu_time_s=_optional(parse_duration, row.get("totalcpu", "")),
            max_rss_mib=parse_size_mib(row.get("maxrss", ""), ""),
            ntasks=_int_or_none(row.get("ntasks", "")),
            alloc_cpus=_int_or_none(row.get("alloccpus", row.get("ncpus", ""))),
            nodes=_int_or_none(row.get("nnodes", "")),
        )
    except ValueError as err:  # SacctError, or a UnitError of a value
        raise SacctError(f"{_at(row, 'step ' + step_id)}: {err}") from None


def _optional(parse: Callable[[str], _T], text: str) -> _T | None:
    return parse(text) if text.strip() else None


def _pipe_elapsed(row: dict[str, str]) -> float | None:
    if row.get("elapsedraw", "").strip():
        return float(_int_or_none(row["elapsedraw"]) or 0)
    return _optional(parse_duration, row.get("elapsed", ""))


def _pipe_job(
    job_id: str, row: dict[str, str], steps: tuple[SacctStep, ...], present: frozenset[str]
) -> SacctJob:
    if not row:
        return SacctJob(job_id=job_id, steps=steps, lagging=("job line missing",))
    try:
        return _pipe_job_fields(job_id, row, steps, present)
    except ValueError as err:  # SacctError, or a UnitError of a value
        raise SacctError(f"{_at(row, 'job ' + job_id)}: {err}") from None


def _pipe_job_fields(
    job_id: str, row: dict[str, str], steps: tuple[SacctStep, ...], present: frozenset[str]
) -> SacctJob:
    state, detail = _split_state(row.get("state", ""))
    code, signal = _exit(row.get("exitcode", ""))
    alloc = parse_tres(row["alloctres"]) if "alloctres" in row else None
    alloc_cpus = _int_or_none(row.get("alloccpus", row.get("ncpus", "")))
    nodes = _int_or_none(row.get("allocnodes", row.get("nnodes", "")))
    if alloc:
        alloc_cpus = alloc_cpus if alloc_cpus is not None else _count(alloc, "cpu")
        nodes = nodes if nodes is not None else _count(alloc, "node")
    req_mem, per = _pipe_req_mem(row.get("reqmem", ""), alloc_cpus, nodes)
    return SacctJob(
        job_id=job_id,
        name=row.get("jobname") or None,
        user=row.get("user") or None,
        cluster=row.get("cluster") or None,
        partition=row.get("partition") or None,
        state=state,
        state_detail=detail,
        exit_code=code,
        exit_signal=signal,
        elapsed_s=_pipe_elapsed(row),
        timelimit_s=_pipe_timelimit(row),
        end_time=None,
        alloc_cpus=alloc_cpus,
        alloc_nodes=nodes,
        alloc_gpus=None if alloc is None else gpus_in_tres(alloc),
        alloc_mem_mib=None if alloc is None else alloc.get("mem"),
        req_cpus=_int_or_none(row.get("reqcpus", "")),
        req_mem_mib=req_mem,
        req_mem_per=per,
        reported_cpu_time_s=_optional(parse_duration, row.get("totalcpu", "")),
        steps=steps,
        lagging=_pipe_lagging(row, present),
    )


def _count(tres: Mapping[str, float], name: str) -> int | None:
    return int(tres[name]) if name in tres else None


def _pipe_timelimit(row: dict[str, str]) -> int | None:
    raw = row.get("timelimitraw", "").strip()
    if raw.isdigit():
        return int(raw) * 60  # minutes
    return parse_timelimit(row.get("timelimit", ""))


def _pipe_req_mem(
    text: str, cpus: int | None, nodes: int | None
) -> tuple[float | None, Literal["node", "cpu"] | None]:
    """Total MiB; old sacct's ``4Gn`` / ``4Gc`` are per node / per CPU (seff multiplies)."""
    size = parse_size_mib(text, "M")
    if size is None:
        return None, None
    if text.strip().endswith("c"):
        return size * (cpus or 1), "cpu"
    if text.strip().endswith("n"):
        return size * (nodes or 1), "node"
    return size, None


def _pipe_lagging(row: dict[str, str], present: frozenset[str]) -> tuple[str, ...]:
    lagging = []
    if "partition" in present and not row.get("partition", "").strip():
        lagging.append("partition empty")
    if "reqmem" in present and parse_size_mib(row.get("reqmem", ""), "M") is None:
        lagging.append("ReqMem unknown")
    if "end" in present and row.get("end", "").strip() in ("", "Unknown", "None"):
        lagging.append("end time unknown")
    return tuple(lagging)


# ----------------------------------------------------------------------------- JSON


def parse_sacct_json(text: str) -> tuple[SacctJob, ...]:
    """``sacct --json`` (any ``jobs`` list in the shape Slurm 22.05+ prints)."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        raise SacctError(f"not JSON: {err.msg} at line {err.lineno}") from None
    if not isinstance(document, dict) or not isinstance(document.get("jobs"), list):
        raise SacctError("no 'jobs' list: not the output of sacct --json")
    return tuple(_json_job(i, job) for i, job in enumerate(document["jobs"]))


@dataclass(frozen=True)
class _J:
    """Typed, forgiving access to one JSON object (a missing key is no data); errors name
    the path."""

    data: Mapping[str, Any]
    path: str

    @classmethod
    def of(cls, value: Any, path: str) -> _J:
        return cls(value if isinstance(value, Mapping) else {}, path)

    def obj(self, key: str) -> _J:
        return _J.of(self.data.get(key), f"{self.path}.{key}")

    def array(self, key: str) -> list[Any]:
        value = self.data.get(key)
        return value if isinstance(value, list) else []

    def number(self, key: str) -> float | None:
        return _number(self.data.get(key), f"{self.path}.{key}")

    def whole(self, key: str) -> int | None:
        value = self.number(key)
        return None if value is None else int(value)

    def text(self, key: str) -> str | None:
        value = self.data.get(key)
        if isinstance(value, list):  # newer schemas: state.current is a list
            value = value[0] if value else None
        return value if isinstance(value, str) and value else None


def _number(value: Any, path: str) -> float | None:
    """A plain number, or newer schemas' ``{"set": .., "infinite": .., "number": ..}``."""
    if isinstance(value, Mapping):
        if not value.get("set", True) or value.get("infinite", False):
            return None
        value = value.get("number")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SacctError(f"{path}: {value!r} is not a number")
    return float(value)


def _json_job(position: int, raw: Any) -> SacctJob:
    job = _J.of(raw, f"jobs[{position}]")
    if job.data.get("job_id") is None:
        raise SacctError(f"{job.path}: no job_id")
    time = job.obj("time")
    alloc = _json_tres(job.obj("tres").array("allocated"))
    req = _json_tres(job.obj("tres").array("requested"))
    nodes = job.whole("allocation_nodes") or _count(alloc, "node")
    cpus = _count(alloc, "cpu")
    state, detail = _split_state(job.obj("state").text("current") or "")
    code, signal = _json_exit(job.obj("exit_code"))
    req_mem, per = _json_req_mem(job.obj("required"), req, cpus, nodes)
    return SacctJob(
        job_id=_json_job_id(job),
        name=job.text("name"),
        user=job.text("user"),
        cluster=job.text("cluster"),
        partition=job.text("partition"),
        state=state,
        state_detail=detail,
        exit_code=code,
        exit_signal=signal,
        elapsed_s=time.number("elapsed"),
        timelimit_s=_minutes(time.number("limit")),
        end_time=time.whole("end") or None,
        alloc_cpus=cpus,
        alloc_nodes=nodes,
        alloc_gpus=gpus_in_tres(alloc) if alloc else None,
        alloc_mem_mib=alloc.get("mem"),
        req_cpus=job.obj("required").whole("CPUs"),
        req_mem_mib=req_mem,
        req_mem_per=per,
        reported_cpu_time_s=_json_cpu(time.obj("total")),
        steps=tuple(_json_step(job, i, s) for i, s in enumerate(job.array("steps"))),
        lagging=_json_lagging(job, req_mem),
    )


def _json_job_id(job: _J) -> str:
    array = job.obj("array")
    array_job, task = array.whole("job_id"), array.whole("task_id")
    if array_job and task is not None:
        return f"{array_job}_{task}"
    return str(job.whole("job_id"))


def _minutes(limit: float | None) -> int | None:
    if limit is None or limit >= NO_VAL32:
        return None  # unlimited / not set
    return int(limit) * 60


def _json_cpu(total: _J) -> float | None:
    """``{"seconds": 9, "microseconds": 1089288}``: microseconds may exceed 10**6."""
    seconds, micro = total.number("seconds"), total.number("microseconds")
    if seconds is None and micro is None:
        return None
    return (seconds or 0.0) + (micro or 0.0) / 1e6


def _json_exit(exit_code: _J) -> tuple[int | None, int | None]:
    """Return code and signal; 0.0.38 has ``signal.signal_id``, later ``signal.id``."""
    code = exit_code.whole("return_code")
    signal = exit_code.obj("signal")
    number = signal.whole("signal_id")
    if number is None:
        number = signal.whole("id")
    if number is None and code is not None:
        number = 0  # as sacct -P prints "0:0"
    return code, number


def _json_tres(items: Iterable[Any]) -> dict[str, float]:
    """``[{"type": "gres", "name": "gpu", "count": 1}, ...]`` -> ``{"gres/gpu": 1}``."""
    tres: dict[str, float] = {}
    for raw in items:
        item = _J.of(raw, "tres")
        kind, count = item.text("type"), item.number("count")
        if kind is None or count is None:
            continue
        tres[f"{kind}/{item.text('name')}" if item.text("name") else kind] = count
    return tres


def _json_req_mem(
    required: _J, req_tres: Mapping[str, float], cpus: int | None, nodes: int | None
) -> tuple[float | None, Literal["node", "cpu"] | None]:
    """Requested TRES mem is the total (what ``sacct`` prints as ReqMem)."""
    per_cpu, per_node = required.number("memory_per_cpu"), required.number("memory_per_node")
    per: Literal["node", "cpu"] | None = "cpu" if per_cpu else "node" if per_node else None
    if req_tres.get("mem"):
        return req_tres["mem"], per
    if per_cpu:
        return per_cpu * (cpus or 1), per
    if per_node:
        return per_node * (nodes or 1), per
    # dbv0.0.38 prints req_mem as a 32-bit number: the per-CPU flag (bit 63) is cut off, so
    # per node or per CPU cannot be told apart; the TRES above is normally there instead.
    legacy = required.number("memory")
    return (legacy, None) if legacy else (None, None)


def _json_step(job: _J, position: int, raw: Any) -> SacctStep:
    step = _J.of(raw, f"{job.path}.steps[{position}]")
    name = step.obj("step")
    number = name.data.get("id")  # 22.05: "batch", "extern", or 0, 1, ... for srun steps
    ident = str(number) if isinstance(number, int) else name.text("id")
    ident = ident or name.obj("id").text("step_id") or "?"
    usage = step.obj("tres").obj("requested")  # 22.05: usage maxima live under "requested"
    state, _ = _split_state(step.text("state") or "")
    code, signal = _json_exit(step.obj("exit_code"))
    return SacctStep(
        step_id=ident.split(".", 1)[-1],  # newer schemas: "1.batch"
        name=step.obj("step").text("name"),
        state=state,
        exit_code=code,
        exit_signal=signal,
        elapsed_s=step.obj("time").number("elapsed"),
        cpu_time_s=_json_cpu(step.obj("time").obj("total")),
        max_rss_mib=_bytes_to_mib(_json_tres(usage.array("max")).get("mem")),
        total_rss_mib=_bytes_to_mib(_json_tres(usage.array("total")).get("mem")),
        ntasks=step.obj("tasks").whole("count"),
        alloc_cpus=_count(_json_tres(step.obj("tres").array("allocated")), "cpu"),
        nodes=step.obj("nodes").whole("count"),
    )


def _bytes_to_mib(value: float | None) -> float | None:
    return None if value is None else to_mib(value, "")


def _json_lagging(job: _J, req_mem: float | None) -> tuple[str, ...]:
    lagging = []
    if not job.text("partition"):
        lagging.append("partition empty")
    if req_mem is None:
        lagging.append("requested memory unknown")
    if not job.obj("time").whole("end"):
        lagging.append("end time unknown")
    return tuple(lagging)
