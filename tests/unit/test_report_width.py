"""The text report's line tables fit the terminal (issue 31 §3): a long source line is cut at
its end with "…", never a number; a terminal wrapped such a row into the next. The bundled
example is real kernprof output whose loop lines run past 100 columns. JSON is unchanged."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import REPO
from tuneadvisor.cli import main
from tuneadvisor.report.text import render_analysis
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import load_workspace

EXAMPLE = ["examples/mnist/24752610.lprof", "--job", "examples/mnist/mnist.sbatch"]
LONG = "data, target = data.to(device, non_blocking=True), target.to(device, non_blocking=True)"


def _report(
    fmt: str, columns: int, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> str:
    mp.chdir(REPO)
    mp.setenv("COLUMNS", str(columns))  # what shutil.get_terminal_size reads first
    assert main(["report", *EXAMPLE, "--format", fmt]) == 0
    return capsys.readouterr().out


def _table(text: str) -> tuple[int, list[str]]:
    """Where the first table's Source column starts, and that table's rows."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("Line  Hits"))
    rows = []
    for line in lines[at + 2 :]:
        if not line:
            break
        rows.append(line)
    return lines[at].index("Source"), rows


def _same_numbers_cut_source(narrow: list[str], wide: list[str], start: int) -> None:
    """Each narrow row is the wide one: every cell before the source the same, the source
    whole or its start followed by "…"."""
    assert len(narrow) == len(wide)
    for cut, whole in zip(narrow, wide, strict=True):
        assert cut[:start] == whole[:start]
        source, full = cut[start:], whole[start:]
        assert source == full or (source.endswith("…") and full.startswith(source[:-1]))


@pytest.mark.parametrize("columns", [80, 100, 132])
def test_the_line_table_fits_the_terminal_and_cuts_only_the_source(
    columns: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    start, wide = _table(_report("text", 1000, capsys, monkeypatch))
    assert any(LONG in row for row in wide) and max(map(len, wide)) > 100
    narrow_start, narrow = _table(_report("text", columns, capsys, monkeypatch))
    assert narrow_start == start
    assert max(map(len, narrow)) <= columns
    assert any(row.endswith("…") for row in narrow)
    _same_numbers_cut_source(narrow, wide, start)


def test_a_terminal_narrower_than_the_numbers_keeps_every_number_and_the_lines_start(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    start, wide = _table(_report("text", 1000, capsys, monkeypatch))
    _, narrow = _table(_report("text", 40, capsys, monkeypatch))
    _same_numbers_cut_source(narrow, wide, start)
    (long_row,) = [row for row in narrow if row.split()[0] == "205"]  # LONG, cut
    assert len(long_row[start:]) == 12  # the source's least: 11 characters and "…"


def test_the_json_report_keeps_the_whole_source_whatever_the_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    narrow = _report("json", 40, capsys, monkeypatch)
    assert narrow == _report("json", 1000, capsys, monkeypatch)
    assert LONG in narrow


@functools.cache
def _example_analysis() -> object:
    workspace = load_workspace(Inputs(profiles=(str(REPO / EXAMPLE[0]),)), cwd=REPO)
    return workspace.analysis


@settings(max_examples=40)
@given(width=st.integers(min_value=1, max_value=400))
def test_any_width_cuts_nothing_but_the_source_and_fits_where_the_numbers_leave_room(
    width: int,
) -> None:
    analysis = _example_analysis()
    start, wide = _table("\n".join(render_analysis(analysis, 10_000)))  # type: ignore[arg-type]
    _, rows = _table("\n".join(render_analysis(analysis, width)))  # type: ignore[arg-type]
    _same_numbers_cut_source(rows, wide, start)
    assert any(LONG in row for row in wide)
    for row in rows:  # within the width, or the source's least where the numbers take it
        assert len(row) <= width or len(row[start:]) <= 12


def test_without_a_terminal_or_columns_the_table_keeps_to_100(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A file, a pipe, a help ticket: 100 columns; $COLUMNS wins where it is set."""
    import os

    from tuneadvisor.report.text import report_width

    def no_terminal(fd: int) -> os.terminal_size:
        raise OSError(25, "Inappropriate ioctl for device")

    monkeypatch.setattr(os, "get_terminal_size", no_terminal)
    monkeypatch.delenv("COLUMNS", raising=False)
    assert report_width() == 100
    monkeypatch.setenv("COLUMNS", "not a number")
    assert report_width() == 100
    monkeypatch.setenv("COLUMNS", "72")
    assert report_width() == 72
