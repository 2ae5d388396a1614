"""The main screen: it composes the tabs (``main_tabs``: ``profile_tab``, ``findings_tab``,
``job_tab`` and Steps), keeps the Profile tab's choices and dispatches the keys; the apply is
``apply_flow``'s (the loading screen and the help and apply dialogs are in ``dialogs``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.events import DescendantFocus
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, TabbedContent, TabPane
from textual.worker import Worker

from tuneadvisor.profile.analysis import AnnotatedFunction, ProfileAnalysis
from tuneadvisor.profile.model import FunctionKey
from tuneadvisor.trainscript.kinds import LineKind
from tuneadvisor.tui.advice_widgets import AdviceBar
from tuneadvisor.tui.apply_flow import ApplyFlow, can_apply_now
from tuneadvisor.tui.findings_tab import FindingsTab
from tuneadvisor.tui.job_tab import JobTab
from tuneadvisor.tui.main_tabs import MainTabs, first_tab
from tuneadvisor.tui.profile_tab import ProfileTab
from tuneadvisor.tui.profile_view import ProfileView
from tuneadvisor.tui.steps import StepsPane
from tuneadvisor.tui.view import (
    FUNCTION_SORTS,
    LINE_SORTS,
    FunctionSort,
    LineSort,
    kind_cycle,
    next_in,
)
from tuneadvisor.tui.widgets import (
    FunctionsTable,
    KindSummary,
    LinesTable,
    NotesPanel,
    PartsTable,
    SearchBar,
    SourceNote,
)
from tuneadvisor.workspace.load import Workspace

Pane = Literal["functions", "lines"]
ProfilePane = PartsTable | NotesPanel | FunctionsTable | LinesTable | SourceNote | KindSummary
# the panes that draw themselves from the screen's ProfileView, in the order they are drawn
PROFILE_PANES: tuple[type[ProfilePane], ...] = (
    PartsTable, NotesPanel, FunctionsTable, LinesTable, SourceNote, KindSummary,
)  # fmt: skip


class MainScreen(Screen[None]):
    """Profile (functions, lines, kinds, notes, parts), Findings and Job script tabs.

    The screen keeps the Profile tab's choices (sorts, filters, kind, the chosen function)
    and builds one frozen ``ProfileView`` from them on each change; its panes draw
    themselves from it (``watch_profile``)."""

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
        Binding("a", "apply", "Apply"),
        Binding("1", "show_tab('profile')", "Profile", show=False),
        Binding("2", "show_tab('findings')", "Findings", show=False),
        Binding("3", "show_tab('job')", "Job script", show=False),
        Binding("4", "show_tab('steps')", "Steps", show=False),
        Binding("r", "next_rank", "Next rank"),
    ]

    def __init__(self, workspace: Workspace, on_shown: Callable[[], object] | None = None) -> None:
        """``on_shown`` is called once the screen has first been painted."""
        super().__init__()
        self.workspace = workspace
        self._on_shown = on_shown
        self.analysis: ProfileAnalysis | None = workspace.analysis
        self.initial_tab: str | None = None  # kept when a new workspace recomposes the screen
        self.function_sort = FunctionSort.TIME
        self.line_sort = LineSort.LINE
        self.kind: LineKind | None = None
        self.function_query = ""
        self.line_query = ""
        self.current: int | None = None  # index into analysis.functions
        self.last_table: Pane = "functions"
        self.search_target: Pane | None = None
        self.apply_flow = ApplyFlow(self)

    profile: var[ProfileView | None] = var(None, init=False)

    # -- layout -------------------------------------------------------------------------

    @property
    def partial(self) -> bool:
        """The quick first stage: numbers only, source and advice still being read."""
        return self.workspace.partial

    def compose(self) -> ComposeResult:
        workspace = self.workspace
        yield Header()
        with MainTabs(initial=self.initial_tab or first_tab(workspace), id="tabs"):
            yield ProfileTab(workspace, id="profile")
            yield FindingsTab(workspace, id="findings")
            yield JobTab(id="job")
            if workspace.traces is not None:
                with TabPane("Steps", id="steps"):
                    yield StepsPane(workspace.traces, id="steps-pane")
        yield Footer()

    def on_mount(self) -> None:
        self._populate()
        if self._on_shown is not None:
            self.call_after_refresh(self._on_shown)

    def _populate(self, keep_line: bool = False) -> None:
        """Fill the widgets from the workspace (on mount, and when the full one arrives:
        then ``keep_line`` keeps the lines table's cursor on the same line)."""
        self.query_one(JobTab).show(self.workspace)
        self.query_one(AdviceBar).show(self.workspace.advice, self.partial)
        if self.workspace.traces is not None:
            self.query_one(StepsPane).show(self.workspace.traces)
        self._show_profile(keep_line=keep_line, settle=True)

    async def show_workspace(self, workspace: Workspace) -> None:
        """Swap in another workspace (the full one after the quick one), keeping the chosen
        function (by name), the tab, the sorts and searches."""
        key = None if self.current_function is None else self.current_function.key
        same_shape = (
            (workspace.analysis is None) == (self.analysis is None)
            and (workspace.job is None) == (self.workspace.job is None)
            and (workspace.traces is None) == (self.workspace.traces is None)
        )
        tab = self._tabs.active
        self.workspace = workspace
        self.analysis = workspace.analysis
        self.current = self._index_of(key)
        if self.analysis is None or self.kind not in kind_cycle(self.analysis):
            self.kind = None  # a kind the new workspace has no lines of
        if same_shape:
            self._tabs.set_label("findings", FindingsTab.label_for(workspace))
            await self.query_one(FindingsTab).show(workspace)
            self._populate(keep_line=True)
        else:  # another layout (a profile, job script or trace appeared): build it again
            if tab == "profile" and self.analysis is None and workspace.traces is not None:
                tab = "steps"  # a trace alone: not the empty profile tab
            self.initial_tab = tab
            await self.recompose()
            self._populate()
            self.action_show_tab(tab)
        self.refresh_bindings()

    def _index_of(self, key: FunctionKey | None) -> int | None:
        if key is None or self.analysis is None:
            return None
        functions = self.analysis.functions
        exact = [i for i, f in enumerate(functions) if f.key == key]
        by_name = [i for i, f in enumerate(functions) if f.name == key[2]]
        found = exact or by_name
        return found[0] if found else None

    # -- state -> widgets ---------------------------------------------------------------

    @property
    def current_function(self) -> AnnotatedFunction | None:
        if self.analysis is None or self.current is None:
            return None
        return self.analysis.functions[self.current]

    def _show_profile(self, keep_line: bool, settle: bool = False) -> None:
        """One new ``ProfileView`` from the tab's choices, for its panes to draw; ``settle``
        (the functions shown changed) moves the choice to the first row shown if its own is
        not."""
        if self.analysis is None:
            return
        view = ProfileView(
            self.analysis,
            self.partial,
            self.function_sort,
            self.line_sort,
            self.kind,
            self.function_query,
            self.line_query,
            self.current,
            keep_line,
        )
        if settle:
            view = view.settled()
            self.current = view.current
        self.profile = view

    def watch_profile(self, view: ProfileView | None) -> None:
        """Every pane of the Profile tab draws itself from the new view."""
        for kind in PROFILE_PANES:
            self.query_one(kind).view = view

    def _refresh_functions(self) -> None:
        self._show_profile(keep_line=False, settle=True)

    def _refresh_lines(self, keep_cursor: bool = True) -> None:
        self._show_profile(keep_line=keep_cursor)

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
        self.query_one(SearchBar).close()
        if target == "lines":
            self.query_one(LinesTable).focus()
        else:
            self.query_one(FunctionsTable).focus()

    # -- actions ------------------------------------------------------------------------

    @property
    def _tabs(self) -> MainTabs:
        return self.query_one(MainTabs)

    def _on_profile_tab(self) -> bool:
        return self.analysis is not None and self._tabs.active == "profile"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Profile keys only where there is a profile on screen, apply only on the Job script
        tab when there is something to write (the footer follows)."""
        if not self.is_mounted:
            return True
        if action in ("search", "sort"):
            return self._on_profile_tab()
        if action == "kind_filter":  # no line kinds before the source is read
            return self._on_profile_tab() and not self.partial
        if action == "next_rank":
            traces = self.workspace.traces
            on_steps = self._tabs.active == "steps"
            return on_steps and traces is not None and len(traces.ranks) > 1
        if action == "apply":
            return can_apply_now(self.workspace) and self._tabs.active == "job"
        return True

    @on(TabbedContent.TabActivated)
    def _tab_changed(self) -> None:
        self.refresh_bindings()

    def action_search(self) -> None:
        if not self._on_profile_tab():
            return
        target = self.last_table
        self.search_target = target
        value = self.function_query if target == "functions" else self.line_query
        # a toast ("Written ...") sits where the prompt opens: the prompt is what matters now
        self.app.clear_notifications()
        self.query_one(SearchBar).open(target, value)

    def action_clear_search(self) -> None:
        if self.analysis is None:
            return
        if self.search_target is not None:
            target = self.search_target
            self.query_one(SearchBar).set_quietly("")
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
        if not self._on_profile_tab() or self.analysis is None or self.partial:
            return
        self.kind = next_in(kind_cycle(self.analysis), self.kind)
        self._refresh_lines()

    def action_show_tab(self, tab: str) -> None:
        table = "#lines" if self.last_table == "lines" else "#functions"
        self._tabs.show(tab, table if self.analysis is not None else None)

    def action_next_rank(self) -> None:
        """On Steps: the next rank's top kernels, ops and host gaps."""
        if self.workspace.traces is not None:
            self.query_one(StepsPane).next_rank()

    def action_apply(self) -> None:
        """Ask, then write the tuned job script beside the job (never over it)."""
        self.apply_flow.start(self.workspace)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.apply_flow.finished(event)
