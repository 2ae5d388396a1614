"""Reading the table ``python -m line_profiler [-r] [-m] [-t] [-u U] X.lprof`` prints.

That is what people paste into help tickets, what ``%lprun`` shows in a notebook and what
lands in Slurm output files. The layout (line_profiler 1.0 to 5.x)::

    Timer unit: 1e-06 s                 output unit of every Time / Per Hit cell

    Total time: 0.0177613 s             one section per function ...
    File: train.py                      ... or "Could not find file train.py" and 3 more
    Function: train at line 35              lines when the source was missing

    Line #      Hits         Time  Per Hit   % Time  Line Contents
    ==============================================================
        35                                           @profile
        37         1          0.4      0.4      0.0      losses = []

      0.02 seconds - train.py:35 - train    -m: one summary line per function

With ``-r`` (rich) the rows carry ANSI colours, and when the source is wider than the
console (80 columns in a Slurm log) rich wraps the numbers column onto extra lines while the
source column keeps one line per row, cut with "…". Rows are therefore read as two columns:
the numbers as one token stream, the source as one line per row.

Without rich, each row is one line read by fields: a value wider than its column pushes the
rest of the row right (line_profiler before 4.1 never widens its columns: long runs in
microseconds, ``1e-09 s`` units from ``%lprun``, hit counts past 10^9), so the source starts
after the last number, not where the header says. The oldest line_profiler printed
``File:``, ``Function:`` and then ``Total time:`` (its README showed that until 2.x); both
orders are read, and a table pasted with an indentation (a code block in a ticket) is read
as if it had none.

Parsed cells are checked against each other (per-hit = time / hits, % of the total) within
their printed precision (`table_cells`), so a table that was mangled or misread fails
instead of loading wrong numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tuneadvisor.profile.model import FunctionTiming, LineTiming, Profile
from tuneadvisor.profile.table_cells import (
    LINENO,
    NUMBER,
    Cells,
    Row,
    Section,
    TableError,
    check_times,
    hits_of,
    line_number,
    number,
    positive,
)

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_TIMER = re.compile(r"( *)Timer unit: (\S+) s")
_TOTAL = re.compile(r"Total time: (\S+) s")
_FILE = re.compile(r"File: (.*)")
# A function's name and a file's path in one line, at most (no real one is near it; bounded,
# the search for " at line " and ":N - " after them is tried from one place only)
_MAX_NAME = 65536
_FUNCTION = re.compile(rf"Function: (.{{0,{_MAX_NAME}}}) at line ([0-9]{{1,9}})")
_MISSING = re.compile(r"Could not find file (.*)")
_HEADER = re.compile(r" *(Line #) +(Hits) +(Time) +(Per Hit) +(% Time) +Line Contents")
_RULE = re.compile(r"=+")
_BLANK = re.compile("")
_SUMMARY = re.compile(rf" *(\S+) seconds - (.{{0,{_MAX_NAME}}}):([0-9]{{1,9}}) - (.*)")
# As line_profiler prints them ('%d', '%5.1f', '%g'); bounded, so int() and float() stay cheap.
# Hits as '%d', or '%g' past the column's width ('1e+09', '1.23457e+09').
_HITS = re.compile(r"[0-9]{1,40}|[0-9](?:\.[0-9]{1,40})?e\+[0-9]{1,3}")
_LEADING_LINENO = re.compile(r" *([0-9]{1,12})(?: |$)")
_NEXT_TOKEN = re.compile(r" +(\S+)")
# Wider than any real numbers column, even with line_profiler 5's configurable widths.
_MAX_NUMBERS_WIDTH = 200
_NUMBERS_PREFIX = re.compile(r"[0-9.e+\- ]*")  # what the numbers column can hold
# line_profiler's apology when it cannot find the source, after "Could not find file".
_MISSING_LINES = 4
# Lines from 'Total time:' to the header: 4, or 8 with the missing-source note.
_HEADER_WITHIN = 8
UNKNOWN_NAME = "<unknown>"


def parse_table(text: str, origin: str) -> Profile:
    """The Profile a printed line_profiler table describes; raises TableError."""
    lines = [_clean(line) for line in text.splitlines()]
    parser = _Parser(lines)
    parser.run()
    if not parser.units:
        raise TableError("no 'Timer unit:' line, so not a line_profiler table")
    functions = tuple(parser.function(section) for section in parser.sections)
    keys = [f.key for f in functions]
    if len(set(keys)) != len(keys):
        raise TableError("a function appears twice")
    return Profile(
        origin=origin,
        unit_s=min(parser.units),
        functions=functions,
        source_format="text",
    )


def _clean(line: str) -> str:
    return _ANSI.sub("", line).rstrip()


class _Parser:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.at = 0
        self.indent = ""  # the 'Timer unit:' line's, taken off every line of its table
        self.units: list[float] = []
        self.sections: list[Section] = []
        self.summary: dict[tuple[str, int], str] = {}

    # -- cursor

    def line(self, at: int) -> str | None:
        if at >= len(self.lines):
            return None
        line = self.lines[at]
        return line[len(self.indent) :] if line.startswith(self.indent) else line

    def peek(self) -> str | None:
        return self.line(self.at)

    def ahead(self, count: int) -> list[str]:
        """The next ``count`` lines after the current one (fewer at the end)."""
        end = min(len(self.lines), self.at + 1 + count)
        return [line for at in range(self.at + 1, end) if (line := self.line(at)) is not None]

    def take(self, what: str) -> str:
        line = self.peek()
        if line is None:
            raise TableError(f"line {self.at + 1}: the table ends where {what} should be")
        self.at += 1
        return line

    def expect(self, pattern: re.Pattern[str], what: str) -> re.Match[str]:
        line = self.take(what)
        match = pattern.fullmatch(line)
        if match is None:
            raise TableError(f"line {self.at}: expected {what}, found {line[:60]!r}")
        return match

    # -- structure

    def run(self) -> None:
        """Skip whatever precedes a 'Timer unit:' line (a log, a prompt), then read tables.

        Any other line between sections ends the table; a later 'Timer unit:' starts another.
        """
        unit: float | None = None
        while (line := self.peek()) is not None:
            if match := _TIMER.fullmatch(self.lines[self.at]):
                self.indent = match[1]
                unit = positive(match[2], f"line {self.at + 1}: timer unit")
                self.units.append(unit)
                self.at += 1
            elif unit is None or not line:
                self.at += 1
            elif _TOTAL.fullmatch(line) and self.section_follows():
                self.sections.append(self.section(unit))
            elif _FILE.fullmatch(line) and self.old_section_follows():
                self.sections.append(self.old_section(unit))
            elif match := _SUMMARY.fullmatch(line):
                self.summary[(match[2], int(match[3]))] = match[4]
                self.at += 1
            else:
                unit = None  # output that follows the table
                self.indent = ""
                self.at += 1

    def section_follows(self) -> bool:
        """Whether a 'Total time:' line opens a function's table (a job may print its own).

        It does if 'File:' or the missing-source note follows, or the table's header comes
        within a few lines, before any other 'Total time:' or 'Timer unit:'.
        """
        after = self.ahead(_HEADER_WITHIN)
        if after and _FILE.fullmatch(after[0]):
            return True
        if len(after) > 1 and not after[0] and _MISSING.fullmatch(after[1]):
            return True
        for line in after:
            if _HEADER.fullmatch(line):
                return True
            if _TOTAL.fullmatch(line) or _TIMER.fullmatch(line):
                return False
        return False

    def old_section_follows(self) -> bool:
        """Whether 'File:' opens a section in the oldest order: File, Function, Total time."""
        after = self.ahead(2)
        return (
            len(after) == 2
            and _FUNCTION.fullmatch(after[0]) is not None
            and _TOTAL.fullmatch(after[1]) is not None
        )

    def section(self, unit_s: float) -> Section:
        total = self.expect(_TOTAL, "'Total time:'")[1]
        number(total, f"line {self.at}: total time")
        line = self.take("'File:'")
        if match := _FILE.fullmatch(line):
            function = self.expect(_FUNCTION, "'Function: NAME at line N'")
            section = Section(match[1], function[1], int(function[2]), unit_s, total)
        elif not line:
            missing = self.expect(_MISSING, "'Could not find file'")
            for _ in range(_MISSING_LINES - 1):
                self.take("the missing-source note")
            section = Section(missing[1], None, None, unit_s, total, has_source=False)
        else:
            raise TableError(f"line {self.at}: expected 'File:', found {line[:60]!r}")
        self.table(section)
        return section

    def old_section(self, unit_s: float) -> Section:
        filename = self.expect(_FILE, "'File:'")[1]
        function = self.expect(_FUNCTION, "'Function: NAME at line N'")
        total = self.expect(_TOTAL, "'Total time:'")[1]
        number(total, f"line {self.at}: total time")
        section = Section(filename, function[1], int(function[2]), unit_s, total)
        self.table(section)
        return section

    def table(self, section: Section) -> None:
        """The blank line, header, rule and rows that follow a section's heading."""
        self.expect(_BLANK, "a blank line")
        header = self.expect(_HEADER, "the 'Line #  Hits  Time ...' header")
        self.expect(_RULE, "a '====' rule")
        body_start = self.at
        body: list[str] = []
        while (row := self.peek()) is not None and row:
            body.append(row)
            self.at += 1
        columns = _Columns.of(header)
        if columns.numbers > _MAX_NUMBERS_WIDTH:
            raise TableError(f"line {body_start - 1}: the header is implausibly wide")
        section.rows = _body_rows(body, columns, section, body_start)

    def function(self, section: Section) -> FunctionTiming:
        first = section.first_lineno
        if first is None:
            first = section.rows[0][0] if section.rows else 0
        name = section.name
        if name is None:
            name = self.summary.get((section.filename, first), UNKNOWN_NAME)
        lines = tuple(
            LineTiming(lineno, hits_of(cells.hits), float(cells.time) * section.unit_s)
            for lineno, cells, _ in section.rows
            if cells is not None
        )
        source = {lineno: text for lineno, _, text in section.rows} if section.has_source else {}
        return FunctionTiming(section.filename, first, name, lines, source)


