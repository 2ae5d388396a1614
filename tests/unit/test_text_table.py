"""Reading line_profiler's printed tables: real recorded output, and generated round trips."""

from __future__ import annotations

import codecs
import io
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import line_profiler
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tuneadvisor.errors import InputError
from tuneadvisor.profile.lprof import load_profile
from tuneadvisor.profile.model import FunctionTiming, Profile
from tuneadvisor.profile.table_cells import TableError
from tuneadvisor.profile.text_table import UNKNOWN_NAME, parse_table

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lprof"
TABLES = sorted(FIXTURES.glob("lp*.txt"))
SOURCE = (FIXTURES / "train_toy.py").read_text(encoding="utf-8").splitlines()
ELLIPSIS = "…"


def pickle_of(table: Path) -> Path:
    """The .lprof a recorded table was printed from: lp5.1.0-rmt.txt -> lp5.1.0.lprof."""
    match = re.fullmatch(r"(lp\d+\.\d+\.\d+).*\.txt", table.name)
    assert match, table
    return FIXTURES / f"{match[1]}.lprof"


def by_place(profile: Profile) -> dict[tuple[str, int], FunctionTiming]:
    return {(f.filename, f.first_lineno): f for f in profile.functions}


def assert_same_source(func: FunctionTiming, source: list[str]) -> None:
    """Every row's text is the source line, or (rich, narrow console) its start and '…'."""
    assert func.embedded_source, func.name
    for lineno, text in func.embedded_source.items():
        line = source[lineno - 1].rstrip()
        if text.endswith(ELLIPSIS) and text != line:
            assert line.startswith(text[: -len(ELLIPSIS)]), (lineno, text, line)
        else:
            assert text == line, (lineno, text, line)


# -- recorded tables ----------------------------------------------------------------------


@pytest.mark.parametrize("table", TABLES, ids=[t.name for t in TABLES])
def test_table_matches_the_pickle_it_was_printed_from(table: Path) -> None:
    text = load_profile(table)
    stats = load_profile(pickle_of(table))
    assert text.source_format == "text"
    expected_unit = 1e-3 if "-u1e-3" in table.name else 1e-6
    assert text.unit_s == pytest.approx(expected_unit)
    half_step = 0.05 * text.unit_s  # every cell here is printed as '%5.1f'
    pickled = by_place(stats)
    assert set(by_place(text)) == set(pickled)
    for place, func in by_place(text).items():
        original = pickled[place]
        if func.name != UNKNOWN_NAME:
            assert func.name == original.name
        assert [(ln.lineno, ln.hits) for ln in func.lines] == [
            (ln.lineno, ln.hits) for ln in original.lines
        ]
        for got, want in zip(func.lines, original.lines, strict=True):
            assert abs(got.time_s - want.time_s) <= half_step * (1 + 1e-9)


@pytest.mark.parametrize(
    "table", [t for t in TABLES if "nosource" not in t.name], ids=lambda t: t.name
)
def test_table_keeps_every_rows_source_text(table: Path) -> None:
    profile = load_profile(table)
    for func in profile.functions:
        assert_same_source(func, SOURCE)
        # Untimed rows too: the decorator, the def line, the comment.
        assert func.embedded_source[func.first_lineno] == "@profile"
        assert min(func.embedded_source) == func.first_lineno


def test_wrapped_rich_table_cuts_long_lines() -> None:
    """At 80 columns rich cuts long source lines; a wide console keeps them whole."""
    narrow = by_place(load_profile(FIXTURES / "lp5.1.0-r.txt"))
    wide = by_place(load_profile(FIXTURES / "lp5.1.0-r-wide.txt"))
    long_line = 42  # time.sleep(...) with a long comment
    assert narrow[("train_toy.py", 35)].embedded_source[long_line].endswith(ELLIPSIS)
    assert wide[("train_toy.py", 35)].embedded_source[long_line] == SOURCE[long_line - 1]


@pytest.mark.parametrize("version", ["4.1.3", "4.2.0", "5.1.0"])
def test_missing_source_tables(version: str) -> None:
    plain = load_profile(FIXTURES / f"lp{version}-nosource.txt")
    summarized = load_profile(FIXTURES / f"lp{version}-m-nosource.txt")
    # Without the source nothing names the function, except the -m summary.
    assert {f.name for f in plain.functions} == {UNKNOWN_NAME}
    names = {f.name for f in summarized.functions}
    assert names == {"load_batch", "step", "never_called", "train"}
    assert all(f.embedded_source == {} for f in plain.functions + summarized.functions)


