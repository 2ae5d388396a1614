"""Checking that the source file found on disk is the source the profile recorded.

Line numbers join a profile to its source. When the file found here differs from the one
that ran (the ``@profile`` line removed, an edited script, another revision), every line
shifts and time lands on the wrong line. A text table carries each line's own text, so it is
compared line by line and, when the file is only shifted, matched by content; a ``.lprof``
carries no text, so only its function's ``def`` line and line range can be checked.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cached_property
from pathlib import Path

from tuneadvisor.profile.model import FunctionTiming
from tuneadvisor.records import record

# Share of the compared lines that must match under one offset to trust it.
MATCH_SHARE = 0.9


@record
class Alignment:
    """Where the profile's line ``n`` is in the file found: ``n + offset``.

    ``offset`` None: the file cannot be matched; use the profile's own text.
    """

    offset: int | None
    note: str | None = None


SAME = Alignment(0)


class SourceLines:
    """One file found on disk, with the indexes a mismatch needs, built once per file (a
    profile has many functions in one file, and each may need them)."""

    def __init__(self, path: Path, lines: list[str]) -> None:
        self.path = path
        self.lines = lines

    @cached_property
    def where(self) -> dict[str, list[int]]:
        """Each stripped line text -> the line numbers it stands at."""
        found: dict[str, list[int]] = {}
        for index, line in enumerate(self.lines, start=1):
            found.setdefault(line.strip(), []).append(index)
        return found

    @cached_property
    def _defs(self) -> dict[str, list[int]]:
        """Each function name -> the lines of its ``def``s."""
        found: dict[str, list[int]] = {}
        for index, line in enumerate(self.lines, start=1):
            match = _DEF.match(line)
            if match:
                found.setdefault(match[2], []).append(index)
        return found

    def defs_of(self, name: str) -> list[int]:
        return self._defs.get(name, [])


def align(func: FunctionTiming, source: SourceLines) -> Alignment:
    """How ``func``'s recorded line numbers map onto the file found."""
    if func.embedded_source:
        return _align_by_text(func, source)
    return _align_by_def(func, source)


def _shift_words(offset: int) -> str:
    lines = "line" if abs(offset) == 1 else "lines"
    where = "down" if offset > 0 else "up"
    return f"{abs(offset)} {lines} {where}"


def _align_by_text(func: FunctionTiming, source: SourceLines) -> Alignment:
    name, file_lines = source.path.name, source.lines
    recorded = {
        ln.lineno: func.embedded_source[ln.lineno].strip()
        for ln in func.lines
        if func.embedded_source.get(ln.lineno, "").strip()
    }
    if not recorded:
        return SAME

    def disk(lineno: int) -> str | None:
        return file_lines[lineno - 1].strip() if 0 < lineno <= len(file_lines) else None

    if all(disk(n) == text for n, text in recorded.items()):
        return SAME
    votes: Counter[int] = Counter()
    for n, text in recorded.items():
        votes.update({found - n for found in source.where.get(text, ())})
    best = max(votes.items(), key=lambda kv: (kv[1], -abs(kv[0])), default=None)
    if best is not None and best[0] != 0 and best[1] >= MATCH_SHARE * len(recorded):
        offset = best[0]
        hint = " (an @profile line?)" if abs(offset) == 1 else ""
        return Alignment(
            offset,
            f"{name}: the file here is shifted by {_shift_words(offset)} from the profiled "
            f"source{hint}; lines matched by content",
        )
    return Alignment(
        None,
        f"{name} differs from the source the profile recorded; line kinds come from the "
        "table's own text",
    )


_DEF = re.compile(r"\s*(async\s+)?def\s+(\w+)\s*[(\[]")


def _is_def_of(line: str, name: str) -> bool:
    match = _DEF.match(line)
    return match is not None and match[2] == name


def _is_start_of(line: str, name: str) -> bool:
    """A line a function named ``name`` may start at: its decorator or its ``def``."""
    return line.lstrip().startswith("@") or _is_def_of(line, name)


def _align_by_def(func: FunctionTiming, source: SourceLines) -> Alignment:
    name, file_lines = source.path.name, source.lines
    first = func.first_lineno
    last = max((ln.lineno for ln in func.lines), default=first)
    changed = Alignment(
        0,
        f"{name} has changed since the profile was taken: {func.name}() is not at line "
        f"{first} as recorded, so its line numbers may point at other lines",
    )
    if 0 < first <= len(file_lines) and _is_start_of(file_lines[first - 1], func.name):
        return SAME if last <= len(file_lines) else changed
    defs = source.defs_of(func.name)
    if not defs:
        return changed
    target = min(defs, key=lambda i: (abs(i - first), i))
    # line_profiler records the first decorator's line (co_firstlineno).
    while target > 1 and file_lines[target - 2].lstrip().startswith("@"):
        target -= 1
    offset = target - first
    if last + offset > len(file_lines):
        return changed
    return Alignment(
        offset,
        f"{name}: {func.name}() is {_shift_words(offset)} from where the profile recorded it "
        f"(line {first}); its lines are matched by that shift",
    )
