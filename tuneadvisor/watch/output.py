"""What a watched program wrote, as lines a screen can show: ``OutputLines``.

Fed raw text in pieces as it arrives (from the program's terminal or pipe, or from a job's
output file): the escape sequences of colours and cursor moves are dropped, a carriage return
starts the line over (a progress bar redraws itself in place), and the line not yet ended is
kept apart as ``partial`` so that a progress bar shows as it moves. Memory is bounded (the
newest ``keep`` lines); the whole output is in the log file, not here.
"""

from __future__ import annotations

import codecs
import os
import re
import threading
from collections import deque
from dataclasses import dataclass

KEEP_LINES = 5000
# CSI (colours, cursor), OSC (titles, links), and the two-byte escapes; then other controls.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _shown(raw: str) -> str:
    """One line as a terminal would leave it: the text after its last carriage return
    (a trailing one, as in ``\\r\\n``, ends nothing), without escapes or controls."""
    raw = raw.rstrip("\r")
    raw = raw[raw.rfind("\r") + 1 :]
    return _CONTROLS.sub("", _ESCAPES.sub("", raw)).expandtabs()


@dataclass(frozen=True)
class NewLines:
    lines: tuple[str, ...]  # the lines ended since the count asked for (those still kept)
    count: int  # lines ended so far: ask ``since(count)`` next time
    partial: str  # the line being written, as shown (a progress bar), "" when none
    skipped: int = 0  # ended lines no longer kept (more than ``keep`` since the last ask)


class OutputLines:
    """Thread-safe: one thread feeds, another reads with ``since`` or ``tail``."""

    def __init__(self, keep: int = KEEP_LINES) -> None:
        self._lines: deque[str] = deque(maxlen=keep)
        self._count = 0
        self._partial = ""  # raw: escapes are only complete once the line ends
        self._lock = threading.Lock()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed_bytes(self, data: bytes, final: bool = False) -> None:
        self.feed(self._decoder.decode(data, final))

    def feed(self, text: str) -> None:
        if not text:
            return
        pieces = text.split("\n")
        with self._lock:
            pieces[0] = self._partial + pieces[0]
            for raw in pieces[:-1]:
                self._lines.append(_shown(raw))
                self._count += 1
            self._partial = pieces[-1]

    def since(self, count: int) -> NewLines:
        with self._lock:
            kept_from = self._count - len(self._lines)
            start = max(count, kept_from)
            lines = tuple(self._lines)[start - kept_from :]
            return NewLines(lines, self._count, _shown(self._partial), start - count)

    def tail(self, n: int) -> list[str]:
        """The last ``n`` lines, the one being written included."""
        with self._lock:
            lines = list(self._lines)[-n:] if n else []
            partial = _shown(self._partial)
        if partial:
            lines = [*lines[1:], partial] if len(lines) == n else [*lines, partial]
        return lines

    @property
    def count(self) -> int:
        with self._lock:
            return self._count


TAIL_START_BYTES = 64 * 1024  # what is shown of a job's output written before the watch
TAIL_POLL_S = 0.5


class FileTail:
    """A job's output file (``StdOut`` of ``scontrol show job``) followed as it grows, its
    lines fed to ``output``; it starts with the last ``TAIL_START_BYTES`` already written."""

    def __init__(self, path: str, start_bytes: int = TAIL_START_BYTES) -> None:
        self.path = path
        self.output = OutputLines()
        self._file = open(path, "rb")  # noqa: SIM115 - closed by close()
        self._file.seek(0, 2)
        size = self._file.tell()
        self._file.seek(max(0, size - start_bytes))
        if size > start_bytes:
            self._file.readline()  # from the first whole line
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, name="job-output", daemon=True)

    def start(self) -> FileTail:
        self._thread.start()
        return self

    def read_new(self) -> None:
        """What was appended since the last read (a file cut short is read from its start)."""
        pos = self._file.tell()
        try:
            size = os.fstat(self._file.fileno()).st_size
        except OSError:
            return
        if size < pos:
            self._file.seek(0)
        data = self._file.read()
        if data:
            self.output.feed_bytes(data)

    def _follow(self) -> None:
        while True:
            self.read_new()
            if self._stop.wait(TAIL_POLL_S):
                return

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(TAIL_POLL_S * 4)
        self._file.close()


def open_tail(path: str | None) -> FileTail | None:
    """The job's output file when this node can read it, else None (the pane says why not)."""
    if not path:
        return None
    try:
        return FileTail(path)
    except OSError:
        return None
