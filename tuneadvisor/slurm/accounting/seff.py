"""Parse the text ``seff JOBID`` prints: Slurm's contribs/seff and the variants sites ship.

What Slurm's seff computes, so the numbers can be read back exactly (contribs/seff/seff; it
has said "Version 2.1" since it joined Slurm in 2015, while its output changed):

- CPU utilized = the steps' user+system CPU time, summed, rounded to whole seconds;
  core-walltime = elapsed x allocated cores; CPU efficiency = utilized / core-walltime.
- Memory utilized, to 24.05: the largest per-task RSS peak of the step with the largest one,
  times that step's task count, printed with "(estimated maximum)" when the step had several
  tasks. From 24.11: the step's TRESUsageInTot (its tasks' peaks summed), never marked
  estimated, followed by a line when one task's peak is far above the average (set aside).
- Memory requested = the allocated memory (from 23.02; before, the requested), printed with
  "(X/node)" or "(X/core)" when the step had several tasks (from 24.11: always). Sizes are
  printed in binary units with two decimals (``316.26 MB`` is 316.26 MiB): values read back
  are rounded.
- "Cores: 1" for one core, else "Nodes: N" and "Cores per node: C" (an integer division).
- Running jobs get a WARNING line (reworded in 24.11); pending jobs get no efficiency lines.
  Slurm's seff prints no time limit and no GPU line.

Sites ship their own seff, read into the same report:

- NeSI: "Cores: 36", "Tasks: 3", "Nodes: 3"; "Job Wall-time: 7.67% 00:01:09 of 00:15:00 time
  limit" (elapsed and limit); "CPU Efficiency:" or "CPU Utilisation: 98.55% 00:01:08 of
  00:01:09 core-walltime"; "Mem Efficiency:" or "Mem Utilisation: 10.84% 111.00 MB of 1.00 GB",
  with "(55.79 GB to 58.00 GB / task)" and "(200.00 GB/task)" for several tasks; "GPU
  Utilisation:  43  %"; "GPU Memory: 2.2% 510.00 MB of 23 GB"; "State: TIMEOUT" without an
  exit code, or "State: ['COMPLETED']" (a list: with several states, the line is not read).
- A framed form (reportseff #41): "#### JOB EFFICIENCY REPORT ####", then each line behind
  "# ", "Wall-clock time:" for "Job Wall-clock time:".
- Others: "Job Wall-time: 51.4% of 01:00:00 time limit", "CPU Efficiency: 18.75% (01:30:00 of
  08:00:00 core-walltime)", "GPU Utilization: 45%", "GPU Memory Utilized: 3.20 GB".

GPU and time-limit lines are read as fields, not facts. Every line not understood is listed in
``SeffReport.unread`` for the caller to report, rather than left out silently.

Facts (absent when seff did not print the line): ``seff.state``, ``seff.exit_code``,
``seff.nodes``, ``seff.cores``, ``seff.cores_per_node``, ``seff.cpu_used_s``,
``seff.cpu_efficiency_pct``, ``seff.core_walltime_s``, ``seff.wall_s``, ``seff.mem_used_mib``,
``seff.mem_used_estimated`` (bool), ``seff.mem_used_node_mib`` (the busiest node's share of
the job's peak, as far as seff tells), ``seff.mem_efficiency_pct``, ``seff.mem_requested_mib``,
``seff.mem_requested_per`` (``"node"``, ``"core"`` or NeSI's ``"task"``), ``seff.final``
(bool: the job has ended, so the numbers are not provisional).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

from tuneadvisor.numbers import finite_float, is_ascii_digits
from tuneadvisor.slurm import units
from tuneadvisor.slurm.states import UNFINISHED
from tuneadvisor.slurm.units import UnitError

FactValue = bool | int | float | str
Facts = dict[str, FactValue]


class SeffError(ValueError):
    """The text is not seff's report. The message says what is wrong, without the file name."""


_PCT = r"(?P<pct>[0-9]+(?:\.[0-9]+)?)\s*%"
_SIZE = r"([0-9]+(?:\.[0-9]+)?)\s*([KMGTP]B)"


def _size(name: str) -> str:
    return rf"(?P<{name}>[0-9]+(?:\.[0-9]+)?)\s*(?P<{name}_unit>[KMGTP]B)"