@pytest.mark.parametrize("version", ["4.1.3", "4.2.0", "5.1.0"])
def test_sorted_tables_list_functions_by_total_time(version: str) -> None:
    profile = load_profile(FIXTURES / f"lp{version}-t.txt")
    totals = [f.total_s for f in profile.functions]
    assert totals == sorted(totals)


# -- tables as people paste them ----------------------------------------------------------

# Printed by line_profiler 5.1.0 (LineStats.print, output_unit=1e-6, summarize=True).
TABLE = """\
Timer unit: 1e-06 s

Total time: 0.0042 s
File: train.py
Function: load_batch at line 4

Line #      Hits         Time  Per Hit   % Time  Line Contents
==============================================================
     4                                           @profile
     5                                           def load_batch(i):
     6                                               # decode one batch
     7       120       4000.0     33.3     95.2      data = [math.sin(i + k) for k in range(200)]
     8       120        200.0      1.7      4.8      return data, sum(data)

Total time: 0.004421 s
File: train.py
Function: step at line 11

Line #      Hits         Time  Per Hit   % Time  Line Contents
==============================================================
    11                                           @profile
    12                                           def step(data):
    13       120         12.0      0.1      0.3      total = 0.0
    14     24120       1800.0      0.1     40.7      for x in data:
    15     24000       2600.0      0.1     58.8          total += x * x
    16       120          9.0      0.1      0.2      return total

  0.00 seconds - train.py:4 - load_batch
  0.00 seconds - train.py:11 - step
"""


def parsed(text: str) -> Profile:
    return parse_table(text, "pasted.txt")


def test_hand_checked_table() -> None:
    profile = parsed(TABLE)
    assert profile.unit_s == pytest.approx(1e-6)
    load_batch, step = profile.functions
    assert load_batch.key == ("train.py", 4, "load_batch")
    assert [(ln.lineno, ln.hits) for ln in load_batch.lines] == [(7, 120), (8, 120)]
    assert [ln.time_s for ln in load_batch.lines] == pytest.approx([4000e-6, 200e-6])
    assert load_batch.embedded_source[6] == "    # decode one batch"
    assert step.embedded_source[15] == "        total += x * x"
    assert step.total_s == pytest.approx(4421e-6)


def test_log_lines_before_and_after_the_table_are_skipped() -> None:
    text = (
        "srun: job 24752610 queued\nepoch 1 loss 0.3\nWrote profile results to x.lprof\n"
        + TABLE
        + "\nTotal time: 3 s\n\nslurmstepd: error: *** JOB 24752610 CANCELLED ***\n"
    )
    assert parsed(text) == parsed(TABLE)


def test_windows_line_endings() -> None:
    assert parsed(TABLE.replace("\n", "\r\n")) == parsed(TABLE)


def test_trailing_spaces_cut_by_a_terminal_copy() -> None:
    rich = (FIXTURES / "lp5.1.0-r-wide.txt").read_text(encoding="utf-8")
    stripped = "\n".join(line.rstrip() for line in rich.splitlines())
    assert parse_table(stripped, "x").functions == parse_table(rich, "x").functions


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_saved_with_a_byte_order_mark(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "pasted.txt"
    data = TABLE.encode(encoding)
    assert data.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    path.write_bytes(data)
    assert load_profile(path).functions == parsed(TABLE).functions


def test_two_tables_with_different_units() -> None:
    """Two pastes in one file: each table's cells are in its own 'Timer unit'."""
    in_ms = (FIXTURES / "lp5.1.0-u1e-3.txt").read_text(encoding="utf-8")
    profile = parsed(TABLE + "\n" + in_ms)
    assert profile.unit_s == pytest.approx(1e-6)
    assert profile.functions == parsed(TABLE).functions + parsed(in_ms).functions
    assert parsed(in_ms).unit_s == pytest.approx(1e-3)


def test_only_a_timer_unit_is_an_empty_profile() -> None:
    assert parsed("Timer unit: 1e-06 s\n\n").functions == ()


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ("  4000.0     33.3", "  4400.0     33.3", "per-hit 33.3 is not time / hits"),
        (" 95.2 ", " 59.2 ", "59.2 % does not match"),
        ("Total time: 0.0042 s", "Total time: 0.042 s", "% does not match"),
        ("Line #      Hits", "Line #      Hots", "header"),
        ("Timer unit: 1e-06 s", "Timer unit: 0 s", "not positive"),
        ("Timer unit: 1e-06 s", "Timer unit: lots s", "not a number"),
        ("Function: load_batch at line 4", "Function: load_batch", "line N"),
        ("     8       120", "     9       120", "expected line number 8"),
        ("  1800.0      0.1", "  1800.0x     0.1", "expected line number 14"),
        ("    12                ", "    12     1          ", "expected line number 13"),
        (
            "    16       120          9.0      0.1      0.2",
            "    16       120" + " " * 32,
            "missing",
        ),
        ("File: train.py\nFunction: step", "Fiel: train.py\nFunction: step", "expected 'File:'"),
        ("     7       120", "     7       -20", "hits '-20' is not a number"),
        ("4000.0     33.3", " 9e+03     33.3", "per-hit"),
    ],
)
def test_mangled_tables_are_refused(old: str, new: str, needle: str) -> None:
    assert old in TABLE
    with pytest.raises(TableError, match=re.escape(needle)):
        parsed(TABLE.replace(old, new, 1))