# -- rows ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Columns:
    """Where the header's right-aligned columns end: the widths line_profiler printed with."""

    lineno: int  # end of 'Line #'
    numbers: int  # end of '% Time': the numbers column, when no value pushed it
    percent: int  # width of the '% Time' column

    @classmethod
    def of(cls, header: re.Match[str]) -> _Columns:
        return cls(header.end(1), header.end(5), header.end(5) - header.end(4) - 1)


class _NotPlain(Exception):
    """The body is not one row per line read by fields (rich wrapped it)."""


class _RowsCut(_NotPlain):
    """A row's line number jumps ahead: rows were cut, whichever layout the table has."""


def _body_rows(body: list[str], columns: _Columns, section: Section, start: int) -> list[Row]:
    """(lineno, cells or None, source text) for each row of one function's table."""
    where = f"table at line {start + 1}"
    if not body:
        return []
    # line_profiler leaves '% Time' blank in every row when the total is 0, and only then.
    has_percent = number(section.total, f"{where}: total time") > 0
    try:
        rows = _plain_rows(body, columns, section, has_percent)
    except _NotPlain as plain:
        try:
            rows = _wrapped_rows(body, columns, section, has_percent, where)
        except _NoColumn:
            raise TableError(f"{where}: {plain}") from None
        except TableError:
            if isinstance(plain, _RowsCut):  # says more than the misaligned rich reading
                raise TableError(f"{where}: {plain}") from None
            raise
    check_times(rows, section, where)
    return rows


