"""One trace file as a stream of events, bounded.

Why ijson: a profiled epoch is often gigabytes of JSON; ``json.load`` (and HTA's parser, which
starts from it) holds the whole text and every event as Python objects at once. ijson's
yajl2_c backend parses in C and hands over one event at a time (``ijson.items(f,
'traceEvents.item')`` was the fastest of items/kvitems/basic_parse measured in
``bench/trace_bench.py``), so memory stays with what the reader keeps, never with the text.

What no parser bounds by itself is guarded here: a string token is held whole by yajl, so a
run of bytes with no quote longer than ``MAX_STRING_BYTES`` is refused before it is buffered;
nesting deeper than ``MAX_DEPTH`` is refused in the header; NaN and other non-JSON are
yajl's errors. Every failure is one ``InputError`` naming the file.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import stat
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any

import ijson  # type: ignore[import-untyped]  # no stubs; the C backend

from tuneadvisor.errors import InputError

Progress = Callable[[int, int], None]  # (bytes read, total bytes) of the file on disk

MAX_STRING_BYTES = 16 * 1024 * 1024  # a kernel name is ~1 kB; 16 MB of one string is hostile
MAX_DEPTH = 64  # trace metadata nests 3-4 deep; args a few more
# yajl2_c's item builder crashes the interpreter near 100,000 levels: the stream refuses
# nesting past this long before (counted on the raw bytes, brackets in strings included).
MAX_STREAM_DEPTH = 20_000
_BRACKETS = re.compile(rb"[\[\]{}]")
CHUNK = 1 << 16
GZIP_MAGIC = b"\x1f\x8b"
HEADER_KEYS = ("distributedInfo", "deviceProperties")
# The header is read token by token in Python: past this many tokens before ``traceEvents``
# it stops (the events are still found, by ijson's C prefix match), and a kept value stops
# growing past MAX_KEPT_TOKENS (64 devices of ~30 fields fit many times over).
MAX_HEADER_TOKENS = 100_000
MAX_KEPT_TOKENS = 20_000
# A .gz is read to at most this many times its size (the real traces here inflate 14-27x),
# or MIN_INFLATE when that is more: past it the rest is not read and the notes say so.
MAX_INFLATE_RATIO = 64
MIN_INFLATE = 8 << 20
# torch 2.0-2.1 wrote distributedInfo (and traceName) after traceEvents: the stream's last
# bytes are kept to find it there.
TAIL_BYTES = 64 << 10


class _Guarded:
    """A binary reader that counts the bytes read from disk for progress and refuses a
    quote-less run longer than MAX_STRING_BYTES (the text yajl would buffer as one string)."""

    def __init__(self, raw: IO[bytes], inner: IO[bytes] | gzip.GzipFile, path: str, total: int,
                 progress: Progress | None) -> None:  # fmt: skip
        self._raw = raw  # the file on disk (progress is on its position)
        self._inner = inner  # what is parsed (the same file, or a gzip reader over it)
        self._path = path
        self._total = total
        self._progress = progress
        self._run = 0  # bytes since the last quote
        self._depth = 0  # open brackets less closed ones so far
        self._last_report = 0
        self._left = max(MIN_INFLATE, MAX_INFLATE_RATIO * total) if inner is not raw else -1
        self.inflated_past: int = 0  # the bound a .gz met (its bytes), 0 when read to the end
        self.tail = bytearray()  # the last TAIL_BYTES read

    def read(self, size: int = -1) -> bytes:
        if self._left == 0:
            self.inflated_past = max(MIN_INFLATE, MAX_INFLATE_RATIO * self._total)
            return b""  # the gzip bomb's bound: the parser sees the end here
        data = self._inner.read(CHUNK if size is None or size < 0 else min(size, CHUNK))
        if self._left > 0:
            data = data[: self._left]
            self._left -= len(data)
        self._check(data)
        self.tail += data
        if len(self.tail) > 2 * TAIL_BYTES:
            del self.tail[:-TAIL_BYTES]
        if self._progress is not None:
            pos = self._raw.tell()
            if pos - self._last_report >= (1 << 22) or not data:  # every 4 MiB, and at the end
                self._last_report = pos
                self._progress(pos, self._total)
        return data

    def _check(self, data: bytes) -> None:
        first = data.find(b'"')
        if first < 0:
            self._run += len(data)
        else:
            if self._run + first > MAX_STRING_BYTES:
                self._too_long()
            self._run = len(data) - data.rfind(b'"') - 1
        if self._run > MAX_STRING_BYTES:
            self._too_long()
        opens = data.count(b"[") + data.count(b"{")
        if self._depth + opens > MAX_STREAM_DEPTH:  # rare: look at the chunk's every bracket
            depth = self._depth
            for m in _BRACKETS.finditer(data):
                depth += 1 if m.group() in (b"[", b"{") else -1
                if depth > MAX_STREAM_DEPTH:
                    raise InputError(
                        self._path, f"not a trace: nested deeper than {MAX_STREAM_DEPTH}"
                    )
        self._depth += opens - data.count(b"]") - data.count(b"}")

    def _too_long(self) -> None:
        raise InputError(
            self._path, f"not a trace: a JSON token longer than {MAX_STRING_BYTES >> 20} MiB"
        )


@dataclass
class Header:
    """The top-level keys before ``traceEvents`` (kineto writes its metadata first)."""

    values: dict[str, Any] = field(default_factory=dict)
    has_events: bool = False
    array: bool = False  # the whole file is the events' array (Chrome's other trace form)
    cut: list[str] = field(default_factory=list)  # what the bounds left unread, for the notes


@dataclass
class Read:
    """What the event stream met on its way: for the rank's notes."""

    inflated_past: int = 0  # a .gz stopped at this many inflated bytes (its bound)
    tail: bytes = b""  # the stream's last bytes: what follows traceEvents

    def trailer(self) -> dict[str, Any]:
        """HEADER_KEYS written after ``traceEvents`` (torch 2.0-2.1), from the last bytes."""
        text = self.tail[-TAIL_BYTES:].decode("utf-8", "replace")
        found: dict[str, Any] = {}
        decoder = json.JSONDecoder()
        for key in HEADER_KEYS:
            at = text.rfind(f'"{key}"')
            if at < 0:
                continue
            rest = text[at + len(key) + 2 :].lstrip()
            if not rest.startswith(":"):
                continue
            try:
                found[key] = decoder.raw_decode(rest[1:].lstrip())[0]
            except (ValueError, RecursionError):
                continue
        return found


