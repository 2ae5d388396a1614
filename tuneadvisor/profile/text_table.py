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
their printed precision, so a table that was mangled or misread fails instead of loading
wrong numbers.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from tuneadvisor.profile.model import FunctionTiming, LineTiming, Profile

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_TIMER = re.compile(r"( *)Timer unit: (\S+) s")
_TOTAL = re.compile(r"Total time: (\S+) s")
_FILE = re.compile(r"File: (.*)")
_FUNCTION = re.compile(r"Function: (.*) at line ([0-9]{1,9})")
_MISSING = re.compile(r"Could not find file (.*)")
_HEADER = re.compile(r" *(Line #) +(Hits) +(Time) +(Per Hit) +(% Time) +Line Contents")
_RULE = re.compile(r"=+")
_BLANK = re.compile("")
_SUMMARY = re.compile(r" *(\S+) seconds - (.*):([0-9]{1,9}) - (.*)")
# As line_profiler prints them ('%d', '%5.1f', '%g'); bounded, so int() and float() stay cheap.
_NUMBER = re.compile(r"[0-9]{1,40}(?:\.[0-9]{0,40})?(?:e[+-]?[0-9]{1,2})?")
_LINENO = re.compile(r"[0-9]{1,9}")
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


class TableError(ValueError):
    """Why a text is not a readable line_profiler table (a short phrase with a line number)."""


@dataclass(frozen=True)
class _Cells:
    """The number cells of one timed row, as printed."""

    hits: str
    time: str
    per_hit: str
    percent: str | None  # blank when the function's total time is 0


@dataclass
class _Section:
    filename: str
    name: str | None  # None when the source was missing: the summary may name it
    first_lineno: int | None
    unit_s: float
    total: str
    rows: list[tuple[int, _Cells | None, str]] = field(default_factory=list)
    has_source: bool = True


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
        self.sections: list[_Section] = []
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
                unit = _positive(match[2], f"line {self.at + 1}: timer unit")
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

    def section(self, unit_s: float) -> _Section:
        total = self.expect(_TOTAL, "'Total time:'")[1]
        _number(total, f"line {self.at}: total time")
        line = self.take("'File:'")
        if match := _FILE.fullmatch(line):
            function = self.expect(_FUNCTION, "'Function: NAME at line N'")
            section = _Section(match[1], function[1], int(function[2]), unit_s, total)
        elif not line:
            missing = self.expect(_MISSING, "'Could not find file'")
            for _ in range(_MISSING_LINES - 1):
                self.take("the missing-source note")
            section = _Section(missing[1], None, None, unit_s, total, has_source=False)
        else:
            raise TableError(f"line {self.at}: expected 'File:', found {line[:60]!r}")
        self.table(section)
        return section

    def old_section(self, unit_s: float) -> _Section:
        filename = self.expect(_FILE, "'File:'")[1]
        function = self.expect(_FUNCTION, "'Function: NAME at line N'")
        total = self.expect(_TOTAL, "'Total time:'")[1]
        _number(total, f"line {self.at}: total time")
        section = _Section(filename, function[1], int(function[2]), unit_s, total)
        self.table(section)
        return section

    def table(self, section: _Section) -> None:
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

    def function(self, section: _Section) -> FunctionTiming:
        first = section.first_lineno
        if first is None:
            first = section.rows[0][0] if section.rows else 0
        name = section.name
        if name is None:
            name = self.summary.get((section.filename, first), UNKNOWN_NAME)
        lines = tuple(
            LineTiming(lineno, _hits(cells.hits), float(cells.time) * section.unit_s)
            for lineno, cells, _ in section.rows
            if cells is not None
        )
        source = {lineno: text for lineno, _, text in section.rows} if section.has_source else {}
        return FunctionTiming(section.filename, first, name, lines, source)


# -- rows ---------------------------------------------------------------------------------

_Row = tuple[int, _Cells | None, str]


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


def _body_rows(body: list[str], columns: _Columns, section: _Section, start: int) -> list[_Row]:
    """(lineno, cells or None, source text) for each row of one function's table."""
    where = f"table at line {start + 1}"
    if not body:
        return []
    # line_profiler leaves '% Time' blank in every row when the total is 0, and only then.
    has_percent = _number(section.total, f"{where}: total time") > 0
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
    _check_times(rows, section, where)
    return rows