def test_a_function_printed_twice_is_refused() -> None:
    with pytest.raises(TableError, match="appears twice"):
        parsed(TABLE + TABLE)


GIVE_INSTEAD = "give the .lprof file, or the whole table as line_profiler printed it"


def without_rows(text: str, *numbers: int) -> str:
    """The text less the table rows whose line number is one of ``numbers`` (ANSI or not)."""
    row = re.compile(r" *(?:\x1b\[[0-9;]*m)?([0-9]+)(?:\x1b\[0m)? ")
    kept = []
    for line in text.splitlines(keepends=True):
        match = row.match(line)
        if match is None or int(match[1]) not in numbers:
            kept.append(line)
    assert len(kept) == len(text.splitlines()) - len(numbers)
    return "".join(kept)


def test_rows_cut_by_hand_are_refused_saying_what_to_give() -> None:
    """A shortened table (Project_HPC's) cannot be read back: the line says what to give."""
    with pytest.raises(TableError) as cut:
        parsed(without_rows(TABLE, 6, 7))
    assert str(cut.value) == (
        "table at line 9: expected line number 6, found 8: rows 6-7 are missing, as in a table"
        f" shortened by hand; {GIVE_INSTEAD}"
    )
    with pytest.raises(TableError, match=r"found 16: row 15 is missing, as in a table"):
        parsed(without_rows(TABLE, 15))


def test_rows_cut_from_a_rich_table_are_refused_the_same_way() -> None:
    rich = (FIXTURES / "lp5.1.0-r-wide.txt").read_text(encoding="utf-8")
    with pytest.raises(TableError, match=r"rows 13-14 are missing.*" + re.escape(GIVE_INSTEAD)):
        parse_table(without_rows(rich, 13, 14), "x")


def test_a_row_out_of_order_is_not_called_cut() -> None:
    with pytest.raises(TableError, match="expected line number 8, found '7") as err:
        parsed(TABLE.replace("     8       120", "     7       120", 1))
    assert "missing" not in str(err.value)


def test_a_table_cut_in_its_header_is_refused() -> None:
    with pytest.raises(TableError, match="ends where"):
        parsed(TABLE[: TABLE.index("Line #")])


def test_rows_adding_up_to_more_than_the_total() -> None:
    # Without percentages (line_profiler leaves them blank only when the total is 0).
    text = TABLE.replace("Total time: 0.0042 s", "Total time: 0 s")
    text = text.replace("     95.2      data", "           data").replace(
        "4.8      return", "   return"
    )
    with pytest.raises(TableError, match="more than 'Total time: 0 s'"):
        parsed(text)


def test_table_error_becomes_an_input_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "ticket.txt"
    path.write_text(TABLE.replace("  4000.0     33.3", "  4400.0     33.3"), encoding="utf-8")
    with pytest.raises(InputError, match=rf"^{re.escape(str(path))}: table at line \d+, row 7"):
        load_profile(path)


# -- generated tables: line_profiler prints, we read back -----------------------------------


