"""Staged loading: the quick, numbers-only workspace gives the first screen, then the full one
(source, kinds, advice) is swapped in, keeping the user's place."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Static, TabbedContent

from tests.tui.helpers import (
    SIZE,
    advised_workspace,
    app_with,
    async_test,
    copy_example,
    no_terminal_needed,
    quick_of,
    static_text,
    wait_for,
    wait_loaded,
)
from tuneadvisor.errors import InputError
from tuneadvisor.tui import app as app_module
from tuneadvisor.tui.advice_widgets import FindingCard
from tuneadvisor.tui.screens import MainScreen
from tuneadvisor.tui.view import EVALUATING, READING
from tuneadvisor.tui.widgets import KindSummary, LinesTable
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import (
    Workspace,
    load_quick_workspace,
    load_workspace,
)


class Gate:
    """A loader that blocks until released (and counts its calls)."""

    def __init__(self, workspace: Workspace | None = None, error: Exception | None = None):
        self.workspace = workspace
        self.error = error
        self.release = threading.Event()
        self.started = threading.Event()
        self.calls = 0

    def __call__(self) -> Workspace:
        self.calls += 1
        self.started.set()
        self.release.wait(timeout=30)
        if self.error is not None:
            raise self.error
        assert self.workspace is not None
        return self.workspace


def findings_label(screen: MainScreen) -> str:
    return screen.query_one(TabbedContent).get_tab("findings").label.plain


@async_test
async def test_quick_screen_first_then_the_full_one_keeping_function_and_tab(
    tmp_path: Path,
) -> None:
    full = advised_workspace(tmp_path)
    quick = quick_of(full, tmp_path)
    slow_full = Gate(full)
    app = app_with(slow_full, quick=lambda: quick)
    try:
        async with app.run_test(size=SIZE) as pilot:
            screen = await wait_loaded(pilot)
            await wait_for(pilot, slow_full.started.is_set)
            assert app.workspace is quick
            # The quick stage: numbers, and a marker instead of "source not found".
            bar = screen.query_one("#advice-bar", Static)
            assert static_text(bar) == READING
            assert not screen.query_one("#source-note").display
            assert READING in app.sub_title
            assert findings_label(screen) == "Findings (…)"
            assert "reading source" in static_text(screen.query_one(KindSummary))
            loader = screen.query_one(LinesTable).get_row("7")
            assert [str(getattr(c, "plain", c)) for c in loader[:2]] == ["7", "939"]
            assert getattr(loader[6], "plain", "") == "…"  # kinds not known yet
            assert screen.check_action("kind_filter", ()) is False
            # The user moves on meanwhile: another function, then the Findings tab.
            await pilot.press("j")
            await pilot.pause()
            assert screen.current_function is not None
            assert screen.current_function.name == "test"
            lines = screen.query_one(LinesTable)
            lines.focus()
            # a function opens on its hottest line (issue 24, point 14): 22, the DataLoader's
            assert lines.row_key_at_cursor() == "22"
            await pilot.press("j")
            await pilot.pause()
            moved = lines.row_key_at_cursor()
            assert moved is not None and int(moved) > 22
            await pilot.press("2")
            await pilot.pause()
            assert static_text(screen.query_one("#findings-view", Static)) == EVALUATING

            slow_full.release.set()
            await wait_for(pilot, lambda: app.workspace is full)
            await pilot.pause()
            assert app.screen is screen  # swapped in place
            assert screen.query_one(TabbedContent).active == "findings"
            assert screen.current_function is not None
            assert screen.current_function.name == "test"
            assert findings_label(screen) == "Findings (2)"
            assert len(screen.query(FindingCard)) == 2
            assert READING not in app.sub_title
            assert static_text(bar).startswith("error tasks-gpus-mismatch")
            assert screen.check_action("kind_filter", ()) is False  # not on the profile tab
            await pilot.press("1")
            await pilot.pause()
            assert screen.check_action("kind_filter", ()) is True
            assert "DataLoader 73.5 % of test()" in static_text(screen.query_one(KindSummary))
            assert getattr(lines.get_row("22")[6], "plain", "") == "DataLoader"
            assert lines.row_key_at_cursor() == moved  # the same line, now with its source
            assert app.focused is lines
            assert slow_full.calls == 1
    finally:
        slow_full.release.set()


@async_test
async def test_quick_stage_of_the_example_never_says_source_not_found(tmp_path: Path) -> None:
    example = copy_example(tmp_path)
    inputs = Inputs(profiles=(str(example / "24752610.lprof"),), job=str(example / "mnist.sbatch"))
    slow_full = Gate(load_workspace(inputs))
    app = app_with(slow_full, quick=lambda: load_quick_workspace(inputs))
    try:
        async with app.run_test(size=SIZE) as pilot:
            screen = await wait_loaded(pilot)
            assert screen.workspace.partial
            function = screen.current_function
            assert function is not None and function.source_path is None  # not looked for
            assert not screen.query_one("#source-note").display
            assert static_text(screen.query_one("#advice-bar", Static)) == READING
            await pilot.press("3")
            await pilot.pause()
            assert static_text(screen.query_one("#diff-status", Static)) == EVALUATING
            assert screen.check_action("apply", ()) is False
            slow_full.release.set()
            await wait_for(pilot, lambda: not screen.workspace.partial)
            await pilot.pause()
            assert screen.check_action("apply", ()) is True
            assert "+#SBATCH --cpus-per-task=8" in static_text(
                screen.query_one("#job-diff", Static)
            )
            assert "dataloader-bound" in static_text(screen.query_one("#advice-bar", Static))
    finally:
        slow_full.release.set()


@async_test
async def test_a_failing_quick_stage_exits_2_without_the_full_load(tmp_path: Path) -> None:
    error = InputError(tmp_path / "x.lprof", "not a line_profiler file")

    def quick() -> Workspace:
        raise error

    full = Gate(advised_workspace(tmp_path))
    full.release.set()
    app = app_with(full, quick=quick)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.return_code is not None)
    assert app.return_code == 2
    assert app.load_error is error
    assert full.calls == 0


@async_test
async def test_a_failing_full_stage_after_the_quick_one_exits_2(tmp_path: Path) -> None:
    full_workspace = advised_workspace(tmp_path)
    error = InputError(tmp_path / "rules", "bad rule file")
    full = Gate(error=error)
    app = app_with(full, quick=lambda: quick_of(full_workspace, tmp_path))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_loaded(pilot)
            full.release.set()
            await wait_for(pilot, lambda: app.return_code is not None)
        assert app.return_code == 2
        assert app.load_error is error
    finally:
        full.release.set()


def test_q_during_the_full_load_exits_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The full load is abandoned on quit, not waited for."""
    full_workspace = advised_workspace(tmp_path)
    full = Gate(full_workspace)
    real_run = app_module.TuneAdvisorApp.run

    def headless_run(self: app_module.TuneAdvisorApp) -> None:
        async def quit_on_the_quick_screen(pilot: Pilot[object]) -> None:
            await wait_loaded(pilot)
            await wait_for(pilot, full.started.is_set)
            await self.action_quit()

        real_run(self, headless=True, size=SIZE, auto_pilot=quit_on_the_quick_screen)

    monkeypatch.setattr(app_module.TuneAdvisorApp, "run", headless_run)
    monkeypatch.setattr(app_module, "require_terminal", no_terminal_needed)  # headless
    try:
        start = time.monotonic()
        status = app_module.run_open(
            full, "tuneadvisor: test", quick=lambda: quick_of(full_workspace, tmp_path)
        )
        elapsed = time.monotonic() - start
        assert status == 0
        assert elapsed < 10, f"quit waited {elapsed:.1f} s for the full load"
        assert not full.release.is_set()  # it was still loading when the app ended
    finally:
        full.release.set()
