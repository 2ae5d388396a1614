"""Shell variables a job script sets before its launch line (``SCRIPT=train.py``, then
``srun python $SCRIPT``), expanded in the line's words as far as that needs no running:
plain values, and values built from other such variables. A command substitution or
anything else unknown leaves the variable as written."""

from __future__ import annotations

import re

from tuneadvisor.slurm.launch_line.lexing import unquote

__all__ = ["expand_word", "known_value"]

# $NAME, ${NAME}, ${NAME:-default}, ${NAME-default}
_REFERENCE = re.compile(
    r"\$(?:(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
    r"|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?-)(?P<default>[^}]*))?\})"
)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_UNKNOWABLE = ("$(", "`")


def known_value(value: str) -> bool:
    """An assignment's value (expanded, unquoted) that is known without running anything."""
    return "$" not in value and "`" not in value


def expand_word(raw: str, known: dict[str, str]) -> list[str] | None:
    """The words one raw shell word becomes with ``known`` variables expanded: an unquoted
    expansion split on blanks, a double-quoted one kept whole; None when the word needs no
    expansion or holds what only running could tell (``$(...)``, single quotes).

    In an assignment (``NAME=$OTHER``) nothing is split, and ``${NAME:-default}`` of a
    variable the script does not set reads as its default (``SCRIPT=${SCRIPT:-train.py}``);
    elsewhere it stays, so ``${SLURM_CPUS_PER_TASK:-4}`` still says where a value comes
    from."""
    if "$" not in raw or any(mark in raw for mark in _UNKNOWABLE) or "'" in raw:
        return None
    assignment = _ASSIGNMENT.match(raw) is not None
    words: list[str] = []
    current: list[str] = []
    started = False  # the current word exists (also when empty: "" makes one)
    expanded = quoted = False
    pos = 0
    while pos < len(raw):
        char = raw[pos]
        if char == '"':
            quoted, started = not quoted, True
            pos += 1
            continue
        if char == "\\" and pos + 1 < len(raw):
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
        expanded = True
        if quoted or assignment:
            current.append(value)
            started = True
            continue
        started = _split_into(value, words, current, started)
        if not started:
            current = []
    if started:
        words.append("".join(current))
    return words if expanded else None


def _split_into(value: str, words: list[str], current: list[str], started: bool) -> bool:
    """An unquoted expansion's blanks end words; whether a word is open after it."""
    parts = value.split()
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