@contextmanager
def console_columns(columns: int) -> Iterator[None]:
    """rich sizes a non-terminal console from $COLUMNS."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(columns)
    try:
        yield
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


_counts = st.one_of(st.integers(1, 2000), st.integers(1, 10**12))
_times = st.one_of(st.integers(0, 50_000), st.integers(0, 10**15))


@st.composite
def functions(draw: st.DrawFn) -> list[tuple[list[str], dict[int, tuple[int, int]]]]:
    """(body lines, {offset in body: (hits, time)}) for one to three functions."""
    result = []
    for _ in range(draw(st.integers(1, 3))):
        size = draw(st.integers(1, 10))
        body = [f"    x = x + {k}  # " + "pad " * draw(st.integers(0, 20)) for k in range(size)]
        timed = draw(st.dictionaries(st.integers(1, size), st.tuples(_counts, _times)))
        result.append((body, timed))
    return result


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    funcs=functions(),
    unit=st.sampled_from([1e-9, 1e-7, 1e-6]),
    output_unit=st.sampled_from([None, 1e-9, 1e-6, 1e-3, 1.0]),
    rich=st.booleans(),
    summarize=st.booleans(),
    sort=st.booleans(),
    with_source=st.booleans(),
    columns=st.sampled_from([60, 80, 120, 250]),
)
# A '%g' hit count ('1e+09') in a function whose total is 0 (no '% Time' cells) once read
# as the previous row's time.
@example(
    funcs=[(["    x = x + 0  # "], {1: (1000000000, 0)})],
    unit=1e-09,
    output_unit=None,
    rich=False,
    summarize=False,
    sort=False,
    with_source=True,
    columns=60,
)
def test_round_trip_through_line_profilers_printer(
    funcs: list[tuple[list[str], dict[int, tuple[int, int]]]],
    unit: float,
    output_unit: float | None,
    rich: bool,
    summarize: bool,
    sort: bool,
    with_source: bool,
    columns: int,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        filename = os.path.join(tmp, "generated.py")
        source: list[str] = []
        timings = {}
        for index, (body, timed) in enumerate(funcs):
            first = len(source) + 1
            source += [f"def f{index}(x):", *body, "", ""]
            timings[(filename, first, f"f{index}")] = [
                (first + offset, hits, time) for offset, (hits, time) in sorted(timed.items())
            ]
        if with_source:
            Path(filename).write_text("\n".join(source) + "\n", encoding="utf-8")
        out = io.StringIO()
        with console_columns(columns):
            line_profiler.LineStats(timings, unit).print(
                stream=out,
                output_unit=output_unit,
                summarize=summarize,
                sort=sort,
                rich=rich,
                config=False,
            )
        profile = parse_table(out.getvalue(), "generated.txt")

    printed_unit = output_unit or unit
    assert profile.unit_s == pytest.approx(printed_unit)
    got = by_place(profile)
    assert set(got) == {(fn, first) for fn, first, _ in timings}
    for (fn, first, name), entries in timings.items():
        func = got[(fn, first)]
        assert func.name == (name if with_source or summarize else UNKNOWN_NAME)
        assert [ln.lineno for ln in func.lines] == [lineno for lineno, _, _ in entries]
        for line, (_, hits, time) in zip(func.lines, entries, strict=True):
            if len(str(hits)) > 9:  # printed with %g: six significant digits
                assert line.hits == pytest.approx(hits, rel=1e-5)
            else:
                assert line.hits == hits
            # '%5.1f' in output units, or '%5.3g' when that is too wide.
            tolerance = 0.05 * printed_unit + 5e-3 * time * unit
            assert abs(line.time_s - time * unit) <= tolerance * (1 + 1e-9)
        if with_source:
            assert_same_source(func, source)
        else:
            assert func.embedded_source == {}


# -- wide numbers and older layouts -------------------------------------------------------

REALWORLD = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "profiles"
WIDE_SOURCE = (REALWORLD / "train_wide.py").read_text(encoding="utf-8").splitlines()
# The timings the two line_profiler 4.0.3 tables were printed from (see MANIFEST.md).
WIDE_TIMINGS = {
    ("train_wide.py", 4): [
        (6, 2_500_000, 180_000_000),
        (7, 2_502_500_000, 98_765_432_100),
        (8, 2_500_000_000, 1_234_567_890_123),
        (9, 2_500_000, 95_000_000),
    ],
    ("train_wide.py", 12): [
        (14, 1, 2_000),
        (15, 2_501, 1_500_000),
        (16, 2_500, 1_333_700_000_000),
        (17, 1, 900),
    ],
}


@pytest.mark.parametrize(
    ("name", "unit"), [("lp4.0.3-wide.txt", 1e-6), ("lp4.0.3-wide-ns.txt", 1e-9)]
)
def test_values_wider_than_their_columns_push_the_row_right(name: str, unit: float) -> None:
    """line_profiler before 4.1 never widens a column: hits past 10^9 and long times push."""
    profile = load_profile(REALWORLD / name)
    assert profile.unit_s == pytest.approx(unit)
    got = by_place(profile)
    assert set(got) == set(WIDE_TIMINGS)
    for place, entries in WIDE_TIMINGS.items():
        func = got[place]
        assert [(ln.lineno, ln.hits) for ln in func.lines] == [(n, h) for n, h, _ in entries]
        for line, (_, _, ticks) in zip(func.lines, entries, strict=True):
            assert line.time_s == pytest.approx(ticks * 1e-9, abs=0.05 * unit)
        assert_same_source(func, WIDE_SOURCE)


def test_the_oldest_layout_file_function_then_total_time() -> None:
    """line_profiler's own README: File, Function, Total time; integer times; indented."""
    profile = load_profile(REALWORLD / "line_profiler-2.1.2-README-pystone.txt")
    (func,) = profile.functions
    assert func.key == ("pystone.py", 149, "Proc2")
    assert [ln.lineno for ln in func.lines] == list(range(151, 160))
    assert {ln.hits for ln in func.lines} == {50000}
    assert func.lines[0].time_s == pytest.approx(82003e-6)
    assert func.total_s == pytest.approx(0.606656, abs=1e-6)
    assert func.embedded_source[149] == "@profile"
    assert func.embedded_source[153] == "        if Char1Glob == 'A':"


