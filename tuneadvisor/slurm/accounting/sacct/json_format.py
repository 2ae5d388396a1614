"""``sacct --json`` output (Slurm 22.05's dbv0.0.38 and the later schemas)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tuneadvisor.numbers import finite_float
from tuneadvisor.slurm.accounting.sacct.records import (
    SacctError,
    SacctJob,
    SacctStep,
    split_state,
    tres_count,
)
from tuneadvisor.slurm.units import NO_VAL32, gpus_in_tres, to_mib

__all__ = ["parse_sacct_json"]


def parse_sacct_json(text: str) -> tuple[SacctJob, ...]:
    """``sacct --json`` (any ``jobs`` list in the shape Slurm 22.05+ prints)."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        raise SacctError(f"not JSON: {err.msg} at line {err.lineno}") from None
    except RecursionError:
        raise SacctError("not readable: nested too deeply") from None
    except ValueError as err:  # an integer of thousands of digits
        raise SacctError(f"not readable: {str(err).split(':')[0]}") from None
    if not isinstance(document, dict) or not isinstance(document.get("jobs"), list):
        raise SacctError("no 'jobs' list: not the output of sacct --json")
    for position, job in enumerate(document["jobs"]):
        _refuse_other_json(position, job)
    return tuple(_json_job(i, job) for i, job in enumerate(document["jobs"]))


def _refuse_other_json(position: int, job: Any) -> None:
    """squeue and scontrol ``--json`` print a ``jobs`` list too, without accounting."""
    if not isinstance(job, Mapping):
        raise SacctError(f"jobs[{position}] is not an object: not the output of sacct --json")
    if "steps" in job or isinstance(job.get("time"), Mapping):
        return
    if "job_state" in job:
        raise SacctError(
            f"jobs[{position}] has job_state but no steps or time: this is squeue or"
            " scontrol --json, not sacct --json"
        )
    raise SacctError(f"jobs[{position}] has no steps or time: not the output of sacct --json")


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
    return finite_float(value, path, SacctError)


def _json_job(position: int, raw: Any) -> SacctJob:
    job = _J.of(raw, f"jobs[{position}]")
    if job.data.get("job_id") is None:
        raise SacctError(f"{job.path}: no job_id")
    time = job.obj("time")
    alloc = _json_tres(job.obj("tres").array("allocated"))
    req = _json_tres(job.obj("tres").array("requested"))
    # Some sites' records (and jobs that never started) leave tres.allocated empty: the
    # request is then the best account of what the job had, as sacct -P's ReqTRES would be.
    granted = alloc or req
    nodes = job.whole("allocation_nodes") or tres_count(granted, "node")
    cpus = tres_count(alloc, "cpu")
    if cpus is None:
        cpus = tres_count(req, "cpu")
    if cpus is None:
        cpus = job.obj("required").whole("CPUs") or None
    state, detail = split_state(job.obj("state").text("current") or "")
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
        alloc_gpus=gpus_in_tres(granted) if granted else None,
        alloc_mem_mib=granted.get("mem"),
        req_cpus=job.obj("required").whole("CPUs"),
        req_mem_mib=req_mem,
        req_mem_per=per,
        reported_cpu_time_s=_json_cpu(time.obj("total")),
        admin_comment=job.obj("comment").text("administrator") or job.text("admin_comment"),
        steps=tuple(_json_step(job, i, s) for i, s in enumerate(job.array("steps"))),
        lagging=_json_lagging(job, req_mem),
    )


def _json_job_id(job: _J) -> str:
    array = job.obj("array")
    array_job, task = array.whole("job_id"), array.whole("task_id")
    if array_job and task is not None and task < NO_VAL32:
        return f"{array_job}_{task}"
    het = job.obj("het")
    leader, offset = het.whole("job_id"), het.whole("job_offset")
    if leader and offset is not None and offset < NO_VAL32:
        return f"{leader}+{offset}"  # as sacct -P prints a heterogeneous component
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
    usage_max, usage_ave = _json_tres(usage.array("max")), _json_tres(usage.array("average"))
    state, _ = split_state(step.text("state") or "")
    code, signal = _json_exit(step.obj("exit_code"))
    return SacctStep(
        step_id=ident.split(".", 1)[-1],  # newer schemas: "1.batch"
        name=step.obj("step").text("name"),
        state=state,
        exit_code=code,
        exit_signal=signal,
        elapsed_s=step.obj("time").number("elapsed"),
        cpu_time_s=_json_cpu(step.obj("time").obj("total")),
        max_rss_mib=_bytes_to_mib(usage_max.get("mem")),
        total_rss_mib=_bytes_to_mib(_json_tres(usage.array("total")).get("mem")),
        ntasks=step.obj("tasks").whole("count"),
        alloc_cpus=tres_count(_json_tres(step.obj("tres").array("allocated")), "cpu"),
        nodes=step.obj("nodes").whole("count"),
        gpu_util_max_pct=usage_max.get("gres/gpuutil"),
        gpu_util_ave_pct=usage_ave.get("gres/gpuutil"),
        gpu_mem_max_mib=_bytes_to_mib(usage_max.get("gres/gpumem")),
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
