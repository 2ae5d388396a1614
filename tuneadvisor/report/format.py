"""Number formatting and heat bars shared by the text and markdown reports."""

from __future__ import annotations

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


def percent(value: float) -> str:
    return f"{value:.1f}"
