"""The TUI's behaviour, driven through Textual's Pilot."""

from __future__ import annotations

import io
import threading
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, LoadingIndicator, Static, TabbedContent
from textual.worker import WorkerFailed

from tests.tui.helpers import (
    SIZE,
    app_with,
    async_test,
    make_app,
    missing_source_workspace,
    mnist_workspace,
    no_terminal_needed,
    ranks_workspace,
    wait_for,
    wait_loaded,
)
from tuneadvisor.errors import InputError
from tuneadvisor.tui import app as app_module
from tuneadvisor.tui.dialogs import HelpScreen, LoadingScreen
from tuneadvisor.tui.screens import MainScreen
from tuneadvisor.tui.view import NO_FINDINGS
from tuneadvisor.tui.widgets import FunctionsTable, JobScriptView, LinesTable, PartsTable
from tuneadvisor.workspace.load import JobScriptText, Workspace


def plain(cell: object) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def table_rows(table: DataTable[Text]) -> list[list[str]]:
    return [[plain(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def row_for_line(table: DataTable[Text], lineno: int) -> list[str]:
    return [plain(c) for c in table.get_row(str(lineno))]


def line_numbers(screen: MainScreen) -> list[int]:
    return [int(row[0]) for row in table_rows(screen.query_one(LinesTable))]


def function_names(screen: MainScreen) -> list[str]:
    return [row[0] for row in table_rows(screen.query_one(FunctionsTable))]


def static_text(widget: Static) -> str:
    """What a Static shows, as plain text (Rich renderables rendered at 100 columns)."""
    content = widget.content
    if isinstance(content, Text | str):
        return plain(content)
    console = Console(width=100, file=io.StringIO(), color_system=None)
    with console.capture() as capture:
        console.print(content)
    return capture.get()


@async_test
async def test_top_function_is_selected_first_with_its_lines(tmp_path: Path) -> None:
    app = make_app(mnist_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        functions = screen.query_one(FunctionsTable)
        assert function_names(screen) == ["train()", "test()"]
        assert functions.cursor_row == 0
        assert app.focused is functions
        assert table_rows(functions)[0][1:] == ["train.py:5", "99.99 s", "96.7"]

        lines = screen.query_one(LinesTable)
        # The whole block (def line included), timed lines merged in.
        assert line_numbers(screen) == list(range(5, 16))
        loader = row_for_line(lines, 7)
        assert loader[:5] == ["7", "939", "84.50 s", "89.99 ms", "84.5"]
        assert loader[5].startswith("████████")  # heat bar
        assert loader[6] == "DataLoader"
        assert "enumerate(train_loader)" in loader[7]
        # An untimed line: source, no numbers.
        def_line = row_for_line(lines, 5)
        assert def_line[1:7] == ["", "", "", "", "", ""]
        assert def_line[7].startswith("def train(")
        assert lines.border_title is not None and "train()" in str(lines.border_title)

        summary = static_text(screen.query_one("#summary", Static))
        # the top kind heads it; each kind has its row (the whole summary wrapped at 100x30)
        assert summary.splitlines()[0] == "DataLoader 84.5 % of train()"
        rows = summary.splitlines()
        assert any(r.startswith("forward") and r.endswith("6.1 %     6.10 s") for r in rows)
        notes = static_text(screen.query_one("#notes", Static))
        assert "test() line 25 (11.8 %) waits for the GPU" in notes
        assert not screen.query_one(PartsTable).display
        assert not screen.query_one("#source-note").display


@async_test
async def test_selecting_another_function_changes_the_lines(tmp_path: Path) -> None:
    app = make_app(mnist_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("j")
        await pilot.pause()
        assert screen.current_function is not None
        assert screen.current_function.name == "test"
        assert line_numbers(screen) == list(range(18, 27))
        assert row_for_line(screen.query_one(LinesTable), 22)[:3] == ["22", "11", "2.50 s"]
        summary = static_text(screen.query_one("#summary", Static))
        assert summary.startswith("DataLoader 73.5 % of test()")

        await pilot.press("up")
        await pilot.pause()
        assert line_numbers(screen)[0] == 5

        await pilot.press("enter")  # choose it: focus goes to its lines
        await pilot.pause()
        assert app.focused is screen.query_one(LinesTable)


@async_test
async def test_slash_filters_functions_then_lines(tmp_path: Path) -> None:
    app = make_app(mnist_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("slash")
        search = screen.query_one("#search", Input)
        assert search.display and app.focused is search
        await pilot.press("t", "e", "s", "q")  # typed into the search, not quitting
        await pilot.pause()
        assert app.return_code is None
        assert function_names(screen) == []
        await pilot.press("backspace")
        await pilot.pause()
        assert function_names(screen) == ["test()"]
        assert line_numbers(screen)[0] == 18  # the only match is chosen
        await pilot.press("escape")  # clears the filter
        await pilot.pause()
        assert function_names(screen) == ["train()", "test()"]
        assert not search.display
        assert screen.current_function is not None
        assert screen.current_function.name == "test"  # the choice survives the filter

        # Lines: focus the lines pane, search the source text.
        screen.query_one(LinesTable).focus()
        await pilot.pause()
        await pilot.press("slash", *"ARGMAX", "enter")
        await pilot.pause()
        assert line_numbers(screen) == [25]
        assert app.focused is screen.query_one(LinesTable)
        assert "/ARGMAX" in str(screen.query_one(LinesTable).border_subtitle)


@async_test
async def test_f_cycles_the_kind_filter(tmp_path: Path) -> None:
    app = make_app(mnist_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("f")
        await pilot.pause()
        assert "kind: DataLoader" in str(screen.query_one(LinesTable).border_title)
        assert line_numbers(screen) == [7]
        await pilot.press("f")
        await pilot.pause()
        assert line_numbers(screen) == [8]  # transfer
        for _ in range(6):  # forward, loss, backward, optimizer, sync, other
            await pilot.press("f")
        await pilot.pause()
        assert line_numbers(screen) == [6, 14]  # other
        await pilot.press("f")
        await pilot.pause()
        assert line_numbers(screen) == list(range(5, 16))  # all again


@async_test
async def test_a_search_with_the_kind_filter_on_says_no_line_matches_both(tmp_path: Path) -> None:
    """/loss with the DataLoader filter on: train() has a DataLoader line and lines with
    "loss", none both; the table says so rather than that there is no DataLoader line."""
    app = make_app(mnist_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("f")  # kind: DataLoader
        await pilot.pause()
        assert line_numbers(screen) == [7]
        screen.query_one(LinesTable).focus()
        await pilot.press("slash", *"loss", "enter")
        await pilot.pause()
        assert line_numbers(screen) == []
        status = str(screen.query_one(LinesTable).border_subtitle)
        assert status == "/loss · no line matches both (DataLoader: 1 line, /loss: 3 lines)"
        await pilot.press("f", "f", "f", "f")  # transfer, forward, loss, backward
        await pilot.pause()
        assert line_numbers(screen) == [12]  # loss.backward(): both again
        assert "no line" not in str(screen.query_one(LinesTable).border_subtitle)


@async_test
async def test_s_changes_the_order(tmp_path: Path) -> None:
    app = make_app(mnist_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        # Functions pane focused: time -> name.
        await pilot.press("s")
        await pilot.pause()
        assert function_names(screen) == ["test()", "train()"]
        assert "sort: name" in str(screen.query_one(FunctionsTable).border_title)
        # The chosen function stays chosen when the order changes.
        assert screen.current_function is not None
        assert screen.current_function.name == "train"
        await pilot.press("s")
        await pilot.pause()
        assert function_names(screen) == ["train()", "test()"]

        # Lines pane (tab: straight to the lines, not the kinds panel): line -> time -> hits
        await pilot.press("tab")
        await pilot.pause()
        assert app.focused is screen.query_one(LinesTable)
        await pilot.press("s")
        await pilot.pause()
        assert line_numbers(screen)[:3] == [7, 10, 12]
        await pilot.press("s")
        await pilot.pause()
        assert line_numbers(screen)[:2] == [7, 8]  # 939 hits, then 938 (line order)
        assert line_numbers(screen)[-1] == 6  # 1 hit
        await pilot.press("s")
        await pilot.pause()
        assert line_numbers(screen) == list(range(5, 16))


@async_test
async def test_question_mark_shows_help_and_escape_closes_it(tmp_path: Path) -> None:
    app = make_app(mnist_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        keys = static_text(app.screen.query_one("#help-keys", Static))
        for needle in ("search", "sort", "kind filter", "quit"):
            assert needle in keys
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


@async_test
async def test_q_quits_with_status_0(tmp_path: Path) -> None:
    app = make_app(mnist_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0
    assert app.load_error is None


@async_test
async def test_tabs_show_findings_and_the_job_script(tmp_path: Path) -> None:
    app = make_app(mnist_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        tabs = screen.query_one(TabbedContent)
        await pilot.press("2")
        await pilot.pause()
        assert tabs.active == "findings"
        assert static_text(screen.query_one("#findings-view", Static)) == NO_FINDINGS
        await pilot.press("3")
        await pilot.pause()
        assert tabs.active == "job"
        job = [line.rstrip() for line in static_text(screen.query_one(JobScriptView)).splitlines()]
        assert job[0] == " 1 │ #!/bin/bash"
        assert job[4] == " 5 │ #SBATCH --cpus-per-task=1"
        assert screen.query_one("#job-pane").border_title == "mnist.sbatch"
        await pilot.press("1")
        await pilot.pause()
        assert tabs.active == "profile"


@async_test
async def test_missing_source_still_shows_the_numbers(tmp_path: Path) -> None:
    app = make_app(missing_source_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        note = screen.query_one("#source-note", Static)
        assert note.display
        assert "source not found: /cluster/home/alice/mnist/train.py" in static_text(note)
        assert line_numbers(screen) == list(range(6, 16))  # timed lines only, no block
        loader = row_for_line(screen.query_one(LinesTable), 7)
        assert loader[:5] == ["7", "939", "84.50 s", "89.99 ms", "84.5"]
        assert loader[7] == ""


@async_test
async def test_several_files_are_compared_by_part(tmp_path: Path) -> None:
    app = make_app(ranks_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        parts = screen.query_one(PartsTable)
        assert parts.display
        rows = table_rows(parts)
        assert [r[:2] for r in rows] == [["rank0.lprof", "103.4 s"], ["rank1.lprof", "51.70 s"]]
        assert rows[0][2].startswith("DataLoader 84.1 %")
        assert "in 2 files" in app.sub_title


@async_test
async def test_job_only_opens_on_the_job_script(tmp_path: Path) -> None:
    workspace = Workspace(analysis=None, job=JobScriptText("job.sbatch", "#!/bin/bash\n"))
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.query_one(TabbedContent).active == "job"
        await pilot.press("s", "f", "slash")  # nothing to sort, filter or search: no crash
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


@async_test
async def test_narrow_terminal_stacks_the_panes(tmp_path: Path) -> None:
    app = make_app(mnist_workspace(tmp_path))
    async with app.run_test(size=(70, 30)) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.has_class("-narrow")
        functions = screen.query_one("#left")
        side = screen.query_one("#side")
        assert side.region.y > functions.region.y  # under it, not beside it
        assert line_numbers(screen)[0] == 5


@async_test
async def test_input_error_exits_with_status_2_and_the_message(tmp_path: Path) -> None:
    error = InputError(tmp_path / "x.lprof", "not a line_profiler file")

    def load() -> Workspace:
        raise error

    app = app_with(load)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.return_code is not None)
    assert app.return_code == 2
    assert app.load_error is error
    assert str(app.load_error) == f"{tmp_path / 'x.lprof'}: not a line_profiler file"


@async_test
async def test_a_loader_bug_is_not_reported_as_bad_input() -> None:
    def load() -> Workspace:
        raise RuntimeError("bug in the loader")

    app = app_with(load)
    with pytest.raises(WorkerFailed, match="bug in the loader"):
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.return_code is not None)
    assert app.return_code == 1
    assert app.load_error is None


def test_run_open_raises_the_error_after_the_app_exits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run_open: the error leaves once the app is gone; the CLI prints it (tuneadvisor: ...)."""
    events: list[str] = []
    real_run = app_module.TuneAdvisorApp.run

    def headless_run(self: app_module.TuneAdvisorApp) -> None:
        real_run(self, headless=True, size=SIZE)
        events.append("app exited")

    def load() -> Workspace:
        raise InputError(tmp_path / "x.lprof", "truncated pickle\n(at byte 12)")

    monkeypatch.setattr(app_module.TuneAdvisorApp, "run", headless_run)
    monkeypatch.setattr(app_module, "require_terminal", no_terminal_needed)  # headless
    real_print = print

    def recording_print(*args: object, **kwargs: object) -> None:
        events.append("printed")
        real_print(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("builtins.print", recording_print)
    # the error leaves run_open once the app is gone, for the CLI's one line with its prefix
    with pytest.raises(InputError) as raised:
        app_module.run_open(load, "tuneadvisor: x.lprof")
    assert events == ["app exited"]
    assert raised.value.one_line() == f"{tmp_path / 'x.lprof'}: truncated pickle (at byte 12)"


def test_run_open_returns_0_on_quit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = mnist_workspace(tmp_path)

    def headless_run(self: app_module.TuneAdvisorApp) -> None:
        async def quit_when_loaded(pilot: Pilot[object]) -> None:
            await wait_loaded(pilot)
            await self.action_quit()

        real_run(self, headless=True, size=SIZE, auto_pilot=quit_when_loaded)

    real_run = app_module.TuneAdvisorApp.run
    monkeypatch.setattr(app_module.TuneAdvisorApp, "run", headless_run)
    monkeypatch.setattr(app_module, "require_terminal", no_terminal_needed)  # headless
    assert app_module.run_open(lambda: workspace, "tuneadvisor: test") == 0


@async_test
async def test_slow_loader_shows_the_loading_state_first(tmp_path: Path) -> None:
    workspace = mnist_workspace(tmp_path)
    release = threading.Event()
    started = threading.Event()

    def slow_load() -> Workspace:
        started.set()
        release.wait(timeout=30)
        return workspace

    app = app_with(slow_load)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, started.is_set)
            await pilot.pause()
            assert isinstance(app.screen, LoadingScreen)
            assert app.screen.query_one(LoadingIndicator).display
            assert "Loading" in static_text(app.screen.query_one("#loading-label", Static))
            await pilot.press("j")  # the UI answers keys while the loader runs
            assert isinstance(app.screen, LoadingScreen)
            release.set()
            screen = await wait_loaded(pilot)
            assert function_names(screen) == ["train()", "test()"]
    finally:
        release.set()


@async_test
async def test_help_opened_while_loading_does_not_block_the_main_screen(
    tmp_path: Path,
) -> None:
    workspace = mnist_workspace(tmp_path)
    release = threading.Event()

    def slow_load() -> Workspace:
        release.wait(timeout=30)
        return workspace

    app = app_with(slow_load)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            release.set()
            await wait_loaded(pilot)
    finally:
        release.set()


def test_open_of_a_job_script_as_the_profile_is_one_line_before_the_screen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24, point 17: no alternate screen flashed, the prefix, the hint, exit 2."""
    from tuneadvisor import cli

    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --time=1:00:00\npython train.py\n")

    def no_app(self: app_module.TuneAdvisorApp) -> None:
        raise AssertionError("the app started")

    monkeypatch.setattr(app_module.TuneAdvisorApp, "run", no_app)
    assert cli.main(["open", str(job)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"tuneadvisor: {job}: a Slurm job script (#! and #SBATCH lines), not a profile: "
        "pass it with --job\n"
    )


@async_test
async def test_tab_never_stops_on_time_by_kind(tmp_path: Path) -> None:
    """Issue 33 §4: Tab stopped on the "Time by kind" summary, where `/` filters the
    functions table instead; Tab goes between the tables only."""
    app = make_app(mnist_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        seen = set()
        for _ in range(6):
            await pilot.press("tab")
            focused = app.focused
            seen.add(focused.id if focused is not None else None)
        assert "side" not in seen and "summary" not in seen
        assert {"functions", "lines"} <= seen
        assert screen.query_one("#side").can_focus is False


@async_test
async def test_the_search_prompt_is_not_under_a_toast(tmp_path: Path) -> None:
    """Issue 33 §4: the "Written" toast covered the search prompt opened after it."""
    app = make_app(mnist_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        app.notify("Written: mnist.tuned.sbatch", timeout=30)
        await wait_for(pilot, lambda: len(app._notifications) == 1)
        await pilot.press("slash")
        await wait_for(pilot, lambda: len(app._notifications) == 0)
        assert app.screen.query_one("#search").display
