"""The main screen's Profile tab: its panes, laid out (each draws itself from the screen's
``ProfileView``, ``profile_view``), or what the tab says without a line profile."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Static, TabPane

from tuneadvisor.tui.advice_widgets import AdviceBar
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


class ProfileTab(TabPane):
    """The advice bar over the functions, parts, time by kind, the source note, the lines,
    the notes and the search prompt."""

    def __init__(self, workspace: Workspace, *, id: str) -> None:
        super().__init__("Profile", id=id)
        self._workspace = workspace

    def compose(self) -> ComposeResult:
        yield AdviceBar(id="advice-bar")
        if self._workspace.analysis is None:
            yield Static(_no_profile_text(self._workspace), id="empty")
            return
        with Horizontal(id="top"):
            with Vertical(id="left"):
                yield FunctionsTable(id="functions")
                yield PartsTable(id="parts")
            # not a Tab stop: `/` there would filter the functions, not it
            with VerticalScroll(id="side", can_focus=False):
                yield KindSummary(id="summary")
        yield SourceNote(id="source-note")
        yield LinesTable(id="lines")
        yield NotesPanel(id="notes")
        yield SearchBar(id="search")

    def on_mount(self) -> None:
        if self._workspace.analysis is not None:
            self.query_one("#side").border_title = "Time by kind"


def _no_profile_text(workspace: Workspace) -> str:
    """What the Profile tab says without a line profile: a trace's steps are elsewhere."""
    if workspace.traces is not None:
        return (
            "no line profile: these are torch.profiler traces, whose steps are on the "
            "Steps tab (4); a line profile is kernprof's (tuneadvisor open PROFILE.lprof)"
        )
    return "no profile given (tuneadvisor open PROFILE.lprof)"