# A line's text is bounded (a state, a frame) at MAX_FIELD: no seff line is near it.
MAX_FIELD = 4096
_STATE = re.compile(rf"(\S.{{0,{MAX_FIELD}}}?)(?: \(exit code ([0-9]+)\))?")
_STATE_LIST = re.compile(r"\[\s*'([^']+)'\s*\]")  # NeSI: "['OUT_OF_MEMORY']"
# "90.91% of 00:00:11 core-walltime"; NeSI's "98.55% 00:01:08 of 00:01:09 core-walltime";
# other sites' "90.91% (00:00:10 of 00:00:11 core-walltime)"
_CPU_EFF = re.compile(
    _PCT + r"\s+(?:(?:(?P<used>\S+)\s+)?of\s+(?P<cw>\S+)\s+core-walltime"
    r"|\((?:(?P<used2>\S+)\s+of\s+)?(?P<cw2>\S+)\s+core-walltime\))"
)
# "51.4% of 01:00:00 time limit"; NeSI's "7.67% 00:01:09 of 00:15:00 time limit"
_WALL_OF_LIMIT = re.compile(_PCT + r"\s+(?:(?P<wall>\S+)\s+)?of\s+(?P<limit>\S+)\s+time limit")
_PERCENT = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*%")
# "3.20 GB"; NeSI's "2.2%  510.00 MB of 23 GB"
_GPU_MEM = re.compile(rf"(?:{_PCT}\s+)?{_size('used')}(?:\s+of\s+{_size('total')})?")
# Lines of seff's own that carry nothing read here: seff -d's raw record, newer seff's note
# on unbalanced tasks. Every other unknown line is reported as not understood.
_SEFF_ASIDES = ("Slurm data:", "The task which had the largest memory consumption")
_MEM_USED = re.compile(_SIZE + r"( \(estimated maximum\))?")
# "13.16% of 200.00 MB (200.00 MB/node)"; NeSI's "10.84% 111.00 MB of 1.00 GB" and
# "28.4%  170.59 GB (55.79 GB to 58.00 GB / task) of 600.00 GB (200.00 GB/task)"
_MEM_EFF = re.compile(
    rf"{_PCT}\s+(?:{_size('used')}"
    rf"(?:\s+\({_size('task_min')}\s+to\s+{_size('task_max')}\s*/\s*task\))?\s+)?"
    rf"of\s+{_size('req')}(?:\s+\({_size('per')}\s*/\s*(?P<per_what>node|core|task)\))?"
)
_NOT_SEFF = ("Job not found", "Usage: seff", "Invalid job", "slurm_load_jobs error")
# A site's framed form: "#### JOB EFFICIENCY REPORT ####", then "# Job ID:  131042", ...
_BANNER_FRAME = re.compile(rf"#{{2,}}(?:\s.{{0,{MAX_FIELD}}}\s#{{2,}})?")


