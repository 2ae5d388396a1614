"""The number cells of a printed line_profiler table, checked against each other within
their printed precision (per-hit = time / hits, % of the total, rows within the total), so a
table that was mangled or misread fails instead of loading wrong numbers."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

# As line_profiler prints them ('%d', '%5.1f', '%g'); bounded, so int() and float() stay cheap.
NUMBER = re.compile(r"[0-9]{1,40}(?:\.[0-9]{0,40})?(?:e[+-]?[0-9]{1,2})?")
LINENO = re.compile(r"[0-9]{1,9}")


class TableError(ValueError):
    """Why a text is not a readable line_profiler table (a short phrase with a line number)."""


@dataclass(frozen=True)
class Cells:
    """The number cells of one timed row, as printed."""

    hits: str
    time: str
    per_hit: str
    percent: str | None  # blank when the function's total time is 0


@dataclass
class Section:
    filename: str
    name: str | None  # None when the source was missing: the summary may name it
    first_lineno: int | None
    unit_s: float
    total: str
    rows: list[tuple[int, Cells | None, str]] = field(default_factory=list)
    has_source: bool = True


Row = tuple[int, Cells | None, str]


# -- numbers and their printed precision ------------------------------------------------


def number(token: str, what: str) -> float:
    if not NUMBER.fullmatch(token):
        raise TableError(f"{what} {token[:20]!r} is not a number")
    value = float(token)
    if not math.isfinite(value):
        raise TableError(f"{what} {token[:20]!r} is out of range")
    return value


def positive(token: str, what: str) -> float:
    value = number(token, what)
    if value <= 0:
        raise TableError(f"{what} {token[:20]!r} is not positive")
    return value


def line_number(token: str, what: str) -> int:
    if not LINENO.fullmatch(token):
        raise TableError(f"{what} {token[:20]!r} is not a line number")
    return int(token)


def hits_of(token: str) -> int:
    # '%d', or '%g' (6 significant digits) when the count is too wide for its column.
    return round(float(token))


def _half_step(token: str) -> float:
    """Half the step of the last printed digit: '12.3' -> 0.05, '2e+06' -> 5e5."""
    mantissa, _, exponent = token.partition("e")
    decimals = len(mantissa.partition(".")[2])
    return float(f"5e{int(exponent or 0) - decimals - 1}")  # inf, not OverflowError, if huge


# '%g' hit counts keep 6 significant digits; floats add their own rounding.
_RELATIVE_SLACK = 1e-5


def check_times(rows: list[Row], section: Section, where: str) -> None:
    """Each row's cells agree with each other and with 'Total time', within print precision.

    Rows may add up to less than the total (lines outside the printed block still count in
    it, e.g. when the source changed after profiling), never to more.
    """
    total_s = number(section.total, f"{where}: total time")
    sum_s = slack_s = 0.0
    for lineno, cells, _ in rows:
        if cells is not None:
            time_s = _check_row(cells, total_s, section, f"{where}, row {lineno}")
            sum_s += time_s
            slack_s += _half_step(cells.time) * section.unit_s
    # '%g' prints a positive total as at least its first digit: 'Total time: 0 s' is exact.
    if total_s > 0:
        slack_s += _half_step(section.total) + total_s * _RELATIVE_SLACK
    if sum_s > total_s + slack_s:
        raise TableError(f"{where}: rows add up to more than 'Total time: {section.total} s'")


def _check_row(cells: Cells, total_s: float, section: Section, where: str) -> float:
    """The row's time in seconds, once its per-hit and percent cells agree with it."""
    hits = number(cells.hits, f"{where}: hits")
    time = number(cells.time, f"{where}: time")
    per_hit = number(cells.per_hit, f"{where}: per-hit time")
    if hits <= 0:
        raise TableError(f"{where}: a timed row with no hits")
    expected = time / hits
    tolerance = (
        _half_step(cells.per_hit) + _half_step(cells.time) / hits + expected * _RELATIVE_SLACK
    )
    if abs(per_hit - expected) > tolerance:
        raise TableError(f"{where}: per-hit {cells.per_hit} is not time / hits")
    time_s = time * section.unit_s
    if cells.percent is not None:
        _check_percent(cells.percent, cells.time, time_s, total_s, section, where)
    return time_s


def _check_percent(
    printed: str, time: str, time_s: float, total_s: float, section: Section, where: str
) -> None:
    percent = number(printed, f"{where}: percent")
    if total_s <= 0:
        raise TableError(f"{where}: a percentage of a zero total time")
    expected = 100 * time_s / total_s
    tolerance = (
        _half_step(printed)
        + 100 * _half_step(time) * section.unit_s / total_s
        + expected * (_half_step(section.total) / total_s + _RELATIVE_SLACK)
    )
    if abs(percent - expected) > tolerance:
        raise TableError(f"{where}: {printed} % does not match its time and the total")
