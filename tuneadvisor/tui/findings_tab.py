"""The main screen's Findings tab: the findings panel under a label that counts them."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import TabPane

from tuneadvisor.tui.advice_widgets import FindingsPanel
from tuneadvisor.tui.view import findings_tab_label
from tuneadvisor.workspace.load import Workspace


class FindingsTab(TabPane):
    """'Findings (2)' over the findings of the workspace's advice (``FindingsPanel`` draws
    them); ``show`` swaps in another workspace's."""

    def __init__(self, workspace: Workspace, *, id: str) -> None:
        super().__init__(self.label_for(workspace), id=id)
        self._workspace = workspace

    def compose(self) -> ComposeResult:
        workspace = self._workspace
        yield FindingsPanel(
            workspace.advice, workspace.partial, workspace.notes, id="findings-pane"
        )

    def on_mount(self) -> None:
        self.query_one(FindingsPanel).border_title = "Findings"

    @staticmethod
    def label_for(workspace: Workspace) -> str:
        """What the tab says: the count, '…' while the advice is read."""
        return findings_tab_label(workspace.advice, workspace.partial)

    async def show(self, workspace: Workspace) -> None:
        """Another workspace's findings (the full one after the quick one); the label on the
        tab is the tabs' to change (``MainTabs.set_label``, ``label_for``)."""
        self._workspace = workspace
        await self.query_one(FindingsPanel).show(
            workspace.advice, workspace.partial, workspace.notes
        )

    def focus_content(self) -> None:
        """The first finding, or the panel when there is none."""
        panel = self.query_one(FindingsPanel)
        (panel.first_card() or panel).focus()