@contextmanager
def _opened(path: str, progress: Progress | None) -> Iterator[_Guarded]:
    # a regular file only (a FIFO named like a trace never blocks), as files.peek: opened
    # without blocking, then checked on the open file itself
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(path, "not a trace: not a regular file (a FIFO, a device...)")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as raw:
        yield from _inflated(raw, path, progress)


def _inflated(raw: IO[bytes], path: str, progress: Progress | None) -> Iterator[_Guarded]:
    try:
        total = os.fstat(raw.fileno()).st_size
        inner: IO[bytes] | gzip.GzipFile = raw
        if raw.read(2) == GZIP_MAGIC:
            raw.seek(0)
            inner = gzip.GzipFile(fileobj=raw, mode="rb")
        else:
            raw.seek(0)
        yield _Guarded(raw, inner, path, total, progress)
    finally:
        if inner is not raw:
            inner.close()


def _errors(path: str, exc: BaseException) -> InputError:
    if isinstance(exc, InputError):
        return exc
    if isinstance(exc, (EOFError, gzip.BadGzipFile, zlib.error)):
        return InputError(path, f"not a trace: the gzip stream is broken ({exc})")
    if isinstance(exc, OSError):
        return InputError(path, f"cannot read: {exc.strerror or exc}")
    if isinstance(exc, ijson.common.IncompleteJSONError):
        text = " ".join(str(exc).split())[:120]
        if "premature EOF" in text:
            return InputError(path, "not a trace: the JSON ends early (a truncated file?)")
        return InputError(path, f"not a trace: not JSON as Chrome traces are ({text})")
    if isinstance(exc, RecursionError | MemoryError):
        return InputError(path, "not a trace: nested too deep or too large to read")
    return InputError(path, f"not a trace: {type(exc).__name__}: {exc}"[:200])


_PARSE_ERRORS = (
    ijson.common.JSONError,
    OSError,
    EOFError,
    zlib.error,
    ValueError,
    RecursionError,
    MemoryError,
    UnicodeDecodeError,
)


def read_header(path: str) -> Header:
    """The top-level values before ``traceEvents`` (only HEADER_KEYS kept), within bounds."""
    header = Header()
    try:
        with _opened(path, None) as stream:
            _header_tokens(path, ijson.parse(stream, use_float=True), header)
    except _PARSE_ERRORS as exc:
        raise _errors(path, exc) from None
    return header


def _header_tokens(path: str, tokens: Iterator[tuple[str, str, Any]], header: Header) -> None:
    depth = 0
    keep: str | None = None
    builder: ijson.ObjectBuilder | None = None
    kept = 0
    for count, (_prefix, event, value) in enumerate(tokens):
        if count == 0 and event != "start_map":
            if event == "start_array":  # [ {...}, ... ]: Chrome's JSON Array Format
                header.array = header.has_events = True
                return
            raise InputError(path, "not a trace: the JSON is neither an object nor an array")
        if count >= MAX_HEADER_TOKENS:
            header.cut.append(f"the metadata before traceEvents past {MAX_HEADER_TOKENS:,} "
                              "JSON tokens was not read")  # fmt: skip
            header.has_events = True  # looked for by the event stream (in C) instead
            return
        if event in ("start_map", "start_array"):
            depth += 1
            if depth > MAX_DEPTH:
                raise InputError(path, f"not a trace: nested deeper than {MAX_DEPTH}")
        elif event in ("end_map", "end_array"):
            depth -= 1
        if depth == 1 and event == "map_key":
            if value == "traceEvents":
                header.has_events = True
                return
            keep = value if value in HEADER_KEYS else None
            builder = ijson.ObjectBuilder() if keep else None
            kept = 0
            continue
        if builder is not None and keep is not None:
            kept += 1
            if kept > MAX_KEPT_TOKENS:  # what was built so far is kept; the rest skipped
                header.values[keep] = builder.value
                header.cut.append(f"{keep} past {MAX_KEPT_TOKENS:,} JSON tokens was not read")
                builder = None
                continue
            builder.event(event, value)
            if depth == 1:
                header.values[keep] = builder.value
                builder = None


def events(
    path: str, progress: Progress | None = None, *, array: bool = False, read: Read | None = None
) -> Iterator[dict[str, Any]]:
    """The ``traceEvents`` items (or the top-level array's, ``array``), one dict at a time
    (numbers as floats: a huge integer in a hostile file is a float, never a number Python
    spends minutes printing). ``read`` learns where a bound stopped the stream."""
    try:
        with _opened(path, progress) as stream:
            try:
                prefix = "item" if array else "traceEvents.item"
                for item in ijson.items(stream, prefix, use_float=True):
                    if isinstance(item, dict):
                        yield item
            except ijson.common.IncompleteJSONError:
                if not stream.inflated_past:
                    raise
            if read is not None:
                read.inflated_past = stream.inflated_past
                read.tail = bytes(stream.tail)
    except _PARSE_ERRORS as exc:
        raise _errors(path, exc) from None
