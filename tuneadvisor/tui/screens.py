"""Screens: loading, the main profile/findings/job view, and the help modal."""

from __future__ import annotations

import textwrap
from typing import ClassVar, Literal

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.events import DescendantFocus
from textual.screen import ModalScreen, Screen
from textual.widgets import (
    DataTable,
    Footer,
    Header,
    Input,
    Label,
    LoadingIndicator,
    Static,
    TabbedContent,
    TabPane,
)

from tuneadvisor.profile.analysis import AnnotatedFunction, ProfileAnalysis
from tuneadvisor.profile.kinds import LineKind
from tuneadvisor.tui.highlight import Highlighter
from tuneadvisor.tui.view import (
    FUNCTION_SORTS,
    KEY_HELP,
    LINE_SORTS,
    FunctionSort,
    LineSort,
    display_path,
    format_seconds,
    function_rows,
    kind_cycle,
    kind_label,
    line_rows,
    merged_lines,
    next_in,
)
from tuneadvisor.tui.widgets import (
    FindingsView,
    FunctionsTable,
    JobScriptView,
    KindSummary,
    LinesTable,
    NotesPanel,
    PartsTable,
)
from tuneadvisor.workspace import Workspace

Pane = Literal["functions", "lines"]


class LoadingScreen(Screen[None]):
    """Shown while the loader runs in a thread worker."""

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="loading"):
            yield LoadingIndicator()
            yield Label("Loading profiles…", id="loading-label")
        yield Footer()


