"""Which words of a changed line changed: a unified diff's ``-`` line and the ``+`` line that
replaces it, compared word by word, so that ``--num-workers 1`` -> ``4`` shows as the one
changed word and not as two long lines to compare by eye. Plain text: no Textual here."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

Span = tuple[int, int]  # [start, end) in the line
_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")
SIMILAR = 0.5  # below this the two lines are different lines, not one line changed


def _tokens(text: str) -> list[tuple[str, int]]:
    return [(m.group(), m.start()) for m in _TOKENS.finditer(text)]


def changed_words(old: str, new: str) -> tuple[list[Span], list[Span]] | None:
    """The spans of ``old`` that went and of ``new`` that came; None when the lines are
    too different for a word diff to help."""
    a, b = _tokens(old), _tokens(new)
    matcher = difflib.SequenceMatcher(None, [t for t, _ in a], [t for t, _ in b], autojunk=False)
    if matcher.ratio() < SIMILAR:
        return None

    went: list[Span] = []
    came: list[Span] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for tokens, lo, hi, out in ((a, i1, i2, went), (b, j1, j2, came)):
            if hi > lo and not all(t.isspace() for t, _ in tokens[lo:hi]):
                out.append((tokens[lo][1], tokens[hi - 1][1] + len(tokens[hi - 1][0])))
    return went, came


def paired_lines(lines: Sequence[str]) -> dict[int, int]:
    """In a unified diff: each ``-`` line of a run followed by a run of ``+`` lines, paired
    with the ``+`` line at the same place in its run (index of ``-`` -> index of ``+``)."""
    pairs: dict[int, int] = {}
    i = 0
    while i < len(lines):
        if not _is(lines[i], "-"):
            i += 1
            continue
        start = i
        while i < len(lines) and _is(lines[i], "-"):
            i += 1
        removed = range(start, i)
        begin = i
        while i < len(lines) and _is(lines[i], "+"):
            i += 1
        for r, a in zip(removed, range(begin, i), strict=False):
            pairs[r] = a
    return pairs


def _is(line: str, sign: str) -> bool:
    """A removed or added line, not a ``---`` / ``+++`` file header."""
    return line.startswith(sign) and not line.startswith(sign * 3 + " ")
