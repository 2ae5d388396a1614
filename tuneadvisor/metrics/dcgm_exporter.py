"""Parse dcgm-exporter's Prometheus text (``curl host:9400/metrics``), one scrape or several.

A line is ``NAME{label="value",...} VALUE [TIMESTAMP_MS]``; ``# HELP`` / ``# TYPE`` and other
``#`` lines are comments. Only ``DCGM_FI_*`` series with a ``gpu`` label are read (a GPU is
its ``UUID`` label, else host and index; a MIG instance adds ``GPU_I_ID``); other series are
ignored. Several scrapes appended to one file read as samples over time: a series seen again
is the next scrape's; a series with a timestamp is placed at that time.

Fields read: DEV_GPU_UTIL utilization (%), DEV_MEM_COPY_UTIL, DEV_FB_USED/FB_TOTAL/FB_FREE
(MiB), DEV_POWER_USAGE (W), DEV_POWER_MGMT_LIMIT, DEV_GPU_TEMP, DEV_SM_CLOCK, DEV_MEM_CLOCK,
and the profiling ratios (0-1, read as %): PROF_SM_ACTIVE, PROF_SM_OCCUPANCY,
PROF_PIPE_TENSOR_ACTIVE, PROF_DRAM_ACTIVE; PROF_PCIE_TX/RX_BYTES and PROF_NVLINK_TX/RX_BYTES
(bytes/s, as MiB/s). DCGM 4's ``*_RATIO`` spellings of the ratios read the same. DCGM's
"blank" values (no data: 2^47 for doubles, ~9.22e18 for integers) and NaN are no data.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from tuneadvisor.metrics.model import GpuSample, MetricsSeries
from tuneadvisor.metrics.plausible import GpuBound
from tuneadvisor.numbers import ascii_int, is_ascii_number

MIB = 1024 * 1024
_FP64_BLANK = 140737488355328.0  # DCGM_FP64_BLANK; larger ones are its other markers
_INT64_BLANK = 9223372036854775792  # DCGM_INT64_BLANK and the markers above it


class DcgmExporterError(ValueError):
    """Not dcgm-exporter text. The message names the line."""


def _same(value: float) -> float:
    return value


def _pct_of_ratio(value: float) -> float:
    return 100.0 * value


def _mib_of_bytes(value: float) -> float:
    return value / MIB


_FIELDS: dict[str, tuple[str, Callable[[float], float]]] = {
    "DEV_GPU_UTIL": ("util_pct", _same),
    "DEV_MEM_COPY_UTIL": ("mem_util_pct", _same),
    "DEV_FB_USED": ("mem_used_mib", _same),
    "DEV_FB_TOTAL": ("mem_total_mib", _same),
    "DEV_FB_FREE": ("_fb_free", _same),
    "DEV_POWER_USAGE": ("power_w", _same),
    "DEV_POWER_MGMT_LIMIT": ("power_limit_w", _same),
    "DEV_GPU_TEMP": ("temp_c", _same),
    "DEV_SM_CLOCK": ("sm_clock_mhz", _same),
    "DEV_MEM_CLOCK": ("mem_clock_mhz", _same),
    "PROF_SM_ACTIVE": ("sm_active_pct", _pct_of_ratio),
    "PROF_SM_OCCUPANCY": ("sm_occupancy_pct", _pct_of_ratio),
    "PROF_PIPE_TENSOR_ACTIVE": ("tensor_active_pct", _pct_of_ratio),
    "PROF_DRAM_ACTIVE": ("dram_active_pct", _pct_of_ratio),
    "PROF_PCIE_TX_BYTES": ("pcie_tx_mib_s", _mib_of_bytes),
    "PROF_PCIE_RX_BYTES": ("pcie_rx_mib_s", _mib_of_bytes),
    "PROF_NVLINK_TX_BYTES": ("nvlink_tx_mib_s", _mib_of_bytes),
    "PROF_NVLINK_RX_BYTES": ("nvlink_rx_mib_s", _mib_of_bytes),
}
# A sample line is read in parts: its name, its {labels} (quoted values with backslash
# escapes, scanned by hand: as one pattern they backtracked), then the value and timestamp.
_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_QUOTE_OR_CLOSE = re.compile(r'["}]')
_QUOTED_STOP = re.compile(r'["\\]')
_VALUE_AND_STAMP = re.compile(r"\s+(?P<value>\S+)(?:\s+(?P<ts>-?[0-9]+))?\s*")
_LABEL_NAME = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_SNIFF = re.compile(r"^(?:# (?:HELP|TYPE) )?DCGM_FI_[A-Z0-9_]+[{\s]", re.MULTILINE)


def sniff(text: str) -> bool:
    """True when dcgm-exporter's series or their HELP/TYPE lines are near the top."""
    return bool(_SNIFF.search(text[:4096]))