class HelpScreen(ModalScreen[None]):
    """The keys, in a dialog over the main screen."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("question_mark", "dismiss", "Close", show=False),
    ]

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, padding=(0, 2, 0, 0))
        table.add_column("Key", style="bold", no_wrap=True)
        table.add_column("Action")
        for key, action in KEY_HELP:
            table.add_row(key, action)
        with Vertical(id="help-dialog"):
            yield Static(table, id="help-keys")
            yield Label("escape closes this help", id="help-hint")

    def on_mount(self) -> None:
        self.query_one("#help-dialog").border_title = "Keys"

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)


class MainScreen(Screen[None]):
    """Profile (functions, lines, kinds, notes, parts), Findings and Job script tabs."""

    # Textual declares these as instance variables of a ClassVar type; plain lists it is.
    HORIZONTAL_BREAKPOINTS = [  # noqa: RUF012
        (0, "-narrow"),
        (80, "-wide"),
    ]
    VERTICAL_BREAKPOINTS = [  # noqa: RUF012
        (0, "-short"),
        (30, "-tall"),
    ]
    AUTO_FOCUS = "#functions"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "app.focus_next", "Pane"),
        Binding("slash", "search", "Search", key_display="/"),
        Binding("s", "sort", "Sort"),
        Binding("f", "kind_filter", "Kind"),
        Binding("escape", "clear_search", "Clear search", show=False),
        Binding("1", "show_tab('profile')", "Profile", show=False),
        Binding("2", "show_tab('findings')", "Findings", show=False),
        Binding("3", "show_tab('job')", "Job script", show=False),
    ]

    def __init__(self, workspace: Workspace) -> None:
        super().__init__()
        self.workspace = workspace
        self.analysis: ProfileAnalysis | None = workspace.analysis
        self.function_sort = FunctionSort.TIME
        self.line_sort = LineSort.LINE
        self.kind: LineKind | None = None
        self.function_query = ""
        self.line_query = ""
        self.current: int | None = None  # index into analysis.functions
        self.last_table: Pane = "functions"
        self.search_target: Pane | None = None
        self._highlighter: Highlighter | None = None
        self._sources: dict[int, dict[int, Text]] = {}

    # -- layout -------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        initial = "profile" if self.analysis is not None else "job"
        if self.analysis is None and self.workspace.job is None:
            initial = "profile"
        yield Header()
        with TabbedContent(initial=initial, id="tabs"):
            with TabPane("Profile", id="profile"):
                if self.analysis is None:
                    yield Static("no profile given (tuneadvisor open PROFILE.lprof)", id="empty")
                else:
                    with Horizontal(id="top"):
                        with Vertical(id="left"):
                            yield FunctionsTable(id="functions")
                            yield PartsTable(id="parts")
                        with VerticalScroll(id="side"):
                            yield KindSummary(id="summary")
                    yield Static(id="source-note")
                    yield LinesTable(id="lines")
                    yield NotesPanel(id="notes")
                    yield Input(id="search")
            with TabPane("Findings", id="findings"), VerticalScroll(id="findings-pane"):
                yield FindingsView(id="findings-view")
            with TabPane("Job script", id="job"), VerticalScroll(id="job-pane"):
                yield JobScriptView(id="job-view")
        yield Footer()

    def on_mount(self) -> None:
        self._highlighter = Highlighter(self.app.theme_variables)
        self.query_one(FindingsView).show(self.workspace.findings)
        self.query_one("#findings-pane").border_title = "Findings"
        job = self.workspace.job
        job_pane = self.query_one("#job-pane")
        if job is None:
            self.query_one(JobScriptView).update(
                Text("no job script given (tuneadvisor open ... --job JOBSCRIPT)", "italic")
            )
        else:
            job_pane.border_title = display_path(job.path)
            self.query_one(JobScriptView).show(job.text, self._highlighter)
        if self.analysis is None:
            return
        self.query_one("#side").border_title = "Time by kind"
        self.query_one(PartsTable).show(self.analysis.parts)
        self.query_one(NotesPanel).show(self.analysis.notes)
        self._refresh_functions()

    # -- state -> widgets ---------------------------------------------------------------

    @property
    def current_function(self) -> AnnotatedFunction | None:
        if self.analysis is None or self.current is None:
            return None
        return self.analysis.functions[self.current]

    def _refresh_functions(self) -> None:
        assert self.analysis is not None
        rows = function_rows(self.analysis.functions, self.function_sort, self.function_query)
        indices = [index for index, _ in rows]
        if self.current not in indices:
            self.current = indices[0] if indices else None
        table = self.query_one(FunctionsTable)
        table.show(rows, self.current)
        table.border_title = f"Functions · sort: {self.function_sort.value}"
        shown = f"{len(rows)} of {len(self.analysis.functions)}"
        if self.function_query:
            table.border_subtitle = f"/{self.function_query} · {shown}"
        else:
            table.border_subtitle = f"{len(rows)} functions" if rows else "no functions"
        self._refresh_lines(keep_cursor=False)

    def _refresh_lines(self, keep_cursor: bool = True) -> None:
        assert self.analysis is not None
        table = self.query_one(LinesTable)
        keep = table.row_key_at_cursor() if keep_cursor else None
        function = self.current_function
        note = self.query_one("#source-note", Static)
        if function is None:
            table.show([], {})
            table.border_title = "Lines"
            table.border_subtitle = f"no function matches /{self.function_query}"
            note.display = False
        else:
            rows = line_rows(function, self.line_sort, self.kind, self.line_query)
            assert self.current is not None
            table.show(rows, self._highlighted(self.current, function))
            table.move_to_key(keep)
            table.border_title = (
                f"{function.qualified} · {display_path(function.filename)}:"
                f"{function.first_lineno} · {format_seconds(function.total_s)} · "
                f"sort: {self.line_sort.value} · kind: {kind_label(self.kind)}"
            )
            table.border_subtitle = self._lines_status(function, len(rows))
            note_text = self._source_note(function)
            note.display = note_text is not None
            note.update(note_text or "")
        self.query_one(KindSummary).show(function)

    def _lines_status(self, function: AnnotatedFunction, shown: int) -> str:
        parts = []
        if self.line_query:
            parts.append(f"/{self.line_query}")
        if self.kind is not None and shown == 0:
            parts.append(f"no {kind_label(self.kind)} lines in {function.qualified}")
        elif shown == 0:
            parts.append("no lines match")
        else:
            parts.append(f"{len(function.lines)} timed lines")
        return " · ".join(parts)

    @staticmethod
    def _source_note(function: AnnotatedFunction) -> str | None:
        if function.source_path is not None:
            return None
        if function.block:
            return (
                f"source file not found ({function.filename}): showing the source text "
                "stored in the profile"
            )
        return (
            f"source not found: {function.filename} (numbers only; --source-root DIR finds a copy)"
        )

    def _highlighted(self, key: int, function: AnnotatedFunction) -> dict[int, Text]:
        """Each line's highlighted source, for the function's whole block (cached by index)."""
        assert self._highlighter is not None
        cached = self._sources.get(key)
        if cached is None:
            rows = [r for r in merged_lines(function) if r.text is not None]
            # Dedented (methods lose their class indent), one line per row.
            code = textwrap.dedent("\n".join(r.text or "" for r in rows))
            texts = self._highlighter.lines(code, "python") if rows else []
            cached = self._sources[key] = {r.lineno: t for r, t in zip(rows, texts, strict=True)}
        return cached

    # -- events -------------------------------------------------------------------------

    @on(DataTable.RowHighlighted, "#functions")
    def _function_highlighted(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value
        if key is None:
            return
        index = int(key)
        if index != self.current:
            self.current = index
            self._refresh_lines(keep_cursor=False)

    @on(DataTable.RowSelected, "#functions")
    def _function_selected(self) -> None:
        self.query_one(LinesTable).focus()

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        if isinstance(event.widget, FunctionsTable):
            self.last_table = "functions"
        elif isinstance(event.widget, LinesTable):
            self.last_table = "lines"

    @on(Input.Changed, "#search")
    def _search_changed(self, event: Input.Changed) -> None:
        if self.search_target == "functions":
            self.function_query = event.value
            self._refresh_functions()
        elif self.search_target == "lines":
            self.line_query = event.value
            self._refresh_lines()

    @on(Input.Submitted, "#search")
    def _search_submitted(self) -> None:
        self._close_search()

    def _close_search(self) -> None:
        target = self.search_target
        self.search_target = None
        search = self.query_one("#search", Input)
        search.remove_class("-active")
        if target == "lines":
            self.query_one(LinesTable).focus()
        else:
            self.query_one(FunctionsTable).focus()

    # -- actions ------------------------------------------------------------------------

    def _on_profile_tab(self) -> bool:
        return self.analysis is not None and self.query_one(TabbedContent).active == "profile"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Profile keys only where there is a profile on screen (the footer follows)."""
        if action in ("search", "sort", "kind_filter") and self.is_mounted:
            return self._on_profile_tab()
        return True

    @on(TabbedContent.TabActivated)
    def _tab_changed(self) -> None:
        self.refresh_bindings()

    def action_search(self) -> None:
        if not self._on_profile_tab():
            return
        target = self.last_table
        self.search_target = target
        search = self.query_one("#search", Input)
        if target == "functions":
            search.placeholder = "filter functions by name (enter: keep, escape: clear)"
            value = self.function_query
        else:
            search.placeholder = "filter lines by source text (enter: keep, escape: clear)"
            value = self.line_query
        with search.prevent(Input.Changed):
            search.value = value
        search.add_class("-active")
        search.focus()

    def action_clear_search(self) -> None:
        if self.analysis is None:
            return
        if self.search_target is not None:
            target = self.search_target
            search = self.query_one("#search", Input)
            with search.prevent(Input.Changed):
                search.value = ""
            if target == "functions":
                self.function_query = ""
                self._refresh_functions()
            else:
                self.line_query = ""
                self._refresh_lines()
            self._close_search()
            return
        if self.function_query or self.line_query:
            self.function_query = self.line_query = ""
            self._refresh_functions()

    def action_sort(self) -> None:
        if not self._on_profile_tab():
            return
        if self.last_table == "lines":
            self.line_sort = next_in(LINE_SORTS, self.line_sort)
            self._refresh_lines()
        else:
            self.function_sort = next_in(FUNCTION_SORTS, self.function_sort)
            self._refresh_functions()

    def action_kind_filter(self) -> None:
        if not self._on_profile_tab() or self.analysis is None:
            return
        self.kind = next_in(kind_cycle(self.analysis), self.kind)
        self._refresh_lines()

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        # Move focus into the shown pane (a focused widget in a hidden pane would switch
        # the tabs back).
        if tab == "profile" and self.analysis is not None:
            target = "#lines" if self.last_table == "lines" else "#functions"
        else:
            target = f"#{tab}-pane" if tab in ("findings", "job") else "#tabs"
        self.query_one(target).focus()
