"""One or more job logs read for the causes of death: the first line of each kind, quoted
with its file and line, its numbers, and how many more lines said the same."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from tuneadvisor.files import open_regular_file
from tuneadvisor.slurm.joblog.causes import CAUSES, KEYWORDS, Details
from tuneadvisor.slurm.joblog.lines import LineCounter, pieces

MAX_QUOTE = 240  # characters of a line quoted in a finding
LEAD = 60  # characters quoted before the message in a long line
WHAT = "job log"


@dataclass(frozen=True)
class Sighting:
    """The first line of one kind: where it is, what it says, its numbers."""

    path: str
    line: int
    text: str
    details: Mapping[str, object]
    more: int = 0  # later lines of the same kind

    def quote(self) -> str:
        again = f" (and {self.more} more such lines)" if self.more else ""
        return f"{self.path}:{self.line}: {self.text}{again}"


@dataclass(frozen=True)
class JobLog:
    paths: tuple[str, ...]
    lines: int
    found: Mapping[str, Sighting] = field(default_factory=dict)  # kind -> its first line

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


class LogScan:
    """Logs read one after another (a job's StdOut, then its StdErr): the first line of a
    kind in the first log that has it."""

    def __init__(self) -> None:
        self._kinds: dict[str, _Kind] = {}
        self._paths: list[str] = []
        self._lines = 0

    def add(self, path: str | os.PathLike[str]) -> None:
        """Read one log; a file that cannot be read is one InputError naming it."""
        counter = LineCounter()
        with open_regular_file(path, WHAT) as stream:
            for line, piece in pieces(stream, KEYWORDS, counter):
                self._piece(str(path), line, piece)
        self._paths.append(str(path))
        self._lines += counter.lines

    def _piece(self, path: str, line: int, piece: bytes) -> None:
        text = piece.decode("utf-8", "replace")
        for cause in CAUSES:
            seen = self._kinds.setdefault(cause.kind, _Kind())
            match = next((m for p in cause.patterns if (m := p.search(text))), None)
            if match is not None:
                # the first value of each number wins, as the first line does
                seen.details = {**cause.details(text), **seen.details}
                if seen.first is None:
                    seen.first = Sighting(path, line, _quoted(text, match.start()), {})
                else:
                    seen.more += 1
            elif any(p.search(text) for p in cause.detail_patterns):
                seen.details = {**cause.details(text), **seen.details}

    def result(self) -> JobLog:
        found = {
            kind: replace(seen.first, details=seen.details, more=seen.more)
            for kind, seen in self._kinds.items()
            if seen.first is not None
        }
        return JobLog(tuple(self._paths), self._lines, found)


def scan_logs(paths: Iterable[str | os.PathLike[str]]) -> JobLog:
    scan = LogScan()
    for path in paths:
        scan.add(path)
    return scan.result()
