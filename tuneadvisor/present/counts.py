"""A count with its noun, singular or plural as the count says ("1 round", "2 rounds"): the
text never contradicts the number it shows (issue 24, point 12)."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``; ``plural`` where adding an s is wrong ("process" ->
    "processes")."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