def _plain_rows(
    body: list[str], columns: _Columns, section: Section, has_percent: bool
) -> list[Row]:
    """One row per line, its cells read as fields: a wide value pushes what follows it.

    The source starts two spaces after the numbers column, or after the last number when
    the numbers pushed past it.
    """
    lineno = section.first_lineno
    rows: list[Row] = []
    for line in body:
        lead = _LEADING_LINENO.match(line)
        if lead is None or (lineno is not None and int(lead[1]) != lineno):
            cut = _rows_cut(lineno, None if lead is None else int(lead[1]))
            if cut is not None:
                raise _RowsCut(cut)
            raise _NotPlain(f"expected line number {lineno}, found {line.strip()[:20]!r}")
        lineno = int(lead[1])
        pos = lead.end(1)
        push = max(0, pos - columns.lineno)  # a line number wider than its column
        cells: Cells | None = None
        token = _NEXT_TOKEN.match(line, pos)
        if token is None or token.start(1) >= columns.numbers + push:
            end = columns.numbers + push
        else:
            values = []
            for _ in range(3 + has_percent):
                token = _NEXT_TOKEN.match(line, pos)
                if token is None:
                    raise _NotPlain(f"row {lineno} is missing cells")
                values.append(token[1])
                pos = token.end()
            if not _HITS.fullmatch(values[0]) or not all(
                NUMBER.fullmatch(value) for value in values[1:]
            ):
                raise _NotPlain(f"row {lineno}: {' '.join(values)[:60]!r} are not its cells")
            percent = values[3] if has_percent else None
            cells = Cells(values[0], values[1], values[2], percent)
            end = max(columns.numbers, pos if has_percent else pos + 1 + columns.percent)
        if line[pos : end + 2].strip():
            raise _NotPlain("cannot tell the numbers from the line contents")
        rows.append((lineno, cells, line[end + 2 :]))
        lineno += 1
    return rows


