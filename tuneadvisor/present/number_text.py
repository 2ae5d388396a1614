"""How numbers read: seconds, per-hit times, percents, kind shares and heat bars.

The text and markdown reports write seconds as ``seconds`` and ``per_hit`` do; the TUI's
tables write them with a unit (``format_seconds``). Bars and percents are the same everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable

from tuneadvisor.profile.analysis import KindShare

_EIGHTHS = " ▏▎▍▌▋▊▉"


def heat_bar(percent: float, width: int = 10) -> str:
    """A bar of ``width`` cells filled to ``percent``, in eighths of a cell."""
    filled = max(0.0, min(percent, 100.0)) / 100.0 * width
    full = int(filled)
    eighths = round((filled - full) * 8)
    if eighths == 8:
        full, eighths = full + 1, 0
    bar = "█" * full + (_EIGHTHS[eighths] if eighths and full < width else "")
    return bar.ljust(width)


def seconds(value: float) -> str:
    """Seconds with three significant decimals where it matters: 12.3, 0.456, 2.1e-05."""
    if value == 0:
        return "0"
    if value >= 100:
        return f"{value:.1f}"
    if value >= 0.001:
        return f"{value:.4g}"
    return f"{value:.2e}"


def per_hit(value: float) -> str:
    """Per-hit time with a unit a person reads at a glance."""
    if value == 0:
        return "-"
    if value >= 1:
        return f"{value:.3g} s"
    if value >= 1e-3:
        return f"{value * 1e3:.3g} ms"
    return f"{value * 1e6:.3g} µs"


def format_seconds(seconds: float) -> str:
    """12.35 s, 4.20 ms, 35.0 µs: a fixed number of significant digits per unit (the TUI)."""
    if seconds == 0:
        return "0 s"
    if seconds >= 100:
        return f"{seconds:.1f} s"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def percent(value: float) -> str:
    return f"{value:.1f}"


def top_kinds_text(kinds: Iterable[KindShare], limit: int = 3, empty: str = "") -> str:
    """'dataloader 62.0 %, compute 30.1 %': the first ``limit`` kind shares; ``empty`` when
    there are none (the reports leave it blank, the TUI says "no time recorded")."""
    parts = [f"{s.label} {s.percent:.1f} %" for s in list(kinds)[:limit]]
    return ", ".join(parts) if parts else empty


# (unit, its size in seconds, decimals): a column of times is written in the unit of its
# largest value, every cell with the same decimals, so that 7.12e-05, 0.001648 and 55.8 do
# not sit in one column (issue 24, point 16)
_COLUMN_UNITS = (("s", 1.0, 3), ("ms", 1e-3, 3), ("µs", 1e-6, 1))


def column_unit(values: Iterable[float]) -> tuple[str, float, int]:
    """(unit, seconds in one unit, decimals) for a column holding ``values`` (seconds)."""
    largest = max((abs(v) for v in values), default=0.0)
    for unit, size, decimals in _COLUMN_UNITS:
        if largest >= size:
            return unit, size, decimals
    return _COLUMN_UNITS[-1]


def in_unit(value: float, size: float, decimals: int) -> str:
    """``value`` seconds in a column's unit: ``in_unit(0.001648, 1e-3, 3)`` is '1.648'."""
    return f"{value / size:.{decimals}f}"