@dataclass(frozen=True)
class SeffReport:
    """One seff report. Durations in seconds, memory in MiB, efficiencies in percent."""

    job_id: str
    array_job_id: str | None = None  # "123_4"
    cluster: str | None = None
    user: str | None = None
    group: str | None = None
    state: str | None = None  # "COMPLETED", "CANCELLED by 0", ...
    exit_code: int | None = None
    nodes: int | None = None
    cores_per_node: int | None = None
    cores: int | None = None
    tasks: int | None = None  # NeSI's "Tasks: 3"
    cpu_used_s: int | None = None
    cpu_efficiency_pct: float | None = None
    core_walltime_s: int | None = None
    wall_s: int | None = None
    mem_used_mib: float | None = None
    mem_used_estimated: bool = False  # max task RSS x tasks, not a measured total
    mem_used_task_min_mib: float | None = None  # NeSI's "(55.79 GB to 58.00 GB / task)"
    mem_used_task_max_mib: float | None = None
    mem_efficiency_pct: float | None = None
    mem_requested_mib: float | None = None
    mem_requested_per: Literal["node", "core", "task"] | None = None
    mem_requested_per_unit_mib: float | None = None  # the "(X/node)", "(X/core)" or "(X/task)"
    timelimit_s: int | None = None  # sites' "Job Wall-time: 51.4% of 01:00:00 time limit"
    wall_pct_of_limit: float | None = None
    gpu_util_pct: float | None = None  # sites' "GPU Utilization: 45%", NeSI's "43  %"
    gpu_mem_used_mib: float | None = None  # sites' "GPU Memory Utilized: 3.20 GB"
    gpu_mem_total_mib: float | None = None  # NeSI's "GPU Memory: 2.2%  510.00 MB of 23 GB"
    warnings: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()  # 'line N: text' of each line not understood, left out

    def missing_lines(self) -> tuple[str, ...]:
        """seff's usual lines this report lacks (a report pasted in part)."""
        return tuple(line for line, name in _USUAL_LINES if getattr(self, name) in (None, ""))

    @property
    def final(self) -> bool:
        """False while the job runs or waits: seff's numbers are then provisional."""
        return self.state is not None and self.state.split()[0] not in UNFINISHED

    @property
    def mem_used_node_mib(self) -> float | None:
        """The busiest node's share of the peak, as far as seff tells: its figure is the
        job's. Several tasks (the estimate, "(X/node)" or "(X/core)", NeSI's "Tasks: 3"): the
        total over the nodes, or NeSI's largest task x the tasks a node runs. One task (seff
        up to 24.05 prints no estimate and no per-unit size then): it ran on one node, whole."""
        used, nodes = self.mem_used_mib, self.nodes or 1
        if used is None or nodes <= 1 or self.tasks == 1:
            return used
        if self.mem_used_task_max_mib is not None and self.tasks:
            return min(used, self.mem_used_task_max_mib * math.ceil(self.tasks / nodes))
        several = self.mem_used_estimated or self.mem_requested_per is not None
        several = several or (self.tasks or 1) > 1
        return used / nodes if several else used

    def facts(self) -> Facts:
        facts: Facts = {}
        if self.state is not None:
            facts["seff.state"] = self.state.split()[0]
            facts["seff.final"] = self.final
        node = self.mem_used_node_mib
        if node is not None:
            facts["seff.mem_used_estimated"] = self.mem_used_estimated
            facts["seff.mem_used_node_mib"] = node
        for name in _FACT_FIELDS:
            value = getattr(self, name)
            if value is not None:
                facts[f"seff.{name}"] = value
        return facts


_FACT_FIELDS = (
    "exit_code",
    "nodes",
    "cores",
    "cores_per_node",
    "cpu_used_s",
    "cpu_efficiency_pct",
    "core_walltime_s",
    "wall_s",
    "mem_used_mib",
    "mem_efficiency_pct",
    "mem_requested_mib",
    "mem_requested_per",
)


def parse_duration(text: str) -> int:
    """seff's ``[D-]HH:MM:SS`` -> seconds (read as sacct prints durations)."""
    try:
        return round(units.parse_duration(text))
    except UnitError:
        raise SeffError(f"{text.strip()!r} is not a duration like 1-02:03:04") from None


def parse_size_mib(number: str, unit: str) -> float:
    """``("316.26", "MB")`` -> 316.26; seff's KB/MB/GB/TB are binary units."""
    return units.to_mib(float(number), unit.removesuffix("B"))


@dataclass
class _Builder:
    fields: dict[str, object] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)

    def set(self, **values: object) -> None:
        for name, value in values.items():  # every number of the report passes here
            if isinstance(value, int | float) and not isinstance(value, bool):
                finite_float(value, f"{name} {str(value)[:20]}", SeffError)
        self.fields.update(values)


def parse_seff(text: str) -> SeffReport:
    """Parse one seff report. Lines not understood (newer seff versions, site additions) are
    left out and listed in ``unread``, so that the caller can say so."""
    builder = _Builder()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if _BANNER_FRAME.fullmatch(line):
            continue
        line = line.lstrip("#").strip()
        if not line:
            continue
        if line.startswith(_NOT_SEFF):
            raise SeffError(f"seff did not report on a job: {line!r}")
        if line.startswith("WARNING:") or line.startswith("Efficiency not available"):
            builder.warnings.append(line)
            continue
        if line.startswith(_SEFF_ASIDES):
            continue
        key, sep, value = line.partition(":")
        handler = _HANDLERS.get(key.strip())
        if not sep or handler is None:
            builder.unread.append(f"line {number}: {line!r}")
            continue
        if key.strip() == "Job ID" and "job_id" in builder.fields:
            raise SeffError(f"line {number}: a second report; give one seff report per file")
        try:
            if handler(builder, value.strip()) is False:
                builder.unread.append(f"line {number}: {line!r}")
        except SeffError as err:
            raise SeffError(f"line {number} ({key.strip()}): {err}") from None
    return _finish(builder)


