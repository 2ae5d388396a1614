"""A small shell lexer for launch lines: ``\\`` continuations, words (quotes, ``$(...)``
and ``${...}`` kept whole), operators, redirections and comments. Nothing is expanded."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass

REDIRECT = re.compile(r"[0-9]*(?:>>|>&|<&|<>|&>>|&>|>\||>|<)")
OPERATORS = ("&&", "||", ";;", ";", "|&", "|", "&", "(", ")", "\n")


@dataclass(frozen=True)
class Logical:
    first: int
    last: int
    text: str
    starts: tuple[int, ...] = ()  # where each physical line's part begins in text


# A command left open by a quote at the end, and the physical lines it was made of.
_Unclosed = tuple[Logical, list[tuple[int, str]]]
# <<EOF, <<'EOF', <<"EOF", <<-EOF: each quote written out (a backreference after the name
# made every name character a place to retry)
_HEREDOC = re.compile(
    r"<<-?\s*(?:'([A-Za-z_][A-Za-z_0-9]*)'"
    r"|\"([A-Za-z_][A-Za-z_0-9]*)\""
    r"|([A-Za-z_][A-Za-z_0-9]*))"
)


def logical_lines(lines: list[tuple[int, str]], quotes: bool = True) -> Iterator[Logical]:
    """Join ``\\``-continued lines (an odd number of trailing backslashes), and the lines of
    a quoted string that goes on past a line's end (kept apart by their newline). The body
    of a here-document is no command: it is skipped. A quote that never closes joins
    nothing (each line read alone, as before the quote)."""
    unclosed = yield from _join(lines, quotes)
    if unclosed is not None:
        yield from _join(unclosed[1], quotes=False)


def unclosed_quote(lines: list[tuple[int, str]]) -> tuple[int, int, str] | None:
    """A quote that nothing closes before the end, as ``bash -n`` finds it ("unexpected EOF
    while looking for matching"): the line bash names (where the last quote left open
    starts), the first line of the command it swallowed, and the quote. None when every
    quote closes."""
    joiner = _join(lines, quotes=True)
    while True:
        try:
            next(joiner)
        except StopIteration as stop:
            unclosed: _Unclosed | None = stop.value
            break
    if unclosed is None:
        return None
    logical, held = unclosed
    at = _open_quote_at(logical.text)
    if at is None:  # cannot happen: the text was left open
        return None
    part = max(index for index, start in enumerate(logical.starts) if start <= at)
    quote = "'" if logical.text[at] == "'" else '"'
    return held[part][0], logical.first, quote


def _join(lines: list[tuple[int, str]], quotes: bool) -> Generator[Logical, None, _Unclosed | None]:
    """The logical lines; what is left open by a quote at the end is returned, not yielded
    (only when ``quotes``)."""
    pending: list[str] = []
    held: list[tuple[int, str]] = []  # the physical lines of pending
    first = 0
    heredoc: str | None = None  # the word that ends the here-document being skipped
    for number, text in lines:
        if heredoc is not None:
            if text.strip() == heredoc:  # `<<-` allows leading tabs: strip covers both
                heredoc = None
            continue
        if not pending:
            first = number
        held.append((number, text))
        trailing = len(text) - len(text.rstrip("\\"))
        so_far = "".join(pending)
        open_quote = _open_quote(so_far + text) if quotes else None
        if trailing % 2 and open_quote != "'":
            pending.append(text[:-1])
            continue
        if open_quote:
            pending.append(text + "\n")
            continue
        pending.append(text)
        logical = _joined(first, number, pending)
        heredoc = _heredoc_word(logical.text)
        yield logical
        pending, held = [], []
    if pending and quotes and _open_quote("".join(pending)):
        return _joined(first, held[-1][0], pending), held
    if pending:
        pending[-1] = pending[-1].removesuffix("\n")
        yield _joined(first, held[-1][0], pending)
    return None


def _heredoc_word(text: str) -> str | None:
    """The delimiter of a here-document the line starts (``cat <<EOF``), outside quotes."""
    if "<<" not in text or _open_quote(text.split("<<", 1)[0]):
        return None
    match = _HEREDOC.search(text)
    if match is None or "<<<" in text:
        return None
    return match.group(1) or match.group(2) or match.group(3)


def _open_quote(text: str) -> str | None:
    """The quote still open at the end of ``text`` (``'`` or ``"``), None when none is;
    a comment ends the scan."""
    at = _open_quote_at(text)
    return None if at is None else ("'" if text[at] == "'" else '"')


def _open_quote_at(text: str) -> int | None:
    """Where the quote still open at the end of ``text`` starts, None when none is. In
    ``$'...'`` a backslash quotes the next character, as in bash."""
    pos = 0
    quote: str | None = None  # "'", '"' or "$'"
    start = 0
    while pos < len(text):
        char = text[pos]
        if quote == "'":
            quote = None if char == "'" else quote
        elif char == "\\":
            pos += 1
        elif quote is not None:  # '"' or "$'"
            quote = None if char == quote[-1] else quote
        elif char in "'\"":
            ansi = char == "'" and pos > 0 and text[pos - 1] == "$"
            quote, start = ("$'" if ansi else char), pos
        elif char == "#" and (pos == 0 or text[pos - 1] in " \t\n;&|()"):
            return None
        pos += 1
    return start if quote is not None else None


def _joined(first: int, last: int, parts: list[str]) -> Logical:
    starts = [0]
    for part in parts[:-1]:
        starts.append(starts[-1] + len(part))
    return Logical(first, last, "".join(parts), tuple(starts))


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
    return [text[start:end] for start, end in lex_spans(text)[0]]


def lex_spans(text: str) -> tuple[list[tuple[int, int]], int | None]:
    """Where the words and operators of one logical line are (start, end offsets), and
    where a comment starts (None when there is none)."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while pos < len(text):
        if text[pos] in " \t\r":
            pos += 1
            continue
        if text[pos] == "#":
            return spans, pos
        redirect = REDIRECT.match(text, pos)  # before operators: "&>" is not "&"
        if redirect:
            spans.append((pos, redirect.end()))
            pos = redirect.end()
            continue
        operator = next((op for op in OPERATORS if text.startswith(op, pos)), None)
        if operator:
            spans.append((pos, pos + len(operator)))
            pos += len(operator)
            continue
        end = max(min(_word_end(text, pos), len(text)), pos + 1)
        spans.append((pos, end))
        pos = end
    return spans, None


# What shlex.split would act on in a word: quotes, escapes, and blanks other than its own.
_QUOTING = re.compile(r"""['"\\]|[^\S \t\r\n]""")


def unquote(raw: str) -> str:
    """A word without its quotes, variables and substitutions kept as written."""
    if "$(" in raw or "`" in raw:
        return raw[1:-1] if len(raw) > 1 and raw[0] == raw[-1] == '"' else raw
    if not _QUOTING.search(raw):  # nothing to unquote: shlex reads a long word in O(n^2)
        parts = raw.split()
        return parts[0] if len(parts) == 1 else (raw if parts else "")
    try:
        parts = shlex.split(raw)
    except ValueError:  # an unmatched quote: keep the text
        return raw
    if len(parts) == 1:
        return parts[0]
    return raw if parts else ""  # several parts: blanks inside ${...}; keep it whole


def commands(
    tokens: list[str], expand: Callable[[str], list[str] | None] | None = None
) -> Iterator[list[str]]:
    """Simple commands: words between operators, without redirections and their targets.
    ``expand``: the words a raw word becomes (variables the script set), None to keep it."""
    for _, words in commands_after(tokens, expand):
        yield words


def commands_after(
    tokens: list[str], expand: Callable[[str], list[str] | None] | None = None
) -> Iterator[tuple[str | None, list[str]]]:
    """Like :func:`commands`, each with the operator before it (None at the line's start):
    after ``&&`` or ``|`` a command may not run, or runs in a subshell."""
    for before, words, _ in delimited_commands(tokens, expand):
        yield before, words


def delimited_commands(
    tokens: list[str], expand: Callable[[str], list[str] | None] | None = None
) -> Iterator[tuple[str | None, list[str], str | None]]:
    """Like :func:`commands_after`, each also with the operator that ends it (None at the
    end of the tokens): ``&`` sends it to the background."""
    words: list[str] = []
    before: str | None = None
    target = False  # the next word is a redirection's file
    for token in tokens:
        if token in OPERATORS:
            if words:
                yield before, words, token
                before = token
            elif token != "\n":
                before = token  # `( cd x )`: the subshell's opening
            words, target = [], False
        elif REDIRECT.fullmatch(token):
            target = True
        elif target:
            target = False
        else:
            expanded = expand(token) if expand is not None else None
            words.extend([unquote(token)] if expanded is None else expanded)
    if words:
        yield before, words, None
