"""A small shell lexer for launch lines: ``\\`` continuations, words (quotes, ``$(...)``
and ``${...}`` kept whole), operators, redirections and comments. Nothing is expanded."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass

REDIRECT = re.compile(r"[0-9]*(?:>>|>&|<&|<>|&>>|&>|>\||>|<)")
OPERATORS = ("&&", "||", ";;", ";", "|&", "|", "&", "(", ")")


@dataclass(frozen=True)
class Logical:
    first: int
    last: int
    text: str


def logical_lines(lines: list[tuple[int, str]]) -> Iterator[Logical]:
    """Join ``\\``-continued lines (an odd number of trailing backslashes)."""
    pending: list[str] = []
    first = 0
    for number, text in lines:
        if not pending:
            first = number
        trailing = len(text) - len(text.rstrip("\\"))
        if trailing % 2:
            pending.append(text[:-1])
            continue
        pending.append(text)
        yield Logical(first, number, "".join(pending))
        pending = []
    if pending:
        yield Logical(first, lines[-1][0], "".join(pending))


def _skip_group(text: str, pos: int, opening: str, closing: str) -> int:
    """Past the end of ``$(...)`` or ``${...}`` starting at ``pos`` (nesting counted)."""
    depth = 0
    while pos < len(text):
        char = text[pos]
        if char == "\\":
            pos += 2
            continue
        if char in "'\"":
            end = text.find(char, pos + 1)
            pos = len(text) if end < 0 else end + 1
            continue
        depth += (char == opening) - (char == closing)
        pos += 1
        if depth == 0:
            return pos
    return pos


def _word_end(text: str, pos: int) -> int:
    """Where a shell word starting at ``pos`` ends (quotes and substitutions kept whole)."""
    while pos < len(text) and text[pos] not in " \t\n;&|()<>":
        char = text[pos]
        if char == "\\":
            pos += 2
        elif char == "'":
            end = text.find("'", pos + 1)
            pos = len(text) if end < 0 else end + 1
        elif char == '"':
            pos = _double_quoted_end(text, pos)
        elif text.startswith(("$(", "${"), pos):
            opening, closing = ("(", ")") if text[pos + 1] == "(" else ("{", "}")
            pos = _skip_group(text, pos + 1, opening, closing)
        elif char == "`":
            end = text.find("`", pos + 1)
            pos = len(text) if end < 0 else end + 1
        else:
            pos += 1
    return pos


def _double_quoted_end(text: str, pos: int) -> int:
    pos += 1
    while pos < len(text) and text[pos] != '"':
        if text[pos] == "\\":
            pos += 1
        elif text.startswith("$(", pos):
            pos = _skip_group(text, pos + 1, "(", ")") - 1
        pos += 1
    return pos + 1


def lex(text: str) -> list[str]:
    """Raw shell words and operators of one logical line; a comment ends it."""
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos] in " \t":
            pos += 1
            continue
        if text[pos] == "#":
            break
        redirect = REDIRECT.match(text, pos)  # before operators: "&>" is not "&"
        if redirect:
            tokens.append(redirect.group())
            pos = redirect.end()
            continue
        operator = next((op for op in OPERATORS if text.startswith(op, pos)), None)
        if operator:
            tokens.append(operator)
            pos += len(operator)
            continue
        end = _word_end(text, pos)
        tokens.append(text[pos:end])
        pos = end
    return tokens


def _unquote(raw: str) -> str:
    """A word without its quotes, variables and substitutions kept as written."""
    if "$(" in raw or "`" in raw:
        return raw[1:-1] if len(raw) > 1 and raw[0] == raw[-1] == '"' else raw
    try:
        parts = shlex.split(raw)
    except ValueError:  # an unmatched quote: keep the text
        return raw
    if len(parts) == 1:
        return parts[0]
    return raw if parts else ""  # several parts: blanks inside ${...}; keep it whole


def commands(tokens: list[str]) -> Iterator[list[str]]:
    """Simple commands: words between operators, without redirections and their targets."""
    words: list[str] = []
    target = False  # the next word is a redirection's file
    for token in tokens:
        if token in OPERATORS:
            if words:
                yield words
            words, target = [], False
        elif REDIRECT.fullmatch(token):
            target = True
        elif target:
            target = False
        else:
            words.append(_unquote(token))
    if words:
        yield words
