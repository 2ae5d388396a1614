"""Parse ``dcgmi dmon -e FIELDS`` output: DCGM's field values per GPU, one row per sample.

As dcgmi prints it: a header ``#Entity   GPUTL  SMACT ...`` naming each field by its short
name, a line of units under it (``ID      W   C``, blank columns where a field has none), then
one row per entity and sampling round (``GPU 0     100    0.557``); ``N/A`` where a field has no
value yet (a profiling field's first sample) or none for that GPU. The header may come again
(another dmon appended to the log) and may change the fields. dmon prints no times: rows are
counted in order (``-d`` milliseconds apart, 1000 unless given), so samples have no ``t``.

Fields read (the rest are ignored, named in a note): 203 GPUTL utilization (%), 204 MCUTL
memory-controller utilization (%), 150 TMPTR temperature, 155 POWER power (W), 100 SMCLK, 101
MMCLK, 250 FBTTL / 252 FBUSD framebuffer (MiB), and the profiling ratios (0-1,
read as %): 1002 SMACT SM activity, 1003 SMOCC SM occupancy, 1004 TENSO tensor pipes, 1005
DRAMA DRAM activity; 1009/1010 PCITX/PCIRX and 1011/1012 NVLTX/NVLRX in bytes/s (as MiB/s).
Rows of other entities (GPU instances ``GI``, ``CI``, NvSwitches) are skipped with a note.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from tuneadvisor.metrics.model import GpuSample, MetricsSeries
from tuneadvisor.metrics.plausible import GpuBound
from tuneadvisor.numbers import is_ascii_number

MIB = 1024 * 1024


class DcgmDmonError(ValueError):
    """Not dcgmi dmon output. The message names the line."""


def _pct_of_ratio(value: float) -> float:
    return 100.0 * value


def _mib_of_bytes(value: float) -> float:
    return value / MIB


def _same(value: float) -> float:
    return value


# short name -> (GpuSample field, conversion)
_FIELDS: dict[str, tuple[str, Callable[[float], float]]] = {
    "GPUTL": ("util_pct", _same),
    "MCUTL": ("mem_util_pct", _same),
    "TMPTR": ("temp_c", _same),
    "POWER": ("power_w", _same),
    "SMCLK": ("sm_clock_mhz", _same),
    "MMCLK": ("mem_clock_mhz", _same),
    "FBTTL": ("mem_total_mib", _same),
    "FBUSD": ("mem_used_mib", _same),
    "SMACT": ("sm_active_pct", _pct_of_ratio),
    "SMOCC": ("sm_occupancy_pct", _pct_of_ratio),
    "TENSO": ("tensor_active_pct", _pct_of_ratio),
    "DRAMA": ("dram_active_pct", _pct_of_ratio),
    "PCITX": ("pcie_tx_mib_s", _mib_of_bytes),
    "PCIRX": ("pcie_rx_mib_s", _mib_of_bytes),
    "NVLTX": ("nvlink_tx_mib_s", _mib_of_bytes),
    "NVLRX": ("nvlink_rx_mib_s", _mib_of_bytes),
}
_HEADER = re.compile(r"^#\s*Entity\b")
# [0-9]{1,9}, not \d+: int() refuses 5,000 Arabic-Indic digits that \d takes (issue 34);
# the values after it are split, not matched (.* after \s+ retried at every space)
_ROW = re.compile(r"^(GPU|GI|CI|VGPU|SW|SWITCH|LINK|CPU|CORE|CX)[ \t]+([0-9]{1,9})(?![0-9])")
_MISSING = {"N/A", "-", "NA"}


def sniff(text: str) -> bool:
    """True when the text's first non-blank line is dmon's ``#Entity`` header."""
    for line in text.lstrip("\ufeff").splitlines():
        if line.strip():
            return bool(_HEADER.match(line.strip()))
    return False


def _values(number: int, columns: list[str], row: list[str]) -> dict[str, float]:
    """One GPU row's values by sample field: blank (``N/A``) and non-finite left out."""
    values: dict[str, float] = {}
    for name, token in zip(columns, row, strict=True):
        if name not in _FIELDS or token in _MISSING:
            continue
        if not is_ascii_number(token):  # float() reads "٣٤" as 34 and "1_0" as 10 (issue 34)
            shown = token if len(token) <= 20 else token[:17] + "..."
            raise DcgmDmonError(f"line {number}: {name} is {shown!r}, not a number")
        number_value = float(token)
        if not math.isfinite(number_value):
            continue
        field, convert = _FIELDS[name]
        values[field] = convert(number_value)
    return values


def parse_dcgmi_dmon(text: str) -> MetricsSeries:
    columns: list[str] | None = None
    samples: list[GpuSample] = []
    ignored: dict[str, None] = {}
    skipped: dict[str, int] = {}
    bad: list[str] = []
    bound = GpuBound()
    for number, raw in enumerate(text.lstrip("\ufeff").splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if _HEADER.match(line):
            columns = line.split()[1:]
            ignored.update((c, None) for c in columns if c not in _FIELDS)
            continue
        if columns is None:
            raise DcgmDmonError(f"line {number}: no #Entity header before it")
        if line.startswith("ID") and not _ROW.match(line):  # the units line
            continue
        row = _ROW.match(line)
        if row is None:
            raise DcgmDmonError(f"line {number}: not a dmon row: {line[:60]!r}")
        kind, index, rest = row.group(1), int(row.group(2)), line[row.end() :].split()
        if kind != "GPU":
            skipped[kind] = skipped.get(kind, 0) + 1
            continue
        if len(rest) != len(columns):
            if number == _last_line(text):
                bad.append(f"line {number}: cut short; dropped")
                continue
            raise DcgmDmonError(
                f"line {number}: {len(rest)} values for {len(columns)} fields ({' '.join(columns)})"
            )
        if not bound.admit(str(index)):
            continue
        samples.append(GpuSample(index=index, **_values(number, columns, rest)))  # type: ignore[arg-type]
    if columns is None:
        raise DcgmDmonError("line 1: no #Entity header (dcgmi dmon -e FIELDS output)")
    if not samples:
        raise DcgmDmonError("no GPU rows (dcgmi dmon prints 'GPU N  values...' per sample)")
    notes = ["dcgmi dmon prints no times: samples are counted, not timed", *bad]
    if (dropped := bound.note()) is not None:
        notes.append(dropped)
    if ignored:
        notes.append(f"fields not read: {', '.join(ignored)}")
    for kind, count in skipped.items():
        notes.append(f"{count} {kind} rows skipped (only whole GPUs are read)")
    return MetricsSeries.from_samples(samples, source="dcgmi-dmon", notes=notes)


def _last_line(text: str) -> int:
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    return len(lines) if not text.endswith("\n") else -1
