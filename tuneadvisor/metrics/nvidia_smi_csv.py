"""Parse ``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits] -l N`` logs.

The format, as nvidia-smi writes it: fields separated by ``", "``; a header naming each query
field in its canonical form with the unit in brackets (``utilization.gpu [%]``, ``memory.used
[MiB]``, ``power.draw [W]``, ``clocks.current.sm [MHz]`` even when ``clocks.sm`` was asked
for, ``temperature.gpu`` without a unit); values with their unit (``45 %``, ``1024 MiB``,
``250.00 W``, ``1410 MHz``) unless ``nounits``; ``[N/A]``, ``[Not Supported]`` and other
bracketed words for values the GPU cannot give; one line per GPU per sampling round; the
timestamp as ``2024/01/31 12:34:56.789`` (local time, no zone).

Columns are mapped by header name, in any order and any subset; unknown columns are ignored.
A header may appear again (several runs appended to one log) and may change the columns; a
log written by one ``nvidia-smi --query-gpu ... >> log`` per sample (a loop, ``watch``, cron)
has it before every round: one note says how often, not one per round.
``noheader`` logs need the column list (the ``--query-gpu`` value). A run's last line may be
cut short when the job is killed: it is dropped with a note, anywhere else it is an error.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from tuneadvisor.metrics.model import GpuSample, MetricsSeries
from tuneadvisor.numbers import finite_float, is_ascii_digits

# The banner line of the plain `nvidia-smi` table: "| NVIDIA-SMI 550.144.03   Driver ..."
_PLAIN_TABLE = re.compile(r"\|\s*NVIDIA-SMI [0-9]")


class NvidiaSmiCsvError(ValueError):
    """The text is not an nvidia-smi --query-gpu CSV log. The message names the line."""


# Query names nvidia-smi accepts -> the name it prints in the header.
_ALIASES = {
    "gpu_name": "name",
    "gpu_uuid": "uuid",
    "gpu_bus_id": "pci.bus_id",
    "clocks.sm": "clocks.current.sm",
    "clocks.mem": "clocks.current.memory",
    "clocks.memory": "clocks.current.memory",
    "clocks.gr": "clocks.current.graphics",
    "clocks.graphics": "clocks.current.graphics",
    "temperature.gpu.current": "temperature.gpu",
}

# Header name -> (GpuSample field, unit it may carry, precedence when several map to a field).
_NUMERIC: dict[str, tuple[str, str, int]] = {
    "utilization.gpu": ("util_pct", "%", 0),
    "utilization.memory": ("mem_util_pct", "%", 0),
    "memory.used": ("mem_used_mib", "MiB", 0),
    "memory.total": ("mem_total_mib", "MiB", 0),
    "power.draw": ("power_w", "W", 0),
    "power.draw.instant": ("power_w", "W", 1),
    "power.draw.average": ("power_w", "W", 2),
    "power.limit": ("power_limit_w", "W", 0),
    "enforced.power.limit": ("power_limit_w", "W", 1),
    "temperature.gpu": ("temp_c", "C", 0),
    "clocks.current.sm": ("sm_clock_mhz", "MHz", 0),
    "clocks.current.memory": ("mem_clock_mhz", "MHz", 0),
}
_TEXT = {"name": "name", "uuid": "uuid", "pci.bus_id": "pci_bus_id", "pstate": "pstate"}
_FREE = "memory.free"  # used = total - free when memory.used was not asked for

_HEADER_FIELD = re.compile(r"[a-z][a-z0-9_.]*(?: \[[^\]]*\])?")
_NUMBER = re.compile(r"([-+]?[0-9]+(?:\.[0-9]+)?)\s*([A-Za-z%]*)")
_TIMESTAMP_FORMATS = ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S")
_MAX_NOTED_MESSAGES = 3


def canonical_column(name: str) -> str:
    """``"utilization.gpu [%]"`` -> ``"utilization.gpu"``; query aliases -> header names."""
    bare = name.strip().split(" [", 1)[0].strip().lower()
    return _ALIASES.get(bare, bare)


def parse_nvidia_smi_csv(text: str, columns: Sequence[str] | str | None = None) -> MetricsSeries:
    """Parse a whole log into a ``MetricsSeries`` (source ``"nvidia-smi"``).

    ``columns`` is the ``--query-gpu`` list (``"timestamp,index,utilization.gpu"`` or a
    sequence) for logs written with ``noheader``; a header in the text takes precedence.
    """
    lines = text.removeprefix("\ufeff").splitlines()
    reader = _Reader(lines, _column_list(columns) if columns is not None else None)
    for number, line in enumerate(lines, start=1):
        try:
            reader.feed(number, line)
        except csv.Error as exc:  # a field over the csv module's limit, a NUL
            raise NvidiaSmiCsvError(f"line {number}: {exc}") from None
    if not reader.samples:
        raise NvidiaSmiCsvError(reader.why_empty())
    reader.notes[reader.header_note_at : reader.header_note_at] = reader.header_notes()
    return MetricsSeries.from_samples(reader.samples, source="nvidia-smi", notes=reader.notes)


def _column_list(columns: Sequence[str] | str) -> list[str]:
    names = columns.split(",") if isinstance(columns, str) else list(columns)
    result = [canonical_column(n) for n in names if n.strip()]
    if not result:
        raise NvidiaSmiCsvError("the column list is empty")
    return result


def _split(line: str) -> list[str]:
    return [f.strip() for f in next(csv.reader([line], skipinitialspace=True), [])]


def _is_header(fields: Sequence[str]) -> bool:
    return all(_HEADER_FIELD.fullmatch(f) for f in fields) and any(
        "." in f or canonical_column(f) in _TEXT or f in ("timestamp", "index") for f in fields
    )


def _last_of_run(lines: Sequence[str], number: int) -> bool:
    """True when the next non-blank line is a header or the end: where a killed run stops."""
    for later in lines[number:]:
        if later.strip():
            return _is_header(_split(later))
    return True


@dataclass
class _Reader:
    lines: Sequence[str]
    columns: list[str] | None
    samples: list[GpuSample] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    uuids: dict[int, str] = field(default_factory=dict)  # index -> uuid seen in this log
    filled: set[int] = field(default_factory=set)
    headers: int = 0
    repeated: list[int] = field(default_factory=list)  # lines of the headers after the first
    changed: list[int] = field(default_factory=list)  # ... of those that change the columns
    header_note_at: int = 0  # where in notes the header note goes (where the first repeat was)

    def feed(self, number: int, line: str) -> None:
        if not line.strip():
            return
        fields = _split(line)
        if _is_header(fields):
            self._header(number, fields)
        elif self._is_message(fields):
            self._message(number, line.strip())  # "No devices were found", driver errors
        else:
            self._row(number, fields)

    def _is_message(self, fields: Sequence[str]) -> bool:
        """A line of words where rows have several values (rows start with a timestamp,
        an index or a number; a cut row still does)."""
        single_column = self.columns is not None and len(self.columns) == 1
        return len(fields) == 1 and not single_column and not is_ascii_digits(fields[0][:1])

    def _header(self, number: int, fields: Sequence[str]) -> None:
        self.headers += 1
        columns = [canonical_column(f) for f in fields]
        if self.headers > 1:
            if not self.repeated:
                self.header_note_at = len(self.notes)
            self.repeated.append(number)
            if columns != self.columns:
                self.changed.append(number)
        self.columns = columns

    def header_notes(self) -> list[str]:
        """One note for all the headers after the first: a log appended once a second by a
        new nvidia-smi each time has hundreds, and they say one thing."""
        if not self.repeated:
            return []
        if len(self.repeated) == 1:
            return [f"line {self.repeated[0]}: header repeated (several runs in one log)"]
        where = f"lines {self.repeated[0]} to {self.repeated[-1]}"
        note = (
            f"header repeated {len(self.repeated)} times ({where}): nvidia-smi was started "
            "again and appended to the log each time; its rows are read as one log"
        )
        if self.changed:
            at = ", ".join(str(line) for line in self.changed[:_MAX_NOTED_MESSAGES])
            more = (
                f" and {len(self.changed) - _MAX_NOTED_MESSAGES} more"
                if len(self.changed) > _MAX_NOTED_MESSAGES
                else ""
            )
            label = "line" if len(self.changed) == 1 else "lines"
            note += f"; the columns change at {label} {at}{more}"
        return [note]

    def _message(self, number: int, text: str) -> None:
        self.messages.append(text)
        if len(self.messages) <= _MAX_NOTED_MESSAGES:
            self.notes.append(f"line {number}: skipped nvidia-smi message {text!r}")

    def _row(self, number: int, fields: Sequence[str]) -> None:
        try:
            self.samples.append(self._identify(number, self._sample(number, fields)))
        except NvidiaSmiCsvError:
            if not _last_of_run(self.lines, number):
                raise
            self.notes.append(f"line {number}: dropped a line cut short")

    def _sample(self, number: int, fields: Sequence[str]) -> GpuSample:
        if self.columns is None:
            raise NvidiaSmiCsvError(
                f"line {number}: {len(fields)} values and no header (a log written with "
                "--format=csv,noheader): give its --query-gpu list in the same order, e.g. "
                "--metrics-columns timestamp,index,utilization.gpu,memory.used"
            )
        if len(fields) != len(self.columns):
            named = "the header has" if self.headers else "the column list names"
            raise NvidiaSmiCsvError(
                f"line {number}: {len(fields)} values where {named} {len(self.columns)}"
            )
        try:
            return _build_sample(dict(zip(self.columns, fields, strict=True)))
        except ValueError as err:
            raise NvidiaSmiCsvError(f"line {number}: {err}") from None

    def _identify(self, number: int, sample: GpuSample) -> GpuSample:
        """Keep one GPU one series when a later run of the log did not ask for the uuid."""
        if sample.index is None:
            return sample
        if sample.uuid is not None:
            self.uuids.setdefault(sample.index, sample.uuid)
            return sample
        known = self.uuids.get(sample.index)
        if known is None:
            return sample
        if sample.index not in self.filled:
            self.filled.add(sample.index)
            self.notes.append(f"line {number}: GPU index {sample.index} is {known} seen earlier")
        return replace(sample, uuid=known)

    def why_empty(self) -> str:
        tables = sum(1 for line in self.lines if _PLAIN_TABLE.match(line))
        if tables:
            # `nvidia-smi` with no options prints one snapshot as a box table, `nvidia-smi -l`
            # one after another: no timestamps per GPU row, no series to read
            what = "one snapshot" if tables == 1 else f"{tables} snapshots, nvidia-smi -l"
            return (
                f"it is the plain nvidia-smi table ({what}): "
                "record one with nvidia-smi --query-gpu=timestamp,index,utilization.gpu,"
                "memory.used --format=csv -l 1"
            )
        if self.messages:
            return f"no GPU samples; nvidia-smi said: {self.messages[0]}"
        return "no GPU samples (an empty log, or only a header)"


def _build_sample(row: dict[str, str]) -> GpuSample:
    num = _numbers(row)
    if num.get("mem_used_mib") is None and _FREE in row:
        num["mem_used_mib"] = _used_from_free(row[_FREE], num.get("mem_total_mib"))
    text = {_TEXT[c]: (None if _missing(raw) else raw) for c, raw in row.items() if c in _TEXT}
    return GpuSample(
        t=parse_timestamp(row["timestamp"]) if "timestamp" in row else None,
        index=_parse_index(row["index"]) if "index" in row else None,
        name=text.get("name"),
        uuid=text.get("uuid"),
        pci_bus_id=text.get("pci_bus_id"),
        pstate=text.get("pstate"),
        util_pct=num.get("util_pct"),
        mem_util_pct=num.get("mem_util_pct"),
        mem_used_mib=num.get("mem_used_mib"),
        mem_total_mib=num.get("mem_total_mib"),
        power_w=num.get("power_w"),
        power_limit_w=num.get("power_limit_w"),
        temp_c=num.get("temp_c"),
        sm_clock_mhz=num.get("sm_clock_mhz"),
        mem_clock_mhz=num.get("mem_clock_mhz"),
    )


def _numbers(row: dict[str, str]) -> dict[str, float | None]:
    """Numeric GpuSample fields; of several columns for one field the first-ranked wins."""
    numbers: dict[str, float | None] = {}
    ranks: dict[str, int] = {}
    for column, raw in row.items():
        if column in _NUMERIC:
            attr, unit, rank = _NUMERIC[column]
            if rank < ranks.get(attr, rank + 1):
                numbers[attr] = parse_value(raw, unit, column)
                ranks[attr] = rank
    return numbers


def _missing(raw: str) -> bool:
    """``[N/A]``, ``[Not Supported]``, ``[Unknown Error]``, ``[GPU is lost]``, ..."""
    value = raw.strip()
    return not value or (value.startswith("[") and value.endswith("]")) or value == "N/A"


def parse_value(raw: str, unit: str, column: str = "value") -> float | None:
    """``"250.00 W"`` or ``"250.00"`` -> 250.0; bracketed words -> None."""
    if _missing(raw):
        return None
    match = _NUMBER.fullmatch(raw.strip())
    if match is None:
        raise ValueError(f"{column}: {raw.strip()!r} is not a number")
    number, found = match.groups()
    if found and found != unit:
        raise ValueError(f"{column}: unit {found!r} where nvidia-smi writes {unit!r}")
    return finite_float(number, f"{column}: {number[:20]}")


def parse_timestamp(raw: str) -> float | None:
    """Seconds on the log's own clock (its local wall time, read as if UTC)."""
    if _missing(raw):
        return None
    for fmt in _TIMESTAMP_FORMATS:
        try:
            moment = datetime.strptime(raw.strip(), fmt)
        except ValueError:
            continue
        return moment.replace(tzinfo=UTC).timestamp()
    raise ValueError(f"timestamp: {raw.strip()!r} is not like 2024/01/31 12:34:56.789")


def _parse_index(raw: str) -> int | None:
    if _missing(raw):
        return None
    if not is_ascii_digits(raw.strip()):
        raise ValueError(f"index: {raw.strip()!r} is not a GPU index")
    return int(raw)


def _used_from_free(raw_free: str, total: float | None) -> float | None:
    free = parse_value(raw_free, "MiB", _FREE)
    if free is None or total is None:
        return None
    return total - free
