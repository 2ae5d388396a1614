"""The Profile tab's state as one frozen value, and what its panes say about it.

As on the watch screen (``watch_state``), the main screen keeps the profile tab's choices
(sorts, filters, the kind, the chosen function) and hands one ``ProfileView`` built from them
to every pane of the tab; each pane (``widgets``) draws itself from it and nothing else.
``keep_line`` says whether the lines table keeps its cursor on the same line (a new sort,
filter or kind, the full workspace after the quick one) or opens the function on its hottest
line (another function chosen, the functions filtered or sorted again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from rich.text import Text

from tuneadvisor.present.counts import counted
from tuneadvisor.present.number_text import format_seconds
from tuneadvisor.present.terminal_safe import one_line_safe
from tuneadvisor.profile.analysis import AnnotatedFunction, ProfileAnalysis
from tuneadvisor.trainscript.kinds import LineKind
from tuneadvisor.tui.view import (
    FunctionSort,
    LineRow,
    LineSort,
    display_path,
    function_rows,
    kind_label,
    line_rows,
)


@dataclass(frozen=True, eq=False)  # compared by identity: a new value is a new draw
class ProfileView:
    analysis: ProfileAnalysis
    partial: bool  # the quick first stage: no line kinds, source not looked for yet
    function_sort: FunctionSort = FunctionSort.TIME
    line_sort: LineSort = LineSort.LINE
    kind: LineKind | None = None
    function_query: str = ""
    line_query: str = ""
    current: int | None = None  # index into analysis.functions
    keep_line: bool = False

    @property
    def current_function(self) -> AnnotatedFunction | None:
        if self.current is None:
            return None
        return self.analysis.functions[self.current]

    def function_rows(self) -> list[tuple[int, AnnotatedFunction]]:
        return function_rows(self.analysis.functions, self.function_sort, self.function_query)

    def line_rows(self, function: AnnotatedFunction) -> list[LineRow]:
        return line_rows(function, self.line_sort, self.kind, self.line_query)

    def settled(self) -> ProfileView:
        """The chosen function kept where the functions table still shows it, else its
        first row's (None: no row)."""
        indices = [index for index, _ in self.function_rows()]
        if self.current in indices:
            return self
        return replace(self, current=indices[0] if indices else None)

    def same_functions(self, other: ProfileView | None) -> bool:
        """The functions table would show the same rows for ``other``."""
        return (
            other is not None
            and other.analysis is self.analysis
            and other.function_sort == self.function_sort
            and other.function_query == self.function_query
        )


def functions_title(view: ProfileView) -> str:
    return f"Functions · sort: {view.function_sort.value}"


def functions_subtitle(view: ProfileView, shown: int) -> str:
    if view.function_query:
        return f"/{view.function_query} · {shown} of {len(view.analysis.functions)}"
    count = f"{shown} function{'' if shown == 1 else 's'}"
    return count if shown else "no functions"


def lines_title(view: ProfileView, function: AnnotatedFunction) -> Text:
    # a Text, not a str: a str title is parsed as markup ("[bold]" in a path)
    return Text(
        one_line_safe(
            f"{function.qualified} · {display_path(function.filename)}:"
            f"{function.first_lineno} · {format_seconds(function.total_s)} · "
            f"sort: {view.line_sort.value} · kind: {kind_label(view.kind)}"
        )
    )


def lines_status(view: ProfileView, function: AnnotatedFunction, shown: int) -> str:
    parts = []
    if view.line_query:
        parts.append(f"/{view.line_query}")
    if view.kind is not None and shown == 0 and view.line_query:
        # Both filters on: say which one empties the table, not that the kind is absent.
        label = kind_label(view.kind)
        of_kind = len(line_rows(function, view.line_sort, view.kind))
        matching = len(line_rows(function, view.line_sort, None, view.line_query))
        parts.append(
            f"no line matches both ({label}: {counted(of_kind, 'line')}, "
            f"/{view.line_query}: {counted(matching, 'line')})"
        )
    elif view.kind is not None and shown == 0:
        parts.append(f"no {kind_label(view.kind)} lines in {function.qualified}")
    elif shown == 0:
        parts.append("no lines match")
    elif (view.kind is not None or view.line_query) and shown < len(function.lines):
        # filtered: what the table shows, of how many ("1 of 19 timed lines")
        parts.append(f"{shown} of {len(function.lines)} timed lines")
    else:
        parts.append(f"{len(function.lines)} timed lines")
    return " · ".join(parts)


def source_note(view: ProfileView) -> str | None:
    """Why the source shown is not the file's (None: it is, or nothing to say yet: the quick
    stage has not looked for the source, which is not "not found")."""
    function = view.current_function
    if view.partial or function is None or function.source_path is not None:
        return None
    if function.block:
        return (
            f"source file not found ({function.filename}): showing the source text "
            "stored in the profile"
        )
    return f"source not found: {function.filename} (numbers only; --source-root DIR finds a copy)"


def hottest(rows: Sequence[LineRow]) -> str | None:
    """The key of the row that took the most time (the first of equals), None if untimed."""
    timed = [row for row in rows if row.timing is not None]
    if not timed:
        return None
    return str(max(timed, key=lambda row: row.timing.time_s if row.timing else 0.0).lineno)
