"""``sacct -P`` (``|`` between fields) and ``-p`` output: the header names the columns."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Literal, TypeVar

from tuneadvisor.numbers import finite_float, is_ascii_digits
from tuneadvisor.slurm.accounting.sacct.records import (
    SacctError,
    SacctJob,
    SacctStep,
    split_state,
    tres_count,
)
from tuneadvisor.slurm.units import (
    gpus_in_tres,
    parse_duration,
    parse_size_mib,
    parse_timelimit,
    parse_tres,
)

__all__ = ["parse_sacct_pipe"]

_T = TypeVar("_T")
_JOB_ID = re.compile(r"[0-9]+(?:_[0-9]+|_\[[^]]*\]|\+[0-9]+)?(?:\.\w+)?")


def parse_sacct_pipe(text: str, columns: Sequence[str] | None = None) -> tuple[SacctJob, ...]:
    """``sacct -P`` (``|`` between fields) or ``-p`` (also one at the end of each line).

    ``columns`` is the ``-o`` list for output written with ``-n`` (no header).
    """
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if columns is None:
        if not lines:
            raise SacctError("the file is empty (no sacct output)")
        header_no, header = lines.pop(0)
        if "|" not in header:
            raise SacctError(_not_pipe(header_no, header))
        names = _pipe_fields(header)
    else:
        header_no, names = 0, [c.strip() for c in columns]
    keys = [n.strip().lower() for n in names]
    if "jobid" not in keys and "jobidraw" not in keys:
        if columns is None and _JOB_ID.fullmatch(names[0].strip()):
            raise SacctError(
                f"line {header_no}: a job's record where the header belongs:"
                " print it with sacct -P without -n (--noheader)"
            )
        raise SacctError(
            f"line {header_no or 1}: no JobID or JobIDRaw column in {'|'.join(names)!r}"
        )
    # JobID carries the array form (123_4); Princeton's jobstats asks for JobIDRaw only.
    id_key = "jobid" if "jobid" in keys else "jobidraw"
    rows = [_pipe_row(number, line, keys) for number, line in lines]
    return _group(rows, present=frozenset(keys), id_key=id_key)


def _not_pipe(number: int, line: str) -> str:
    """Why a first line without ``|`` is not ``sacct -P``, naming what it looks like."""
    text = line.strip()
    if text.startswith("JobId=") or " JobId=" in text:
        return f"line {number}: this is scontrol show job output; give sacct -P or sacct --json"
    if text.startswith(("Job ID:", "Job ID :")):
        return f"line {number}: this is seff output; give it with --seff"
    if text.split()[:1] == ["JobID"] or text.startswith("JobIDRaw"):
        return f"line {number}: columns aligned by spaces: print it with sacct -P"
    other = _other_delimiter(text)
    if other is not None:
        return (
            f"line {number}: fields separated by {other!r}, not '|':"
            " print it with sacct -P, without --delimiter"
            + (" or -n (--noheader)" if _JOB_ID.fullmatch(text.split(other)[0]) else "")
        )
    return f"line {number}: no '|' between fields: print it with sacct -P"


def _other_delimiter(line: str) -> str | None:
    """A character that repeats like a separator (sacct --delimiter=X), if one does."""
    counts: dict[str, int] = {}
    for char in line:
        if not (char.isalnum() or char.isspace() or char in _IN_VALUES):
            counts[char] = counts.get(char, 0) + 1
    best = max(counts.items(), key=lambda item: item[1], default=None)
    return best[0] if best is not None and best[1] >= 3 else None


_IN_VALUES = frozenset(":-_./=,+()[]%*")  # found inside sacct's values; not a separator


def _pipe_fields(line: str) -> list[str]:
    fields = line.rstrip("\n").split("|")
    return fields[:-1] if len(fields) > 1 and fields[-1] == "" else fields  # -p: trailing '|'


# Free text that may hold a '|': when it is the last column, the surplus fields are its own
# (jobstats asks for JobName last for this reason; tuneadvisor asks for AdminComment last).
_FREE_TEXT = frozenset({"jobname", "admincomment", "comment", "systemcomment"})


def _pipe_row(number: int, line: str, keys: Sequence[str]) -> dict[str, str]:
    fields = line.rstrip("\n").split("|")
    if len(fields) == len(keys) + 1 and fields[-1] == "":
        fields.pop()  # -p ends every line with '|'; with -P an empty last value is kept
    if len(fields) > len(keys) and keys and keys[-1] in _FREE_TEXT:
        fields[len(keys) - 1 :] = ["|".join(fields[len(keys) - 1 :])]
    if len(fields) != len(keys):
        raise SacctError(
            f"line {number}: {len(fields)} fields where the header has {len(keys)}"
            " (was it printed with -P?)"
        )
    row = dict(zip(keys, fields, strict=True))
    row["_line"] = str(number)
    return row


def _group(
    rows: Iterable[dict[str, str]], present: frozenset[str], id_key: str
) -> tuple[SacctJob, ...]:
    jobs: dict[str, dict[str, str]] = {}
    steps: dict[str, list[SacctStep]] = {}
    for row in rows:
        job_id, dot, step_id = row[id_key].strip().partition(".")
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
        state, _ = split_state(row.get("state", ""))
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
            gpu_util_max_pct=_usage(row, "tresusageinmax", "gres/gpuutil"),
            gpu_util_ave_pct=_usage(row, "tresusageinave", "gres/gpuutil"),
            gpu_mem_max_mib=_usage(row, "tresusageinmax", "gres/gpumem"),
        )
    except ValueError as err:  # SacctError, or a UnitError of a value
        raise SacctError(f"{_at(row, 'step ' + step_id)}: {err}") from None


def _usage(row: dict[str, str], column: str, name: str) -> float | None:
    """One TRES of a usage column (``cpu=00:56:24,...,gres/gpumem=38888M,gres/gpuutil=100``):
    gres/gpumem in MiB (bytes when printed bare, as with --noconvert), others as numbers."""
    for item in row.get(column, "").split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip() == name:
            if name == "gres/gpumem":
                return parse_size_mib(value, "")
            return _float_or_none(value)
    return None


def _optional(parse: Callable[[str], _T], text: str) -> _T | None:
    return parse(text) if text.strip() else None


def _pipe_elapsed(row: dict[str, str]) -> float | None:
    """ElapsedRaw, else Elapsed, else End - Start (jobstats asks for those alone)."""
    if row.get("elapsedraw", "").strip():
        return float(_int_or_none(row["elapsedraw"]) or 0)
    if row.get("elapsed", "").strip():
        return parse_duration(row["elapsed"])
    start, end = _moment(row.get("start", "")), _moment(row.get("end", ""))
    return None if start is None or end is None or end < start else end - start


def _moment(text: str) -> float | None:
    """Start or End as sacct prints it: epoch seconds (SLURM_TIME_FORMAT=%s) or ISO 8601
    local time; None while unknown (``Unknown``, ``None``: not started or still running) and
    for a site's own SLURM_TIME_FORMAT (only a fallback for a missing Elapsed rests on it)."""
    value = text.strip()
    if is_ascii_digits(value):
        return finite_float(value, "a time", SacctError)
    try:
        return datetime.fromisoformat(value).timestamp()
    except (ValueError, OverflowError):
        return None


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
    state, detail = split_state(row.get("state", ""))
    code, signal = _exit(row.get("exitcode", ""))
    alloc = parse_tres(row["alloctres"]) if "alloctres" in row else None
    alloc_cpus = _int_or_none(row.get("alloccpus", row.get("ncpus", "")))
    nodes = _int_or_none(row.get("allocnodes", row.get("nnodes", "")))
    if alloc:
        alloc_cpus = alloc_cpus if alloc_cpus is not None else tres_count(alloc, "cpu")
        nodes = nodes if nodes is not None else tres_count(alloc, "node")
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
        end_time=_epoch(row.get("end", "")),
        alloc_cpus=alloc_cpus,
        alloc_nodes=nodes,
        alloc_gpus=None if alloc is None else gpus_in_tres(alloc),
        alloc_mem_mib=None if alloc is None else alloc.get("mem"),
        req_cpus=_int_or_none(row.get("reqcpus", "")),
        req_mem_mib=req_mem,
        req_mem_per=per,
        reported_cpu_time_s=_optional(parse_duration, row.get("totalcpu", "")),
        admin_comment=row.get("admincomment", "").strip() or None,
        steps=steps,
        lagging=_pipe_lagging(row, present),
    )


def _epoch(text: str) -> int | None:
    moment = _moment(text)
    return None if moment is None else int(moment)


def _pipe_timelimit(row: dict[str, str]) -> int | None:
    raw = row.get("timelimitraw", "").strip()
    if is_ascii_digits(raw):
        return (_int_or_none(raw) or 0) * 60  # minutes
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


def _exit(text: str) -> tuple[int | None, int | None]:
    """``3:0`` -> (3, 0): return code, signal."""
    code, sep, signal = text.strip().partition(":")
    if not code:
        return None, None
    if not is_ascii_digits(code) or (sep and not is_ascii_digits(signal)):
        raise SacctError(f"{text.strip()!r} is not an exit code like 0:0")
    return int(code), (int(signal) if sep else None)


def _float_or_none(text: str) -> float | None:
    value = text.strip()
    if not value:
        return None
    return finite_float(value, repr(value), SacctError)


def _int_or_none(text: str) -> int | None:
    value = text.strip()
    if not value:
        return None
    if not is_ascii_digits(value):
        raise SacctError(f"{value!r} is not a whole number")
    finite_float(value, "a whole number", SacctError)  # arithmetic meets it as a float
    return int(value)
