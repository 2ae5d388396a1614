"""Shell variables a job script sets before its launch line (``SCRIPT=train.py``, then
``srun python $SCRIPT``), expanded in the line's words as far as that needs no running:
plain values, and values built from other such variables. A command substitution or
anything else unknown leaves the variable as written.

Bounded: a value the script builds from itself (``A=$A$A``, forty times) would double per
line, so a word never expands past ``MAX_EXPANDED_CHARS`` (beyond it, it is kept as
written) and ``search`` forgets a variable whose value passes ``MAX_VALUE_CHARS``."""

from __future__ import annotations

import re
from typing import NamedTuple

from tuneadvisor.slurm.launch_line.lexing import unquote

__all__ = ["MAX_EXPANDED_CHARS", "MAX_VALUE_CHARS", "expand_word", "references"]

# What a variable may hold and still be followed: a path or a few options is short (Linux's
# PATH_MAX is 4,096 bytes). Longer, it is forgotten: unknown, as if set by running.
MAX_VALUE_CHARS = 4096
# One word with its variables expanded: many references to long values in one word.
MAX_EXPANDED_CHARS = 16 * MAX_VALUE_CHARS

# $NAME, or the start of ${NAME}, ${NAME:-default}, ${NAME-default}: the default's closing
# brace is found with str.find (a pattern's ``[^}]*`` re-read the rest of the text at every
# ``${A:-`` that has none)
_REFERENCE_HEAD = re.compile(
    r"\$(?:(?P<bare>[A-Za-z_][A-Za-z0-9_]*)|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<op>:?-)?)"
)


class _Reference(NamedTuple):
    name: str
    op: str | None  # ":-" or "-"
    default: str | None
    end: int  # past the reference


def _reference(raw: str, pos: int, last_brace: int) -> _Reference | None:
    """The reference at ``pos``, if one is. ``last_brace``: where ``raw``'s last ``}`` is
    (found once per text, so many unclosed ``${A:-`` are not each read to the end)."""
    head = _REFERENCE_HEAD.match(raw, pos)
    if head is None:
        return None
    end = head.end()
    if head["bare"] is not None:
        return _Reference(head["bare"], None, None, end)
    if head["op"] is None:
        return _Reference(head["name"], None, None, end + 1) if raw.startswith("}", end) else None
    close = raw.find("}", end) if end <= last_brace else -1
    if close < 0:
        return None
    return _Reference(head["name"], head["op"], raw[end:close], close + 1)


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def expand_word(raw: str, known: dict[str, str]) -> list[str] | None:
    """The words one raw shell word becomes with ``known`` variables expanded: an unquoted
    expansion split on blanks, a double-quoted one kept whole, quotes removed; None when
    there is no ``$`` in it. What only running could tell (``$(...)``, backquotes, unknown
    variables) is kept as written.

    In an assignment (``NAME=$OTHER``) nothing is split, and ``${NAME:-default}`` of a
    variable the script does not set reads as its default (``SCRIPT=${SCRIPT:-train.py}``);
    elsewhere it stays, so ``${SLURM_CPUS_PER_TASK:-4}`` still says where a value comes
    from."""
    if "$" not in raw:
        return None
    assignment = _ASSIGNMENT.match(raw) is not None
    words: list[str] = []
    current: list[str] = []
    started = False  # the current word exists (also when empty: "" makes one)
    quoted = False
    pos = 0
    size = len(raw)  # the expanded word's length, at most: the raw text plus every value
    last_brace = raw.rfind("}")
    while pos < len(raw):
        char = raw[pos]
        if char == '"':
            quoted, started = not quoted, True
            pos += 1
            continue
        if char == "'" and not quoted:  # literal to the closing quote
            end = raw.find("'", pos + 1)
            end = len(raw) if end < 0 else end
            current.append(raw[pos + 1 : end])
            started, pos = True, end + 1
            continue
        verbatim = _substitution_end(raw, pos)
        if verbatim is not None:  # `$(...)`, backquotes: what running would tell
            current.append(raw[pos:verbatim])
            started, pos = True, verbatim
            continue
        if char == "\\" and pos + 1 < len(raw):
            # in double quotes a backslash quotes only $ ` " \ (else it stays)
            if quoted and raw[pos + 1] not in '$`"\\':
                current.append(char)
            current.append(raw[pos + 1])
            started = True
            pos += 2
            continue
        match = _reference(raw, pos, last_brace) if char == "$" else None
        if match is None:
            current.append(char)
            started = True
            pos += 1
            continue
        written, pos = raw[pos : match.end], match.end
        value = _value(match, known, defaults=assignment)
        if value is None:  # unknown: kept as written, like every variable
            current.append(written)
            started = True
            continue
        size += len(value)
        if size > MAX_EXPANDED_CHARS:
            return None
        if quoted or assignment:
            current.append(value)
            started = True
            continue
        started = _split_into(value, words, current, started)
        if not started:
            current = []
    if started:
        words.append("".join(current))
    return words


def references(value: str) -> set[str]:
    """The variables a value still refers to as written (``$A``, ``${A:-x}``)."""
    found: set[str] = set()
    last_brace = value.rfind("}")
    pos = value.find("$")
    while pos >= 0:
        reference = _reference(value, pos, last_brace)
        if reference is not None:
            found.add(reference.name)
        pos = value.find("$", reference.end if reference is not None else pos + 1)
    return found


def _substitution_end(raw: str, pos: int) -> int | None:
    """Past the end of a command substitution or arithmetic starting at ``pos``."""
    if raw.startswith("$(", pos):
        depth, end = 0, pos + 1
        while end < len(raw):
            depth += (raw[end] == "(") - (raw[end] == ")")
            end += 1
            if depth == 0:
                return end
        return len(raw)
    if raw[pos] == "`":
        end = raw.find("`", pos + 1)
        return len(raw) if end < 0 else end + 1
    return None


def _fields(value: str) -> list[str]:
    """Split on blanks, a ``$(...)`` kept as written staying one field (its output would be
    split, and that is unknown here)."""
    fields: list[str] = []
    pos = 0
    while pos < len(value):
        if value[pos].isspace():
            pos += 1
            continue
        start = pos
        while pos < len(value) and not value[pos].isspace():
            pos = _substitution_end(value, pos) or pos + 1
        fields.append(value[start:pos])
    return fields


def _split_into(value: str, words: list[str], current: list[str], started: bool) -> bool:
    """An unquoted expansion's blanks end words; whether a word is open after it."""
    parts = _fields(value)
    if not parts:
        return started
    if value[0].isspace() and started:
        words.append("".join(current))
        current.clear()
    for index, part in enumerate(parts):
        if index:
            words.append("".join(current))
            current.clear()
        current.append(part)
    if value[-1].isspace():
        words.append("".join(current))
        current.clear()
        return False
    return True


def _value(match: _Reference, known: dict[str, str], defaults: bool) -> str | None:
    value = known.get(match.name)
    operator, default = match.op, match.default
    if operator is None or default is None:
        return value
    if value is None and not defaults:
        return None
    if value is None or (operator == ":-" and value == ""):
        # Not set by the script: the default is what it runs with unless the submitter's
        # environment sets it, which is what a reader of the script would assume too.
        return unquote(default) if "$" not in default else None
    return value