def _rows_cut(expected: int | None, found: int | None) -> str | None:
    """line_profiler prints every line of a function, so a later line number means rows were
    cut (a table shortened by hand): no reading undoes that, so say what to give instead."""
    if expected is None or found is None or found <= expected:
        return None
    missing = f"row {expected} is" if found == expected + 1 else f"rows {expected}-{found - 1} are"
    return (
        f"expected line number {expected}, found {found}: {missing} missing, as in a table "
        "shortened by hand; give the .lprof file, or the whole table as line_profiler printed it"
    )


class _NoColumn(Exception):
    """No common column splits the numbers from the source."""


def _wrapped_rows(
    body: list[str], columns: _Columns, section: Section, has_percent: bool, where: str
) -> list[Row]:
    """Rich's layout: the numbers as one token stream, the source one line per row."""
    width = _numbers_width(body, columns.numbers)
    tokens = [token for line in body for token in line[:width].split()]
    texts = [line[width + 2 :].rstrip() for line in body]
    first = section.first_lineno
    if first is None:
        first = line_number(tokens[0], f"{where}: line number") if tokens else 0
    rows = _rows(tokens, first, has_percent, where)
    # Rich may wrap a row's numbers onto more lines, never put two rows on one.
    if len(rows) > len(body):
        raise TableError(f"{where}: more rows than lines")
    if any(texts[len(rows) :]):
        raise TableError(f"{where}: more source lines than rows")
    return [(lineno, cells, texts[i]) for i, (lineno, cells, _) in enumerate(rows)]


def _numbers_width(body: list[str], header_width: int) -> int:
    """Where rich's numbers column ends: header_width, or less when rich wrapped it.

    The widest split that leaves only number characters on the left and a two-space gap on
    every line; a body indented throughout may lose that common indentation, nothing more.
    """
    # How far each line holds only number characters (the whole line may).
    reach = [m.end() if (m := _NUMBERS_PREFIX.match(line)) else 0 for line in body]
    for width in range(header_width, 0, -1):
        if all(
            (width <= r or r == len(line)) and not line[width : width + 2].strip()
            for line, r in zip(body, reach, strict=True)
        ):
            return width
    raise _NoColumn


def _rows(tokens: list[str], first: int, has_percent: bool, where: str) -> list[Row]:
    """Rows from the numbers column: 'N' alone, or 'N hits time per-hit [percent]'."""
    rows: list[Row] = []
    at, lineno, count = 0, first, len(tokens)
    cells = 3 + has_percent
    while at < count:
        if tokens[at] != str(lineno):
            found = int(tokens[at]) if LINENO.fullmatch(tokens[at]) else None
            cut = _rows_cut(lineno, found)
            if cut is not None:
                raise TableError(f"{where}: {cut}")
            raise TableError(f"{where}: expected line number {lineno}, found {tokens[at][:20]!r}")
        at += 1
        if not _is_timed(tokens, at, lineno, cells):
            rows.append((lineno, None, ""))
        elif at + cells > count:
            raise TableError(f"{where}: row {lineno} is missing cells")
        else:
            hits, time, per_hit = tokens[at : at + 3]
            percent = tokens[at + 3] if has_percent else None
            at += cells
            rows.append((lineno, Cells(hits, time, per_hit, percent), ""))
        lineno += 1
    return rows


def _is_timed(tokens: list[str], at: int, lineno: int, cells: int) -> bool:
    """Whether the tokens from ``at`` are row ``lineno``'s cells, or the next row.

    Only 'N+1' is ambiguous: the next line number, or N+1 hits. As hits, it is followed by a
    time and a per-hit time (each with a '.' or an exponent, which a line number never has),
    the percentage when the table has them, and then line N+1 or the end.
    """
    count = len(tokens)
    if at >= count:
        return False
    if tokens[at] != str(lineno + 1):
        return True
    end = at + cells
    if end > count or not all(_is_time(token) for token in tokens[at + 1 : end]):
        return False
    return end == count or tokens[end] == str(lineno + 1)


def _is_time(token: str) -> bool:
    return "." in token or "e" in token
