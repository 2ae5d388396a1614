"""The main screen's Job script tab: the job script beside the tuned script's diff."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import TabPane

from tuneadvisor.tui.advice_widgets import DiffPanel
from tuneadvisor.tui.apply_flow import can_apply_now
from tuneadvisor.tui.widgets import JobPane
from tuneadvisor.workspace.load import Workspace


class JobTab(TabPane):
    """The job script (``JobPane``) and what the plan would change in it (``DiffPanel``,
    which says `a` writes it when there is something to write)."""

    def __init__(self, *, id: str) -> None:
        super().__init__("Job script", id=id)

    def compose(self) -> ComposeResult:
        with Horizontal(id="job-split"):
            yield JobPane(id="job-pane")
            yield DiffPanel(id="diff-pane")

    def show(self, workspace: Workspace) -> None:
        self.query_one(JobPane).job = workspace.job
        tuned = workspace.tuned if workspace.advice is not None else None
        self.query_one(DiffPanel).show(
            tuned, workspace.partial, apply_hint=can_apply_now(workspace)
        )

    def focus_content(self) -> None:
        self.query_one(JobPane).focus()
