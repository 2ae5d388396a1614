"""The Profile tab's panes draw themselves from one frozen ProfileView: the view is built by
hand here and handed to a pane mounted alone, as the watch panels are tested."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from textual.app import App, ComposeResult
from textual.widget import Widget

from tests.tui.helpers import async_test, mnist_workspace
from tests.tui.test_app import table_rows
from tuneadvisor.profile.analysis import ProfileAnalysis
from tuneadvisor.tui.profile_view import ProfileView, lines_status, source_note
from tuneadvisor.tui.view import FunctionSort, LineSort
from tuneadvisor.tui.widgets import FunctionsTable, LinesTable


class OnePane(App[None]):
    def __init__(self, pane: Widget) -> None:
        super().__init__()
        self.pane = pane

    def compose(self) -> ComposeResult:
        yield self.pane


def analysis(tmp_path: Path) -> ProfileAnalysis:
    found = mnist_workspace(tmp_path).analysis
    assert found is not None
    return found


def index_of(found: ProfileAnalysis, name: str) -> int:
    return next(i for i, f in enumerate(found.functions) if f.name == name)


def test_settled_keeps_a_choice_still_shown_and_else_takes_the_first_row(tmp_path: Path) -> None:
    found = analysis(tmp_path)
    test = index_of(found, "test")
    view = ProfileView(found, partial=False, current=test)
    assert view.settled() is view
    filtered = replace(view, function_query="train").settled()
    assert filtered.current_function is not None
    assert filtered.current_function.name == "train"
    assert replace(view, function_query="no such").settled().current is None


def test_the_lines_status_says_which_filter_empties_the_table(tmp_path: Path) -> None:
    found = analysis(tmp_path)
    view = ProfileView(found, partial=False, current=index_of(found, "train"), line_query="zzz")
    function = view.current_function
    assert function is not None
    assert lines_status(view, function, 0) == "/zzz · no lines match"
    assert lines_status(replace(view, line_query=""), function, 3).endswith("timed lines")
    # a filter that shows one line says so, not the function's whole count (issue 33 §4)
    total = len(function.lines)
    assert total > 1
    assert lines_status(replace(view, line_query="loader"), function, 1) == (
        f"/loader · 1 of {total} timed lines"
    )


def test_the_quick_stage_says_nothing_about_the_source_yet(tmp_path: Path) -> None:
    found = analysis(tmp_path)
    view = ProfileView(found, partial=True, current=0)
    assert source_note(view) is None
    assert source_note(replace(view, current=None)) is None


@async_test
async def test_the_functions_table_is_drawn_again_only_when_its_rows_change(
    tmp_path: Path,
) -> None:
    found = analysis(tmp_path)
    table = FunctionsTable(id="functions")
    async with OnePane(table).run_test() as pilot:
        view = ProfileView(found, partial=False, function_sort=FunctionSort.NAME).settled()
        table.view = view
        await pilot.pause()
        names = [row[0] for row in table_rows(table)]
        assert names == sorted(names) and len(names) == len(found.functions)
        assert str(table.border_title) == "Functions · sort: name"
        first_row = view.function_rows()[0][0]
        table.move_cursor(row=1)
        # only the choice changed (the cursor made it): the table is not filled again, which
        # would move the cursor to the choice's row
        table.view = replace(view, current=first_row)
        await pilot.pause()
        assert table.cursor_row == 1
        table.view = replace(view, function_query="tes").settled()
        await pilot.pause()
        assert [row[0] for row in table_rows(table)] == ["test()"]
        assert str(table.border_subtitle).startswith("/tes · 1 of")


@async_test
async def test_the_lines_table_opens_on_the_hottest_line_unless_told_to_keep(
    tmp_path: Path,
) -> None:
    found = analysis(tmp_path)
    table = LinesTable(id="lines")
    async with OnePane(table).run_test() as pilot:
        view = ProfileView(found, partial=False, current=index_of(found, "train"))
        table.view = view
        await pilot.pause()
        assert table.row_key_at_cursor() == "7"  # the DataLoader line took the most time
        table.move_to_key("12")  # loss.backward(): timed, so shown in every sort
        first = table.row_key_at_cursor()
        assert first == "12"
        table.view = replace(view, line_sort=LineSort.TIME, keep_line=True)
        await pilot.pause()
        assert table.row_key_at_cursor() == first
        table.view = replace(view, line_sort=LineSort.TIME)
        await pilot.pause()
        assert table.row_key_at_cursor() == "7"
        table.view = replace(view, current=None)
        await pilot.pause()
        assert table.row_count == 0
        assert str(table.border_subtitle) == "no function matches /"
