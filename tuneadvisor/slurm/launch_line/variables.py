"""Shell variables a job script sets before its launch line (``SCRIPT=train.py``, then
``srun python $SCRIPT``), expanded in the line's words as far as that needs no running:
plain values, and values built from other such variables. A command substitution or
anything else unknown leaves the variable as written.

Bounded: a value the script builds from itself (``A=$A$A``, forty times) would double per
line, so a word never expands past ``MAX_EXPANDED_CHARS`` (beyond it, it is kept as
written) and ``search`` forgets a variable whose value passes ``MAX_VALUE_CHARS``."""

from __future__ import annotations

import re

from tuneadvisor.slurm.launch_line.lexing import unquote

__all__ = ["MAX_EXPANDED_CHARS", "MAX_VALUE_CHARS", "expand_word", "references"]

# What a variable may hold and still be followed: a path or a few options is short (Linux's
# PATH_MAX is 4,096 bytes). Longer, it is forgotten: unknown, as if set by running.
MAX_VALUE_CHARS = 4096
# One word with its variables expanded: many references to long values in one word.
MAX_EXPANDED_CHARS = 16 * MAX_VALUE_CHARS

# $NAME, ${NAME}, ${NAME:-default}, ${NAME-default}
_REFERENCE = re.compile(
    r"\$(?:(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
    r"|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?-)(?P<default>[^}]*))?\})"
)
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
        match = _REFERENCE.match(raw, pos) if char == "$" else None
        if match is None:
            current.append(char)
            started = True
            pos += 1
            continue
        pos = match.end()
        value = _value(match, known, defaults=assignment)
        if value is None:  # unknown: kept as written, like every variable
            current.append(match.group(0))
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
    return {m.group("bare") or m.group("name") for m in _REFERENCE.finditer(value)}


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


def _value(match: re.Match[str], known: dict[str, str], defaults: bool) -> str | None:
    name = match.group("bare") or match.group("name")
    value = known.get(name)
    operator, default = match.group("op"), match.group("default")
    if operator is None:
        return value
    if value is None and not defaults:
        return None
    if value is None or (operator == ":-" and value == ""):
        # Not set by the script: the default is what it runs with unless the submitter's
        # environment sets it, which is what a reader of the script would assume too.
        return unquote(default) if "$" not in default else None
    return value