def test_both_orders_read_the_same() -> None:
    old = re.sub(r"(Total time: \S+ s)\n(File: .*)\n(Function: .*)\n", r"\2\n\3\n\1\n", TABLE)
    assert old != TABLE and old.index("File:") < old.index("Total time:")
    assert parsed(old) == parsed(TABLE)


def old_printer_table(rows: list[tuple[int, int, float]], source: list[str], first: int) -> str:
    """A table as line_profiler 3.x and 4.0 print it: fixed widths, wide values push."""
    template = "%6s %9s %12s %8s %8s  %-s"
    total = sum(time for _, _, time in rows)
    cells = {
        lineno: (
            hits,
            f"{time:5.1f}",
            f"{time / hits:5.1f}",
            f"{100 * time / total:5.1f}" if total else "",
        )
        for lineno, hits, time in rows
    }
    header = template % ("Line #", "Hits", "Time", "Per Hit", "% Time", "Line Contents")
    lines = [
        "Timer unit: 1e-09 s",
        "",
        f"Total time: {total * 1e-9:g} s",
        "File: wide.py",
        f"Function: f at line {first}",
        "",
        header,
        "=" * len(header),
    ]
    for offset, text in enumerate(source):
        lineno = first + offset
        lines.append(template % (lineno, *cells.get(lineno, ("", "", "", "")), text))
    return "\n".join(lines) + "\n"


def assert_reads_back(
    table: str, rows: list[tuple[int, int, float]], source: list[str], first: int
) -> None:
    (func,) = parsed(table).functions
    assert [(ln.lineno, ln.hits) for ln in func.lines] == [(n, h) for n, h, _ in rows]
    for line, (_, _, time) in zip(func.lines, rows, strict=True):
        assert line.time_s == pytest.approx(time * 1e-9, abs=0.05e-9)
    assert func.embedded_source == {first + i: text.rstrip() for i, text in enumerate(source)}


@pytest.mark.parametrize("digits", range(1, 16))  # 16 nines are no longer a float
@pytest.mark.parametrize("first", [1, 99_999, 1_234_567])
def test_numbers_of_every_width(digits: int, first: int) -> None:
    """Hits and times of 1 to 16 digits, line numbers past their column, source that starts
    with spaces or digits: the row is read by fields wherever the values push it."""
    big = int("9" * digits)
    source = ["def f(x):", "    1,", "        2.0", "", "    return x  # 7 8 9"]
    rows = [(first + 1, big, float(big)), (first + 2, 3, 0.5 * big), (first + 4, big, 1.0)]
    assert_reads_back(old_printer_table(rows, source, first), rows, source, first)


_source_lines = st.lists(
    st.text(st.sampled_from(" 0123456789.,e+-x=#()"), max_size=30), min_size=1, max_size=8
)


@settings(max_examples=300, deadline=None)
@given(
    source=_source_lines,
    first=st.one_of(st.integers(1, 2000), st.integers(1, 10**8)),
    data=st.data(),
)
def test_any_row_of_the_fixed_width_printer_reads_back(
    source: list[str], first: int, data: st.DataObject
) -> None:
    """Values of any width, source made of digits, dots and spaces, zero totals."""
    timed = data.draw(st.sets(st.integers(0, len(source) - 1)))
    rows = [
        (
            first + offset,
            data.draw(st.one_of(st.integers(1, 99), st.integers(1, 10**15))),
            float(data.draw(st.one_of(st.integers(0, 99), st.integers(0, 10**15)))),
        )
        for offset in sorted(timed)
    ]
    assert_reads_back(old_printer_table(rows, source, first), rows, source, first)
