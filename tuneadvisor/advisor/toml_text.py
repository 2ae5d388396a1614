"""TOML of rule and site files, bounded before it is parsed: a file from someone else may
be crafted to make tomllib recurse past the stack or build a hundred thousand nested tables
(minutes and gigabytes). Pure: the text comes in, the data or one InputError goes out."""

from __future__ import annotations

import os
import re
import tomllib
from typing import Any

from tuneadvisor.errors import InputError

MAX_NESTING = 64  # tables or arrays inside each other
MAX_DOTTED_KEY = 32  # parts of one key (``a.b.c`` has 3)

# Strings and comments (skipped: brackets and dots in them do not count), brackets, the
# characters that end a key, and a dot between key parts.
_TOML_TOKENS = re.compile(
    r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*'
    r"|[\[\]{}]|[=,\n]|\.",
    re.S,
)


def toml_shape_problem(text: str, max_nesting: int = MAX_NESTING) -> str | None:
    """Why this TOML would overwhelm the parser, before it is parsed: arrays or tables
    nested deeper than ``max_nesting`` (the parser recurses), or a dotted key of more than
    MAX_DOTTED_KEY parts (each makes a table: 100,000 of them take minutes and gigabytes).
    None when neither; what the text means is the parser's business."""
    depth = dots = 0
    for match in _TOML_TOKENS.finditer(text):
        token = match.group()
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