class _Line(NamedTuple):
    name: str
    labels: str | None  # between the braces, as written
    value: str
    ts: str | None


def _quoted_end(text: str, pos: int) -> int | None:
    """Past the ``"`` that closes the string opened just before ``pos`` (a backslash quotes
    the next character but a line break); None when it is not closed."""
    while (stop := _QUOTED_STOP.search(text, pos)) is not None:
        at = stop.start()
        if text[at] == '"':
            return at + 1
        if text.startswith("\n", at + 1) or at + 1 >= len(text):
            return None
        pos = at + 2
    return None


def _parse_line(line: str) -> _Line | None:
    """``NAME{LABELS} VALUE [TIMESTAMP]``, as Prometheus' text format writes a sample."""
    name = _NAME.match(line)
    if name is None:
        return None
    pos, labels = name.end(), None
    if line.startswith("{", pos):
        end = pos + 1
        while (stop := _QUOTE_OR_CLOSE.search(line, end)) is not None:
            if line[stop.start()] == "}":
                break
            closed = _quoted_end(line, stop.start() + 1)
            if closed is None:
                return None
            end = closed
        if stop is None:
            return None
        labels, pos = line[pos + 1 : stop.start()], stop.start() + 1
    rest = _VALUE_AND_STAMP.fullmatch(line, pos)
    if rest is None:
        return None
    return _Line(name.group(), labels, rest["value"], rest["ts"])


def _labels(raw: str | None) -> dict[str, str]:
    """``gpu="0",UUID="GPU-..."``: each NAME="VALUE" (blanks around ``=`` allowed), the
    rest skipped. Found from each ``=``: the name just before it, the quoted value after."""
    out: dict[str, str] = {}
    raw = raw or ""
    pos, size = 0, len(raw)
    while (equals := raw.find("=", pos)) >= 0:
        end = equals
        while end > pos and raw[end - 1].isspace():
            end -= 1
        start = end
        while start > pos and raw[start - 1] in _LABEL_NAME:
            start -= 1
        while start < end and raw[start] in "0123456789":  # a name starts with a letter or _
            start += 1
        quote = equals + 1
        while quote < size and raw[quote].isspace():
            quote += 1
        if start == end or not raw.startswith('"', quote):
            pos = equals + 1
            continue
        closed = _quoted_end(raw, quote + 1)
        if closed is None:  # no later value can close either
            break
        value = raw[quote + 1 : closed - 1]
        value = value.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        out[raw[start:end]] = value
        pos = closed
        while pos < size and raw[pos].isspace():
            pos += 1
        pos += raw.startswith(",", pos)
    return out


def _field(name: str) -> tuple[str, Callable[[float], float]] | None:
    bare = name.removeprefix("DCGM_FI_")
    return _FIELDS.get(bare) or _FIELDS.get(bare.removesuffix("_RATIO"))


def _number(raw: str) -> float | None:
    if not is_ascii_number(raw):  # float() reads "٣٤" as 34 and "1_0" as 10 (issue 34)
        return None
    value = float(raw)
    if not math.isfinite(value) or value >= _FP64_BLANK or value >= _INT64_BLANK:
        return None
    return value


_Key = tuple[str, int]  # (device, scrape number or timestamp in ms)