# Lines of seff's that carry a verdict: a report pasted without its 'Job ID:' line is read
# when one of these is there (the report then says the id is missing).
_VERDICT_FIELDS = ("state", "mem_used_mib", "mem_efficiency_pct", "cpu_used_s", "wall_s")
# seff's usual lines, by the field each fills: what a pasted part lacks is said.
_USUAL_LINES = (
    ("Job ID", "job_id"),
    ("State", "state"),
    ("CPU Utilized", "cpu_used_s"),
    ("Job Wall-clock time", "wall_s"),
    ("Memory Utilized", "mem_used_mib"),
    ("Memory Efficiency", "mem_requested_mib"),
)


def _finish(builder: _Builder) -> SeffReport:
    if "job_id" not in builder.fields:
        if not any(name in builder.fields for name in _VERDICT_FIELDS):
            raise SeffError("not a seff report: no 'Job ID:' line")
        builder.fields["job_id"] = ""  # pasted in part: read what is there
    fields = cast("dict[str, Any]", builder.fields)  # keys and types set by the handlers below
    report = SeffReport(warnings=tuple(builder.warnings), unread=tuple(builder.unread), **fields)
    report = replace(report, cores=_cores(report))
    return _without_placeholders(_layout(report))


def _without_placeholders(report: SeffReport) -> SeffReport:
    """seff prints 0.00% when its divisor is 0 (an accounting record not yet filled): no data."""
    notes = list(report.warnings)
    if report.core_walltime_s == 0:
        report = replace(report, cpu_efficiency_pct=None)
        notes.append("core-walltime is 0: CPU efficiency unknown")
    if report.mem_requested_mib == 0:
        report = replace(report, mem_requested_mib=None, mem_efficiency_pct=None)
        notes.append("0.00 MB requested (accounting record incomplete): memory efficiency unknown")
    return replace(report, warnings=tuple(notes))


def _cores(report: SeffReport) -> int | None:
    """Exact: core-walltime / wall-clock (seff multiplies them); else nodes x cores per node."""
    if report.core_walltime_s and report.wall_s:
        quotient, rest = divmod(report.core_walltime_s, report.wall_s)
        if not rest:
            return quotient
    if report.cores is None and report.nodes is not None and report.cores_per_node is not None:
        return report.nodes * report.cores_per_node  # seff printed C with %d: may round down
    return report.cores


