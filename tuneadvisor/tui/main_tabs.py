"""The main screen's tabs: which one opens first, and moving to one with its key (1-4)."""

from __future__ import annotations

from textual.widgets import TabbedContent

from tuneadvisor.tui.findings_tab import FindingsTab
from tuneadvisor.tui.job_tab import JobTab
from tuneadvisor.workspace.load import Workspace

NO_STEPS = (
    "no Steps tab: it shows torch.profiler traces (tuneadvisor open TRACE.json, or run "
    "--profile torch)"
)


def first_tab(workspace: Workspace) -> str:
    """The profile, else the job script; a trace alone opens on its steps."""
    if workspace.analysis is None and workspace.traces is not None:
        return "steps"
    if workspace.analysis is None and workspace.job is not None:
        return "job"
    return "profile"


class MainTabs(TabbedContent):
    """Profile, Findings, Job script and, with a trace, Steps. ``show`` moves focus into the
    tab shown: a focused widget left in a hidden tab would switch the tabs back."""

    def show(self, tab: str, profile_table: str | None) -> None:
        """Show ``tab`` and focus into it; on Profile, ``profile_table`` (the selector of the
        table last used; None: no profile, the tabs themselves)."""
        if tab == "steps" and not self.query("#steps"):
            # no trace given: no Steps tab, said rather than a key that does nothing
            self.notify(NO_STEPS, timeout=4)
            return
        self.active = tab
        pane = self.get_pane(tab)
        if isinstance(pane, FindingsTab | JobTab):
            pane.focus_content()
        elif tab == "profile" and profile_table is not None:
            self.query_one(profile_table).focus()
        elif tab == "steps":
            self.query_one("#steps-pane").focus()
        else:
            self.focus()

    def set_label(self, pane: str, label: str) -> None:
        self.get_tab(pane).label = label
