"""TOML of rule and site files, bounded before it is parsed: a file from someone else may
be crafted to make tomllib recurse past the stack or build a hundred thousand nested tables
(minutes and gigabytes). Pure: the text comes in, the data or one InputError goes out."""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterator
from typing import Any

from tuneadvisor.errors import InputError

MAX_NESTING = 64  # tables or arrays inside each other
MAX_DOTTED_KEY = 32  # parts of one key (``a.b.c`` has 3)

# Where a token may start: a string, a comment, a bracket, what ends a key, a key's dot.
_TOKEN_START = re.compile(r"[\"'#\[\]{}=,\n.]")
_BASIC_STOP = re.compile(r'["\\\n]')  # what ends, or is quoted, in a one-line "string"
_LITERAL_STOP = re.compile(r"['\n]")  # what ends a one-line 'string'
_ML_LITERAL = "'" * 3


def _structure(text: str) -> Iterator[str]:
    """The brackets, ``=``, ``,``, line breaks and key dots outside strings and comments,
    in order. Strings and comments are what the pattern this replaces matched, tried in its
    order at each place: a multi-line basic string (a backslash quotes the next character),
    a multi-line literal one, a one-line basic one, a one-line literal one, a comment; a
    string that does not close is none (its quote is passed over). Found with str.find and
    one-character searches, each part of the text read once: once a kind of string failed
    to close, every later one of that kind fails the same way (a one-line basic one up to
    the same line break), so it is not tried again."""
    size = len(text)
    no_ml_basic = no_ml_literal = False  # an unclosed one was met: none later closes
    basic_fails_before = -1  # a one-line basic string opened before here does not close
    pos = 0
    while (found := _TOKEN_START.search(text, pos)) is not None:
        at = found.start()
        char = text[at]
        end: int | None = None
        if char == '"':
            if not no_ml_basic and text.startswith('"""', at):
                end = _ml_basic_end(text, at + 3)
                no_ml_basic = end is None
            if end is None and at >= basic_fails_before:
                end, fails_at = _basic_end(text, at + 1)
                basic_fails_before = fails_at if end is None else basic_fails_before
        elif char == "'":
            if not no_ml_literal and text.startswith(_ML_LITERAL, at):
                close = text.find(_ML_LITERAL, at + 3)
                end = None if close < 0 else close + 3
                no_ml_literal = end is None
            if end is None:
                stop = _LITERAL_STOP.search(text, at + 1)
                end = stop.end() if stop is not None and stop.group() == "'" else None
        elif char == "#":
            newline = text.find("\n", at)
            end = size if newline < 0 else newline
        else:
            yield char
            end = at + 1
        pos = at + 1 if end is None else end


def _ml_basic_end(text: str, pos: int) -> int | None:
    """Past the first triple quote from ``pos`` whose first quote no backslash quotes."""
    close = text.find('"""', pos)
    while close >= 0:
        slash = text.find("\\", pos, close)
        if slash < 0:
            return close + 3
        pos = slash + 2  # the quoted character may be the first quote of ``close``
        if close < pos:
            close = text.find('"""', pos)
    return None


def _basic_end(text: str, pos: int) -> tuple[int | None, int]:
    """Past the closing quote (None when it does not close), and where it failed: at a
    line break or the end, where every such string opened on the way fails too."""
    while (stop := _BASIC_STOP.search(text, pos)) is not None:
        at = stop.start()
        if text[at] == '"':
            return at + 1, at
        if text[at] == "\n":
            return None, at
        if at + 1 >= len(text):
            break
        pos = at + 2
    return None, len(text)


def toml_shape_problem(text: str, max_nesting: int = MAX_NESTING) -> str | None:
    """Why this TOML would overwhelm the parser, before it is parsed: arrays or tables
    nested deeper than ``max_nesting`` (the parser recurses), or a dotted key of more than
    MAX_DOTTED_KEY parts (each makes a table: 100,000 of them take minutes and gigabytes).
    None when neither; what the text means is the parser's business."""
    depth = dots = 0
    for token in _structure(text):
        if token in ("[", "{"):
            depth += 1
            dots = 0
            if depth > max_nesting:
                return f"nested more than {max_nesting} levels deep"
        elif token in ("]", "}"):
            depth = max(0, depth - 1)
            dots = 0
        elif token == ".":
            dots += 1
            if dots >= MAX_DOTTED_KEY:
                return f"a dotted key of more than {MAX_DOTTED_KEY} parts"
        elif token in ("=", ",", "\n"):
            dots = 0
    return None


def parse_toml(text: str, where: str | os.PathLike[str] | None, what: str) -> dict[str, Any]:
    """``tomllib.loads`` bounded first (see toml_shape_problem); failures are InputError."""
    problem = toml_shape_problem(text)
    if problem is not None:
        raise InputError(where, f"{what} is {problem}: not read")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(where, f"not valid TOML: {exc}") from None
    except RecursionError:
        raise InputError(where, f"{what} is nested too deeply to read") from None
    except ValueError as exc:  # an integer of thousands of digits
        raise InputError(where, f"{what}: {str(exc).split(':')[0]}") from None
