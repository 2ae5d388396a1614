"""How a report says what it could not read or follow: one "Not read" section in every
format, and "no findings" said only of what was read."""

from __future__ import annotations

from collections.abc import Sequence

NOT_READ_TITLE = "Not read"


def none_found(not_read: Sequence[object]) -> str:
    """What stands for "no findings" when there are none: of the inputs read, where some
    were not."""
    return "none in what was read (see Not read)" if not_read else "none"
