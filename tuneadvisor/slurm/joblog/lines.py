"""A log streamed as short pieces of text with their line numbers, in bounded memory.

A log can be gigabytes, and a progress bar rewrites its line with carriage returns, so a
"line" can be megabytes of ``\\r``-separated updates with a traceback after the last one:
the pieces are split at ``\\r`` as well as ``\\n`` (numbered by ``\\n`` only, as an editor
numbers them), and each is cut at ``MAX_PIECE`` bytes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import BinaryIO

CHUNK = 1 << 20
MAX_PIECE = 4096  # every message looked for fits in far less; the rest of a piece is dropped
_SEPARATOR = re.compile(rb"[\r\n]")


class LineCounter:
    """How many lines the stream had, known once it is read through."""

    def __init__(self) -> None:
        self.lines = 0


def pieces(
    stream: BinaryIO, wanted: re.Pattern[bytes], counter: LineCounter
) -> Iterator[tuple[int, bytes]]:
    """(line number, piece) of every piece in which ``wanted`` matches. A chunk where it
    matches nowhere is only counted: most of a log is skipped at the speed of a search."""
    line = 1
    pending = b""  # the start of the piece the last chunk ended in, cut at MAX_PIECE
    skipping = False  # that piece was cut: drop the rest of it
    tail = False  # bytes after the last line break
    while chunk := stream.read(CHUNK):
        if skipping:
            cut = _SEPARATOR.search(chunk)
            if cut is None:
                continue
            chunk, skipping = chunk[cut.start() :], False
        data = pending + chunk
        last = max(data.rfind(b"\n"), data.rfind(b"\r"))
        if last < 0:
            pending, skipping = data[:MAX_PIECE], len(data) > MAX_PIECE
            tail = True
            continue
        whole, rest = data[: last + 1], data[last + 1 :]
        if wanted.search(whole) is None:
            line += whole.count(b"\n")
        else:
            start = 0
            for match in _SEPARATOR.finditer(whole):
                piece = whole[start : match.start()][:MAX_PIECE]
                if piece and wanted.search(piece):
                    yield line, piece
                if match.group() == b"\n":
                    line += 1
                start = match.end()
        pending, skipping = rest[:MAX_PIECE], len(rest) > MAX_PIECE
        tail = bool(rest)
    if pending and wanted.search(pending):
        yield line, pending
    counter.lines = line if tail else line - 1