def _layout(report: SeffReport) -> SeffReport:
    """Nodes and cores per node where "Cores: N" leaves them out: Slurm's seff prints it only
    for one core (so one node); NeSI's prints "Cores: 36" and "Nodes: 3" (12 per node)."""
    cores, nodes = report.cores, report.nodes
    if cores is None or report.cores_per_node is not None:
        return report
    if nodes is None:
        return replace(report, nodes=1, cores_per_node=1) if cores == 1 else report
    return replace(report, cores_per_node=cores // nodes) if cores % nodes == 0 else report


def _matched(match: re.Match[str] | None, value: str, example: str) -> re.Match[str]:
    """``PATTERN.fullmatch(value)``, or the error naming what the value should be like.
    (Called with ``fullmatch`` written out: tests/regex_sites.py reads these patterns as
    tried from the start only.)"""
    if match is None:
        raise SeffError(f"{value!r} is not like {example!r}")
    return match


def _int(value: str, least: int = 0) -> int:
    if not is_ascii_digits(value) or int(value) < least:
        raise SeffError(f"{value!r} is not a whole number of {least} or more")
    return int(value)


def _job_id(b: _Builder, value: str) -> None:
    if not value:
        raise SeffError("empty job id")
    b.set(job_id=value)


def _user_group(b: _Builder, value: str) -> None:
    user, _, group = value.partition("/")
    b.set(user=user or None, group=group or None)


def _state(b: _Builder, value: str) -> bool:
    """Slurm's "COMPLETED (exit code 0)" or "RUNNING"; NeSI's "['COMPLETED']" (a Python list:
    with several states there is no one job state, so the line is not read)."""
    if value.startswith("["):
        listed = _STATE_LIST.fullmatch(value)
        if listed is None:
            return False
        value = listed[1]
    match = _matched(_STATE.fullmatch(value), value, "COMPLETED (exit code 0)")
    b.set(state=match[1], exit_code=int(match[2]) if match[2] else None)
    return True


def _cpu_eff(b: _Builder, value: str) -> None:
    match = _matched(_CPU_EFF.fullmatch(value), value, "90.91% of 00:00:11 core-walltime")
    core_walltime = match["cw"] or match["cw2"]
    b.set(cpu_efficiency_pct=float(match["pct"]), core_walltime_s=parse_duration(core_walltime))
    used = match["used"] or match["used2"]
    if used and "cpu_used_s" not in b.fields:
        b.set(cpu_used_s=parse_duration(used))


def _wall_of_limit(b: _Builder, value: str) -> None:
    match = _matched(_WALL_OF_LIMIT.fullmatch(value), value, "51.4% of 01:00:00 time limit")
    b.set(wall_pct_of_limit=float(match["pct"]), timelimit_s=parse_duration(match["limit"]))
    if match["wall"] and "wall_s" not in b.fields:
        b.set(wall_s=parse_duration(match["wall"]))


def _gpu_util(b: _Builder, value: str) -> bool:
    """Sites print GPU lines in their own forms: a leading percentage is read, else the
    line is reported as not understood (False)."""
    match = _PERCENT.match(value)
    if match is None:
        return False
    b.set(gpu_util_pct=float(match[1]))
    return True


def _gpu_mem(b: _Builder, value: str) -> bool:
    match = _GPU_MEM.fullmatch(value)
    if match is None:
        return False
    b.set(gpu_mem_used_mib=_mib(match, "used"))
    if match["total"]:
        b.set(gpu_mem_total_mib=_mib(match, "total"))
    return True


def _mib(match: re.Match[str], name: str) -> float:
    return parse_size_mib(match[name], match[f"{name}_unit"])


def _wall_clock(b: _Builder, value: str) -> None:
    b.set(wall_s=parse_duration(value))


def _mem_used(b: _Builder, value: str) -> None:
    match = _matched(_MEM_USED.fullmatch(value), value, "316.26 MB (estimated maximum)")
    b.set(mem_used_mib=parse_size_mib(match[1], match[2]), mem_used_estimated=bool(match[3]))


def _mem_eff(b: _Builder, value: str) -> None:
    match = _matched(_MEM_EFF.fullmatch(value), value, "13.16% of 200.00 MB (200.00 MB/node)")
    b.set(
        mem_efficiency_pct=float(match["pct"]),
        mem_requested_mib=_mib(match, "req"),
        mem_requested_per=match["per_what"],
        mem_requested_per_unit_mib=_mib(match, "per") if match["per"] else None,
    )
    if match["used"] and "mem_used_mib" not in b.fields:  # NeSI: used only on this line
        b.set(mem_used_mib=_mib(match, "used"))
    if match["task_min"]:
        b.set(mem_used_task_min_mib=_mib(match, "task_min"))
        b.set(mem_used_task_max_mib=_mib(match, "task_max"))


_HANDLERS: dict[str, Callable[[_Builder, str], bool | None]] = {
    "Job ID": _job_id,
    "Array Job ID": lambda b, v: b.set(array_job_id=v or None),
    "Cluster": lambda b, v: b.set(cluster=v or None),
    "User/Group": _user_group,
    "State": _state,
    "Nodes": lambda b, v: b.set(nodes=_int(v, least=1)),
    "Cores per node": lambda b, v: b.set(cores_per_node=_int(v)),
    "Cores": lambda b, v: b.set(cores=_int(v)),
    "Tasks": lambda b, v: b.set(tasks=_int(v)),
    "CPU Utilized": lambda b, v: b.set(cpu_used_s=parse_duration(v)),
    "CPU Efficiency": _cpu_eff,
    "CPU Utilisation": _cpu_eff,
    "Job Wall-clock time": _wall_clock,
    "Wall-clock time": _wall_clock,
    "Memory Utilized": _mem_used,
    "Memory Efficiency": _mem_eff,
    "Mem Efficiency": _mem_eff,
    "Mem Utilisation": _mem_eff,
    "Job Wall-time": _wall_of_limit,
    "GPU Utilization": _gpu_util,
    "GPU Utilisation": _gpu_util,
    "GPU Utilized": _gpu_util,
    "GPU Memory Utilized": _gpu_mem,
    "GPU Memory Utilised": _gpu_mem,
    "GPU Memory Used": _gpu_mem,
    "GPU Memory": _gpu_mem,
}
