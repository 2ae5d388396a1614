"""One or more job logs read for the causes of death: the first line of each kind, quoted
with its file and line, its numbers, and how many more lines said the same.

A log is read within a bound (issue 34): a job's causes are printed when it starts (bad
arguments, a missing module) or when it dies (the traceback, slurmstepd's last words), so a
log longer than ``HEAD + TAIL`` bytes is read for its first ``HEAD`` and its last ``TAIL``
bytes only, and what lay between is said (``JobLog.skipped``), never silently dropped."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import BinaryIO

from tuneadvisor.files import open_regular_file
from tuneadvisor.slurm.joblog.causes import CAUSES, KEYWORDS, Cause, Details
from tuneadvisor.slurm.joblog.lines import LineCounter, pieces

MAX_QUOTE = 240  # characters of a line quoted in a finding
LEAD = 60  # characters quoted before the message in a long line
WHAT = "job log"
MIB = 1 << 20
# A log's causes are near its start or its end, and every line there that holds a keyword
# costs a few microseconds: 2.5 MiB of "Killed N" lines read in about 1-3 s.
HEAD = MIB // 2  # bytes read from a log's start
TAIL = 2 * MIB  # and from its end, when it is longer than both
# Lines of one kind whose numbers are read (the first value of each number wins; a log of a
# million OOM lines would otherwise run the detail patterns a million times); later ones are
# counted only.
MAX_DETAILED = 1000
_CACHE = 4096  # distinct pieces whose result is remembered (repeated lines are the bulk)


def _either(patterns: tuple[re.Pattern[str], ...]) -> re.Pattern[str] | None:
    """One search for any of a cause's patterns instead of one per pattern."""
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{p.pattern})" for p in patterns))


# (cause, any of its patterns, any of its detail patterns), in CAUSES' order
_MATCHERS: tuple[tuple[Cause, re.Pattern[str] | None, re.Pattern[str] | None], ...] = tuple(
    (cause, _either(cause.patterns), _either(cause.detail_patterns)) for cause in CAUSES
)


@dataclass(frozen=True)
class Sighting:
    """The first line of one kind: where it is, what it says, its numbers."""

    path: str
    line: int  # counted from the log's start; from its end when from_end
    text: str
    details: Mapping[str, object]
    more: int = 0  # later lines of the same kind
    # in the tail of a log whose middle was not read: its number from the start is unknown
    from_end: bool = False

    def quote(self) -> str:
        again = f" (and {self.more} more such lines)" if self.more else ""
        if self.from_end:
            return f"{self.path}, line {self.line} from its end: {self.text}{again}"
        return f"{self.path}:{self.line}: {self.text}{again}"


def size_text(size: int) -> str:
    """HEAD and TAIL as a person reads them."""
    return f"{size / MIB:g} MiB" if size >= MIB else f"{size / 1024:g} KiB"


@dataclass(frozen=True)
class JobLog:
    paths: tuple[str, ...]
    lines: int  # lines read
    found: Mapping[str, Sighting] = field(default_factory=dict)  # kind -> its first line
    # path -> bytes in the middle of a long log that were not read
    skipped: Mapping[str, int] = field(default_factory=dict)

    def facts(self) -> dict[str, object]:
        """log.lines, log.causes, and per kind found: log.KIND (the quoted line) and
        log.KIND.DETAIL (its numbers)."""
        facts: dict[str, object] = {"log.lines": self.lines, "log.causes": len(self.found)}
        for kind, sighting in self.found.items():
            facts[f"log.{kind}"] = sighting.quote()
            facts.update({f"log.{kind}.{k}": v for k, v in sighting.details.items()})
        return facts


def _quoted(text: str, start: int) -> str:
    """The line as printed, without control characters (no terminal escapes reach the
    report), cut to MAX_QUOTE characters; one whose message starts far in (after a progress
    bar) is quoted from a little before the message."""
    text = "".join(c if c.isprintable() else " " for c in text)
    if len(text) > MAX_QUOTE and start > LEAD:
        text = "…" + text[start - LEAD :].lstrip()
    text = text.strip()
    return text if len(text) <= MAX_QUOTE else text[: MAX_QUOTE - 1] + "…"


@dataclass
class _Kind:
    first: Sighting | None = None
    more: int = 0
    details: Details = field(default_factory=dict)
    detailed: int = 0  # lines whose numbers were read


class _Window:
    """``length`` bytes of a stream from where it stands, whole lines only: the partial line
    it ends in is dropped, and with ``from_line`` the one it starts in (the tail of a log
    starts anywhere)."""

    def __init__(self, stream: BinaryIO, length: int, *, from_line: bool = False) -> None:
        self._stream, self._left, self._cut = stream, length, from_line

    def read(self, size: int = -1) -> bytes:
        while self._left > 0:
            data = self._stream.read(min(self._left, size if size > 0 else self._left))
            if not data:
                return b""
            self._left -= len(data)
            if self._left == 0 and self._stream.read(1) not in (b"", b"\n"):
                data = data[: data.rfind(b"\n") + 1]  # "Killed 41184" cut to "Killed"
            if self._cut:
                end = data.find(b"\n")
                if end < 0:
                    continue
                data, self._cut = data[end + 1 :], False
            if data:
                return data
        return b""


