"""Issue 30 §2 in the TUI: the Findings tab has the "Not read" section, and says "no
findings" only of what was read."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from textual.widgets import Static

from tests.tui.helpers import (
    SIZE,
    advised_workspace,
    async_test,
    make_app,
    static_text,
    wait_loaded,
)
from tuneadvisor.advisor.evidence import NotRead

UNREAD = NotRead('line 5: `eval "$cmd"`', "runs a command built when the job runs: not followed")


@async_test
async def test_the_findings_tab_lists_what_was_not_read(tmp_path: Path) -> None:
    workspace = advised_workspace(tmp_path, findings=())
    assert workspace.advice is not None
    workspace = replace(workspace, advice=replace(workspace.advice, not_read=(UNREAD,)))
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("2")
        await pilot.pause()
        view = static_text(screen.query_one("#findings-view", Static))
        assert view == "findings: none in what was read (see Not read)"
        section = screen.query_one("#not-read", Static)
        assert section.border_title == "Not read"
        assert UNREAD.line() in static_text(section)