@dataclass
class _Row:
    """One GPU in one scrape: its labels (identity), time and the fields read."""

    labels: dict[str, str]
    t: float | None
    values: dict[str, float] = field(default_factory=dict)


def parse_dcgm_exporter(text: str) -> MetricsSeries:
    seen: dict[tuple[str, str], int] = {}  # (series name, labels) -> times seen
    rows: dict[_Key, _Row] = {}  # insertion order: first seen first
    unlabelled = 0
    bound = GpuBound()
    for number, raw in enumerate(text.lstrip("\ufeff").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _parse_line(line)
        if match is None:
            raise DcgmExporterError(f"line {number}: not a Prometheus sample: {line[:60]!r}")
        name = match.name
        known = _field(name)
        if known is None:
            continue
        labels = _labels(match.labels)
        if "gpu" not in labels:
            unlabelled += 1
            continue
        device = _device_key(labels)
        stamp = match.ts
        moment = None if stamp is None else _stamp_ms(stamp)
        if stamp is not None and moment is None:
            raise DcgmExporterError(
                f"line {number}: the timestamp {stamp[:20]!r}... is not a time in milliseconds"
                if len(stamp) > 20
                else f"line {number}: the timestamp {stamp!r} is not a time in milliseconds"
            )
        if moment is not None:
            key: _Key = (device, moment)
        else:
            series = (name, match.labels or "")
            seen[series] = seen.get(series, 0) + 1
            key = (device, seen[series])
        t = None if moment is None else moment / 1000.0
        row = rows.get(key)
        if row is None:
            if not bound.admit(device):
                continue
            row = rows[key] = _Row(labels, t)
        value = _number(match.value)
        if value is not None:
            row.values[known[0]] = known[1](value)
    if not rows:
        raise DcgmExporterError(
            "no DCGM_FI_* series with a gpu label (curl host:9400/metrics of dcgm-exporter)"
        )
    samples = [_sample(row) for row in rows.values()]
    notes = []
    if all(row.t is None for row in rows.values()):
        notes.append("dcgm-exporter text has no timestamps: scrapes are counted, not timed")
    if unlabelled:
        notes.append(f"{unlabelled} DCGM series without a gpu label skipped")
    if (dropped := bound.note()) is not None:
        notes.append(dropped)
    return MetricsSeries.from_samples(samples, source="dcgm-exporter", notes=notes)


# A timestamp in ms of up to 15 digits (year 33658); a 400-digit one overflowed the division.
_MAX_STAMP_DIGITS = 15


def _stamp_ms(text: str) -> int | None:
    digits = text.removeprefix("-")
    if len(digits) > _MAX_STAMP_DIGITS:
        return None
    value = ascii_int(digits)
    return None if value is None else (-value if text.startswith("-") else value)


def _device_key(labels: dict[str, str]) -> str:
    """The GPU's identity: its UUID, else host and index; a MIG instance adds its id."""
    host = labels.get("Hostname")
    base = labels.get("UUID") or (f"{host}:gpu{labels['gpu']}" if host else f"gpu{labels['gpu']}")
    instance = labels.get("GPU_I_ID")
    return base if not instance else f"{base}/GI{instance}"


def _sample(row: _Row) -> GpuSample:
    values = dict(row.values)
    free = values.pop("_fb_free", None)
    if "mem_total_mib" not in values and free is not None and "mem_used_mib" in values:
        values["mem_total_mib"] = values["mem_used_mib"] + free
    labels = row.labels
    name, profile, index = labels.get("modelName"), labels.get("GPU_I_PROFILE"), labels["gpu"]
    key = _device_key(labels)
    return GpuSample(
        t=row.t,
        index=ascii_int(index),  # not isdigit(): int() refuses "²" (issue 34)
        uuid=None if key == f"gpu{index}" else key,
        name=f"{name} MIG {profile}" if name and profile else name,
        pci_bus_id=labels.get("pci_bus_id"),
        **values,  # type: ignore[arg-type]
    )