class LogScan:
    """Logs read one after another (a job's StdOut, then its StdErr): the first line of a
    kind in the first log that has it."""

    def __init__(self) -> None:
        self._kinds: dict[str, _Kind] = {}
        self._paths: list[str] = []
        self._lines = 0
        self._skipped: dict[str, int] = {}
        # piece -> (index in _MATCHERS, where its pattern matched) of each kind it says, and
        # the indices whose detail patterns matched: a repeated line is looked at once
        self._cache: dict[bytes, tuple[tuple[tuple[int, int], ...], tuple[int, ...]]] = {}

    def add(self, path: str | os.PathLike[str]) -> None:
        """Read one log (its head and tail if it is long); a file that cannot be read is one
        InputError naming it."""
        name = str(path)
        with open_regular_file(path, WHAT) as stream:
            size = os.fstat(stream.fileno()).st_size
            if size <= HEAD + TAIL:
                self._lines += self._read(name, stream, from_end=False)
            else:
                self._lines += self._read(name, _Window(stream, HEAD), from_end=False)
                stream.seek(size - TAIL)
                self._lines += self._read(name, _Window(stream, TAIL, from_line=True), True)
                self._skipped[name] = size - HEAD - TAIL
        self._paths.append(name)

    def _read(self, path: str, stream: BinaryIO | _Window, from_end: bool) -> int:
        """The lines read; sightings in a tail are kept apart and numbered from the end."""
        counter = LineCounter()
        found = pieces(stream, KEYWORDS, counter)  # type: ignore[arg-type]
        if not from_end:
            for line, piece in found:
                self._piece(path, line, piece, False)
            return counter.lines
        tail = LogScan()
        tail._kinds, tail._cache = {}, self._cache
        for line, piece in found:
            tail._piece(path, line, piece, True)
        for kind, seen in tail._kinds.items():  # line numbers now known from the end
            if seen.first is not None:
                back = counter.lines - seen.first.line + 1
                seen.first = replace(seen.first, line=back)
            self._merge(kind, seen)
        return counter.lines

    def _merge(self, kind: str, later: _Kind) -> None:
        seen = self._kinds.setdefault(kind, _Kind())
        seen.details = {**later.details, **seen.details}
        if seen.first is None:
            seen.first, seen.more = later.first, later.more
        elif later.first is not None:
            seen.more += later.more + 1

    def _piece(self, path: str, line: int, piece: bytes, from_end: bool) -> None:
        known = self._cache.get(piece)
        text: str | None = None
        if known is None:
            text = piece.decode("utf-8", "replace")
            said: list[tuple[int, int]] = []
            numbers: list[int] = []
            for index, (_, either, details) in enumerate(_MATCHERS):
                match = either.search(text) if either is not None else None
                if match is not None:
                    said.append((index, match.start()))
                elif details is not None and details.search(text):
                    numbers.append(index)
            known = (tuple(said), tuple(numbers))
            if len(self._cache) >= _CACHE:
                self._cache.clear()
            self._cache[piece] = known
            repeated = False
        else:
            repeated = True  # the same text: its numbers are those already read
        hits, detail_hits = known
        for index, start in hits:
            cause = _MATCHERS[index][0]
            seen = self._kinds.setdefault(cause.kind, _Kind())
            if seen.first is None:
                text = text if text is not None else piece.decode("utf-8", "replace")
                seen.first = Sighting(path, line, _quoted(text, start), {}, from_end=from_end)
            else:
                seen.more += 1
            if not repeated and seen.detailed < MAX_DETAILED:
                # the first value of each number wins, as the first line does
                text = text if text is not None else piece.decode("utf-8", "replace")
                seen.details = {**cause.details(text), **seen.details}
                seen.detailed += 1
        for index in detail_hits:
            cause = _MATCHERS[index][0]
            seen = self._kinds.setdefault(cause.kind, _Kind())
            if not repeated and seen.detailed < MAX_DETAILED:
                text = text if text is not None else piece.decode("utf-8", "replace")
                seen.details = {**cause.details(text), **seen.details}
                seen.detailed += 1

    def result(self) -> JobLog:
        found = {
            kind: replace(seen.first, details=seen.details, more=seen.more)
            for kind, seen in self._kinds.items()
            if seen.first is not None
        }
        return JobLog(tuple(self._paths), self._lines, found, dict(self._skipped))


def scan_logs(paths: Iterable[str | os.PathLike[str]]) -> JobLog:
    scan = LogScan()
    for path in paths:
        scan.add(path)
    return scan.result()
