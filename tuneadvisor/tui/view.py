"""What the TUI's tables show, computed from the analysis objects (no textual here).

Only presentation: which rows, in which order, after the user's sort, kind filter and
search; and how numbers are written. All numbers come from `tuneadvisor.profile.analysis`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TypeVar

from tuneadvisor.advisor.advice import Advice
from tuneadvisor.profile.analysis import (
    KIND_LABELS,
    AnnotatedFunction,
    AnnotatedLine,
    ProfileAnalysis,
)
from tuneadvisor.trainscript.kinds import LineKind

T = TypeVar("T")

# The keys, as the help screen lists them (the footer shows the main ones).
KEY_HELP: tuple[tuple[str, str], ...] = (
    ("↑ ↓  j k", "move in the focused table; on Findings, j k: next / previous finding"),
    ("enter", "show the function's lines (and focus them)"),
    ("tab  shift+tab", "next / previous pane (or finding)"),
    ("/", "search the focused table: functions by name, lines by source"),
    ("escape", "clear the search; close this help"),
    ("s", "sort the focused table: time / name, or line / time / hits"),
    ("f", "kind filter on lines: all, dataloader, transfer, ..."),
    ("1  2  3  4", "tabs: Profile, Findings, Job script, Steps (with a torch.profiler trace)"),
    ("r", "on Steps: the next rank's kernels, ops and host gaps"),
    ("a", "on Job script: write the tuned job script beside the job (asks first)"),
    ("?", "this help"),
    ("q", "quit"),
)

NO_FINDINGS = "no advice yet (advisor not evaluated)"
# The quick first stage of `open`: numbers only, source and advice still being read.
READING = "reading source and advice…"
EVALUATING = "evaluating…"


class FunctionSort(Enum):
    TIME = "time"
    NAME = "name"


class LineSort(Enum):
    LINE = "line"
    TIME = "time"
    HITS = "hits"


FUNCTION_SORTS: tuple[FunctionSort, ...] = (FunctionSort.TIME, FunctionSort.NAME)
LINE_SORTS: tuple[LineSort, ...] = (LineSort.LINE, LineSort.TIME, LineSort.HITS)


def next_in(cycle: Sequence[T], current: T) -> T:
    """The element after ``current`` in ``cycle``, wrapping around."""
    try:
        return cycle[(list(cycle).index(current) + 1) % len(cycle)]
    except ValueError:
        return cycle[0]


@dataclass(frozen=True)
class LineRow:
    """One row of the lines table: a timed line, or an untimed line of the block."""

    lineno: int
    text: str | None  # source text, None when not known
    timing: AnnotatedLine | None  # None for untimed lines of the function's block


def _matches(text: str | None, query: str) -> bool:
    return not query or (text is not None and query.casefold() in text.casefold())


def function_rows(
    functions: Sequence[AnnotatedFunction], sort: FunctionSort, query: str = ""
) -> list[tuple[int, AnnotatedFunction]]:
    """(index into ``functions``, function) for the rows shown, in display order."""
    rows = [(i, f) for i, f in enumerate(functions) if _matches(f.name, query)]
    if sort is FunctionSort.NAME:
        rows.sort(key=lambda r: (r[1].name.casefold(), r[1].filename, r[1].first_lineno))
    # FunctionSort.TIME: the analysis already lists the most time first.
    return rows


def merged_lines(function: AnnotatedFunction) -> list[LineRow]:
    """The function's block with its timed lines merged in, in line order.

    Timed lines outside the block (or all of them, when the source is missing) are kept.
    """
    block = dict(function.block)
    timed = {line.lineno: line for line in function.lines}
    rows = []
    for lineno in sorted(block.keys() | timed.keys()):
        timing = timed.get(lineno)
        text = block.get(lineno)
        if text is None and timing is not None:
            text = timing.source
        rows.append(LineRow(lineno, text, timing))
    return rows


def line_rows(
    function: AnnotatedFunction,
    sort: LineSort,
    kind: LineKind | None = None,
    query: str = "",
) -> list[LineRow]:
    """The rows of the lines table after sort, kind filter and search.

    In line order the whole block shows (untimed lines included); sorted by time or hits, or
    filtered by kind, only timed lines remain (an untimed line has no time, hits or kind).
    """
    rows = [r for r in merged_lines(function) if _matches(r.text, query)]
    if kind is not None or sort is not LineSort.LINE:
        rows = [r for r in rows if r.timing is not None]
    if kind is not None:
        rows = [r for r in rows if r.timing is not None and r.timing.kind is kind]
    if sort is LineSort.TIME:
        rows.sort(key=lambda r: (-(r.timing.time_s if r.timing else 0.0), r.lineno))
    elif sort is LineSort.HITS:
        rows.sort(key=lambda r: (-(r.timing.hits if r.timing else 0), r.lineno))
    return rows


def kind_cycle(analysis: ProfileAnalysis) -> tuple[LineKind | None, ...]:
    """None (all kinds), then every kind that some timed line has, in LineKind order."""
    present = {line.kind for f in analysis.functions for line in f.lines}
    return (None, *(k for k in LineKind if k in present))


def kind_label(kind: LineKind | None) -> str:
    return "all" if kind is None else KIND_LABELS[kind]


def display_path(filename: str, cwd: Path | None = None) -> str:
    """A path short enough for a table: relative to the working directory when inside it,
    otherwise the file name (recorded absolute paths name another machine anyway)."""
    path = Path(filename)
    if not path.is_absolute():
        return filename
    base = cwd if cwd is not None else Path(os.getcwd())
    try:
        return str(path.relative_to(base))
    except ValueError:
        return path.name or filename


def heat_level(percent: float) -> str:
    """'high', 'mid', 'low' or 'none': the heat bar's color band for a line's share."""
    if percent >= 40:
        return "high"
    if percent >= 10:
        return "mid"
    if percent > 0:
        return "low"
    return "none"


# -- advice ---------------------------------------------------------------------------------


def findings_tab_label(advice: Advice | None, partial: bool) -> str:
    """'Findings (2)'; 'Findings (…)' while the advice is being read; 'Findings' without."""
    if partial:
        return "Findings (…)"
    if advice is None:
        return "Findings"
    return f"Findings ({len(advice.findings)})"


def diff_line_kind(line: str) -> str:
    """How a unified-diff line is coloured: 'header', 'hunk', 'added', 'removed', 'context'."""
    if line.startswith(("--- ", "+++ ")):
        return "header"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "added"
    if line.startswith("-"):
        return "removed"
    return "context"