def _plain_rows(
    body: list[str], columns: _Columns, section: _Section, has_percent: bool
) -> list[_Row]:
    """One row per line, its cells read as fields: a wide value pushes what follows it.

    The source starts two spaces after the numbers column, or after the last number when
    the numbers pushed past it.
    """
    lineno = section.first_lineno
    rows: list[_Row] = []
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
        cells: _Cells | None = None
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
                _NUMBER.fullmatch(value) for value in values[1:]
            ):
                raise _NotPlain(f"row {lineno}: {' '.join(values)[:60]!r} are not its cells")
            percent = values[3] if has_percent else None
            cells = _Cells(values[0], values[1], values[2], percent)
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
    body: list[str], columns: _Columns, section: _Section, has_percent: bool, where: str
) -> list[_Row]:
    """Rich's layout: the numbers as one token stream, the source one line per row."""
    width = _numbers_width(body, columns.numbers)
    tokens = [token for line in body for token in line[:width].split()]
    texts = [line[width + 2 :].rstrip() for line in body]
    first = section.first_lineno
    if first is None:
        first = _int(tokens[0], f"{where}: line number") if tokens else 0
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


def _rows(tokens: list[str], first: int, has_percent: bool, where: str) -> list[_Row]:
    """Rows from the numbers column: 'N' alone, or 'N hits time per-hit [percent]'."""
    rows: list[_Row] = []
    at, lineno, count = 0, first, len(tokens)
    cells = 3 + has_percent
    while at < count:
        if tokens[at] != str(lineno):
            found = int(tokens[at]) if _LINENO.fullmatch(tokens[at]) else None
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
            rows.append((lineno, _Cells(hits, time, per_hit, percent), ""))
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


# -- numbers and their printed precision ------------------------------------------------


def _number(token: str, what: str) -> float:
    if not _NUMBER.fullmatch(token):
        raise TableError(f"{what} {token[:20]!r} is not a number")
    value = float(token)
    if not math.isfinite(value):
        raise TableError(f"{what} {token[:20]!r} is out of range")
    return value


def _positive(token: str, what: str) -> float:
    value = _number(token, what)
    if value <= 0:
        raise TableError(f"{what} {token[:20]!r} is not positive")
    return value


def _int(token: str, what: str) -> int:
    if not _LINENO.fullmatch(token):
        raise TableError(f"{what} {token[:20]!r} is not a line number")
    return int(token)


def _hits(token: str) -> int:
    # '%d', or '%g' (6 significant digits) when the count is too wide for its column.
    return round(float(token))


def _half_step(token: str) -> float:
    """Half the step of the last printed digit: '12.3' -> 0.05, '2e+06' -> 5e5."""
    mantissa, _, exponent = token.partition("e")
    decimals = len(mantissa.partition(".")[2])
    return float(f"5e{int(exponent or 0) - decimals - 1}")  # inf, not OverflowError, if huge


# '%g' hit counts keep 6 significant digits; floats add their own rounding.
_RELATIVE_SLACK = 1e-5


def _check_times(rows: list[_Row], section: _Section, where: str) -> None:
    """Each row's cells agree with each other and with 'Total time', within print precision.

    Rows may add up to less than the total (lines outside the printed block still count in
    it, e.g. when the source changed after profiling), never to more.
    """
    total_s = _number(section.total, f"{where}: total time")
    sum_s = slack_s = 0.0
    for lineno, cells, _ in rows:
        if cells is not None:
            time_s = _check_row(cells, total_s, section, f"{where}, row {lineno}")
            sum_s += time_s
            slack_s += _half_step(cells.time) * section.unit_s
    # '%g' prints a positive total as at least its first digit: 'Total time: 0 s' is exact.
    if total_s > 0:
        slack_s += _half_step(section.total) + total_s * _RELATIVE_SLACK
    if sum_s > total_s + slack_s:
        raise TableError(f"{where}: rows add up to more than 'Total time: {section.total} s'")


def _check_row(cells: _Cells, total_s: float, section: _Section, where: str) -> float:
    """The row's time in seconds, once its per-hit and percent cells agree with it."""
    hits = _number(cells.hits, f"{where}: hits")
    time = _number(cells.time, f"{where}: time")
    per_hit = _number(cells.per_hit, f"{where}: per-hit time")
    if hits <= 0:
        raise TableError(f"{where}: a timed row with no hits")
    expected = time / hits
    tolerance = (
        _half_step(cells.per_hit) + _half_step(cells.time) / hits + expected * _RELATIVE_SLACK
    )
    if abs(per_hit - expected) > tolerance:
        raise TableError(f"{where}: per-hit {cells.per_hit} is not time / hits")
    time_s = time * section.unit_s
    if cells.percent is not None:
        _check_percent(cells.percent, cells.time, time_s, total_s, section, where)
    return time_s


def _check_percent(
    printed: str, time: str, time_s: float, total_s: float, section: _Section, where: str
) -> None:
    percent = _number(printed, f"{where}: percent")
    if total_s <= 0:
        raise TableError(f"{where}: a percentage of a zero total time")
    expected = 100 * time_s / total_s
    tolerance = (
        _half_step(printed)
        + 100 * _half_step(time) * section.unit_s / total_s
        + expected * (_half_step(section.total) / total_s + _RELATIVE_SLACK)
    )
    if abs(percent - expected) > tolerance:
        raise TableError(f"{where}: {printed} % does not match its time and the total")
