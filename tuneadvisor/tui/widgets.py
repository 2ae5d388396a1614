"""The widgets of the main screen's profile and job script: each turns analysis objects into
one pane (the advice's widgets are in ``advice_widgets``). The Profile tab's panes draw
themselves from the screen's one frozen ``ProfileView`` (their ``view``), each redrawing what
that view changes for it; ``show`` draws from the values alone."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import ClassVar

from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.coordinate import Coordinate
from textual.reactive import var
from textual.widgets import DataTable, Input, Static

from tuneadvisor.present.number_text import format_seconds, heat_bar, percent, top_kinds_text
from tuneadvisor.present.terminal_safe import one_line_safe, terminal_safe
from tuneadvisor.profile.analysis import (
    KIND_LABELS,
    AnnotatedFunction,
    PartSummary,
    kind_summary_text,
)
from tuneadvisor.trainscript.kinds import LineKind
from tuneadvisor.tui.highlight import Highlighter
from tuneadvisor.tui.profile_view import (
    ProfileView,
    functions_subtitle,
    functions_title,
    hottest,
    lines_status,
    lines_title,
    source_note,
)
from tuneadvisor.tui.view import READING, LineRow, display_path, heat_level, merged_lines
from tuneadvisor.workspace.load import JobScriptText

HEAT_WIDTH = 10
KIND_BAR_WIDTH = 10  # a row of "Time by kind" fits the 42 cells it has at 100 columns


def _right(text: str, style: Style | str = "") -> Text:
    return Text(text, style=style, justify="right")


class NavTable(DataTable[Text]):
    """A row-cursor table with vi keys."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)

    def row_key_at_cursor(self) -> str | None:
        if self.row_count == 0:
            return None
        key = self.coordinate_to_cell_key(Coordinate(self.cursor_row, 0)).row_key
        return key.value

    def move_to_key(self, key: str | None) -> None:
        if key is None or self.row_count == 0:
            return
        try:
            row = self.get_row_index(key)
        except Exception:  # the row is filtered out: stay on the first row
            row = 0
        self.move_cursor(row=row, animate=False)

    def center_cursor(self) -> None:
        """Scroll the cursor's row to the middle of the view, with the lines around it in
        sight (moving the cursor only brings it to the view's edge)."""

        def center() -> None:
            rows = max(1, self.scrollable_content_region.height - self.header_height)
            self.scroll_to(y=max(0, self.cursor_row - rows // 2), animate=False)

        self.call_after_refresh(center)


class FunctionsTable(NavTable):
    """Functions, one row each: name, file:line, total time, share of the profile."""

    view: var[ProfileView | None] = var(None, init=False)

    def watch_view(self, old: ProfileView | None, view: ProfileView | None) -> None:
        """Drawn again when the rows change (another workspace, sort or filter), not when
        the cursor chose another function: the cursor is already on it."""
        if view is None or view.same_functions(old):
            return
        rows = view.function_rows()
        # Filling the table moves its cursor: that is no choice of the user's.
        with self.prevent(DataTable.RowHighlighted):
            self.show(rows, view.current)
        self.border_title = functions_title(view)
        self.border_subtitle = functions_subtitle(view, len(rows))

    def show(self, rows: Sequence[tuple[int, AnnotatedFunction]], selected: int | None) -> None:
        self.clear(columns=True)
        self.add_column("Function", key="name")
        self.add_column("File:line", key="file")
        self.add_column(_right("Total"), key="total")
        self.add_column(_right("%"), key="percent")
        for index, func in rows:
            self.add_row(
                Text(one_line_safe(func.qualified), style="bold"),
                Text(one_line_safe(f"{display_path(func.filename)}:{func.first_lineno}")),
                _right(format_seconds(func.total_s)),
                _right(percent(func.percent_total)),
                key=str(index),
            )
        self.move_to_key(None if selected is None else str(selected))


class LinesTable(NavTable):
    """Lines of one function: numbers, heat bar, kind and highlighted source."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "lines--heat-high",
        "lines--heat-mid",
        "lines--heat-low",
        "lines--untimed",
        "lines--kind-other",
    }

    view: var[ProfileView | None] = var(None, init=False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._highlighter: Highlighter | None = None
        self._sources: dict[int, dict[int, Text]] = {}  # function index -> line -> source
        self._sources_of: object = None  # the analysis they were highlighted from

    def watch_view(self, view: ProfileView | None) -> None:
        if view is None:
            return
        keep = self.row_key_at_cursor() if view.keep_line else None
        function = view.current_function
        if function is None or view.current is None:
            self.show([], {})
            self.border_title = "Lines"
            self.border_subtitle = f"no function matches /{view.function_query}"
            return
        rows = view.line_rows(function)
        self.show(rows, self._highlighted(view, view.current, function), not view.partial)
        # a function opens on its hottest line, not on its signature (issue 24, 14)
        # (kept when the full workspace replaces the quick one) and in the middle of the view
        self.move_to_key(keep if keep is not None else hottest(rows))
        self.center_cursor()
        self.border_title = lines_title(view, function)
        self.border_subtitle = lines_status(view, function, len(rows))

    def _highlighted(
        self, view: ProfileView, key: int, function: AnnotatedFunction
    ) -> dict[int, Text]:
        """Each line's highlighted source, for the function's whole block (cached by index
        for one analysis)."""
        if self._sources_of is not view.analysis:
            self._sources, self._sources_of = {}, view.analysis
        cached = self._sources.get(key)
        if cached is None:
            if self._highlighter is None:
                self._highlighter = Highlighter(self.app.theme_variables)
            rows = [r for r in merged_lines(function) if r.text is not None]
            # Dedented (methods lose their class indent), one line per row.
            code = textwrap.dedent("\n".join(r.text or "" for r in rows))
            texts = self._highlighter.lines(code, "python") if rows else []
            cached = self._sources[key] = {r.lineno: t for r, t in zip(rows, texts, strict=True)}
        return cached

    def show(
        self, rows: Sequence[LineRow], sources: Mapping[int, Text], kinds_known: bool = True
    ) -> None:
        """``kinds_known`` False (the quick first stage): the Kind column says "…"."""
        self.clear(columns=True)
        self.add_column(_right("Line"), key="line")
        self.add_column(_right("Hits"), key="hits")
        self.add_column(_right("Time"), key="time")
        self.add_column(_right("Per hit"), key="per_hit")
        self.add_column(_right("%"), key="percent")
        self.add_column(Text("Heat"), key="heat")
        self.add_column(Text("Kind"), key="kind")
        self.add_column(Text("Source"), key="source")
        untimed = self.get_component_rich_style("lines--untimed", partial=True)
        other = self.get_component_rich_style("lines--kind-other", partial=True)
        for row in rows:
            source = sources.get(row.lineno)
            if source is None:
                source = Text(one_line_safe(row.text or ""))
            line = row.timing
            if line is None:
                source = source.copy()
                source.stylize(untimed)
                blank = Text("")
                self.add_row(
                    _right(str(row.lineno), untimed),
                    blank, blank, blank, blank, blank, blank,
                    source,
                    key=str(row.lineno),
                )  # fmt: skip
                continue
            level = heat_level(line.percent)
            heat = Text(heat_bar(line.percent, HEAT_WIDTH))
            if level != "none":
                heat.stylize(self.get_component_rich_style(f"lines--heat-{level}", partial=True))
            kind = Text(KIND_LABELS[line.kind] if kinds_known else "…")
            if line.kind is LineKind.OTHER or not kinds_known:
                kind.stylize(other)
            self.add_row(
                _right(str(row.lineno)),
                _right(str(line.hits)),
                _right(format_seconds(line.time_s)),
                _right(format_seconds(line.per_hit_s)),
                _right(percent(line.percent)),
                heat,
                kind,
                source,
                key=str(row.lineno),
            )


class SourceNote(Static):
    """Why the lines' source is not the file's, shown only when it is not."""

    view: var[ProfileView | None] = var(None, init=False)

    def watch_view(self, view: ProfileView | None) -> None:
        if view is None:
            return
        note = source_note(view)
        self.display = note is not None
        self.update(note or "")


class KindSummary(Static):
    """Where the chosen function's time goes, by line kind."""

    view: var[ProfileView | None] = var(None, init=False)

    def watch_view(self, view: ProfileView | None) -> None:
        if view is not None:
            self.show(view.current_function, kinds_known=not view.partial)

    def show(self, function: AnnotatedFunction | None, kinds_known: bool = True) -> None:
        if function is None:
            self.update(Text("no function selected", style="dim"))
            return
        if not kinds_known:
            name = one_line_safe(function.qualified)
            self.update(Text(f"{name}: line kinds come with the source\n{READING}"))
            return
        text = Text()
        # One line per kind below, so the heading is the top kind alone: the whole summary
        # wraps at 100 columns with a number on one line and its "%" on the next.
        text.append(one_line_safe(kind_summary_text(function).split(", ")[0]) + "\n", style="bold")
        width = max((len(s.label) for s in function.kinds), default=0)
        times = [format_seconds(s.time_s) for s in function.kinds]
        time_width = max(map(len, times), default=0)
        for share, time in zip(function.kinds, times, strict=True):
            text.append(share.label.ljust(width) + " ")
            text.append(heat_bar(share.percent, KIND_BAR_WIDTH), style="bold")
            # the unit stays on the number's line: "476.48 ms" never reads as seconds
            text.append(f" {share.percent:5.1f} %  {time:>{time_width}}\n")
        text.rstrip()
        self.update(text)


class NotesPanel(Static):
    """The analysis notes (sync lines that absorb GPU time, missing sources)."""

    view: var[ProfileView | None] = var(None, init=False)

    def watch_view(self, old: ProfileView | None, view: ProfileView | None) -> None:
        if view is not None and (old is None or old.analysis is not view.analysis):
            self.show(view.analysis.notes)

    def show(self, notes: Sequence[str]) -> None:
        self.display = bool(notes)
        self.border_title = "Notes"
        self.update(Text(terminal_safe("\n".join(f"• {note}" for note in notes))))


class PartsTable(NavTable):
    """Several files (one per rank): each one's total and top kinds, one row each."""

    view: var[ProfileView | None] = var(None, init=False)

    def watch_view(self, old: ProfileView | None, view: ProfileView | None) -> None:
        if view is not None and (old is None or old.analysis is not view.analysis):
            self.show(view.analysis.parts)

    def show(self, parts: Sequence[PartSummary]) -> None:
        self.display = bool(parts)
        self.border_title = f"Parts ({len(parts)} files)"
        self.clear(columns=True)
        self.add_column("Part", key="part")
        self.add_column(_right("Total"), key="total")
        self.add_column("Top kinds", key="kinds")
        for index, part in enumerate(parts):
            self.add_row(
                Text(one_line_safe(display_path(part.origin))),
                _right(format_seconds(part.total_s)),
                Text(top_kinds_text(part.kinds, limit=2, empty="no time recorded")),
                key=str(index),
            )


class JobScriptView(Static):
    """The job script, numbered and highlighted as bash; #SBATCH directives stand out.
    Long lines wrap under their own text, the numbers left clear (a launch line's options
    are all on screen without scrolling sideways)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "job--lineno",
        "job--directive",
        "job--option",
    }

    def show(self, text: str, highlighter: Highlighter) -> None:
        lines = highlighter.lines(text, "bash")
        lineno_style = self.get_component_rich_style("job--lineno", partial=True)
        directive = self.get_component_rich_style("job--directive", partial=True)
        option = self.get_component_rich_style("job--option", partial=True)
        width = len(str(len(lines)))
        grid = Table.grid(expand=True)
        grid.add_column(no_wrap=True)
        grid.add_column(ratio=1, overflow="fold")
        for number, line in enumerate(lines, start=1):
            stripped = line.plain.lstrip()
            if stripped.startswith("#SBATCH"):
                start = len(line.plain) - len(stripped)
                plain = Text(line.plain)
                plain.stylize(directive, start, start + len("#SBATCH"))
                plain.stylize(option, start + len("#SBATCH"))
                line = plain
            grid.add_row(Text(f"{number:>{width}} │ ", style=lineno_style), line)
        self.update(grid)


class JobPane(VerticalScroll):
    """The Job script tab's script under its path, or why there is none; drawn from the
    workspace's job script (its ``job``)."""

    job: var[JobScriptText | None] = var(None, init=False, always_update=True)

    def compose(self) -> ComposeResult:
        yield JobScriptView(id="job-view")

    def watch_job(self, job: JobScriptText | None) -> None:
        view = self.query_one(JobScriptView)
        if job is None:
            view.update(
                Text("no job script given (tuneadvisor open ... --job JOBSCRIPT)", "italic")
            )
            return
        # a Text, not a str: a str title is parsed as markup ("[bold]" in a path)
        self.border_title = Text(one_line_safe(display_path(job.path)))
        view.show(job.text, Highlighter(self.app.theme_variables))


class SearchBar(Input):
    """The Profile tab's filter line, shown while one of its tables is being filtered."""

    PLACEHOLDERS: ClassVar[dict[str, str]] = {
        "functions": "filter functions by name (enter: keep, escape: clear)",
        "lines": "filter lines by source text (enter: keep, escape: clear)",
    }

    def open(self, target: str, value: str) -> None:
        """Shown and focused, filtering ``target`` ("functions" or "lines") from ``value``."""
        self.placeholder = self.PLACEHOLDERS[target]
        self.set_quietly(value)
        self.add_class("-active")
        self.focus()

    def set_quietly(self, value: str) -> None:
        """The text set without a Changed message: no filtering follows."""
        with self.prevent(Input.Changed):
            self.value = value

    def close(self) -> None:
        self.remove_class("-active")
