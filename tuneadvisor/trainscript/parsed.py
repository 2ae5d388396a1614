"""One parse of a training script, shared by line kinds and the script scan.

``parse_script(text)`` parses once, on first use of the tree; ``kinds.analyze_source`` and
``scan.scan_script`` both take the result, and each builds only the part of the scope index it
needs (``ParsedScript.scopes`` keeps it), so a file read for both in one command is parsed and
indexed once. Line kinds of a large file need no whole tree (``top_level_groups``).
"""

from __future__ import annotations

import ast
import gc
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property

from tuneadvisor.trainscript.scopes import ScopeIndex


class ParsedScript:
    """The source text, its ``ast.Module`` (None when it does not parse) and its scope index.

    The text is parsed on first use of ``tree`` or ``error``: line kinds of a large file are
    worked out a group of top-level statements at a time (``groups``) and never need the whole
    tree; the scan, where it runs, parses it then."""

    def __init__(self, text: str) -> None:
        # A BOM read as text: Python skips it, ast.parse does not.
        self.text = text.lstrip("\ufeff")

    @property
    def tree(self) -> ast.Module | None:
        return self._outcome[0]

    @property
    def error(self) -> str | None:
        """Why the text does not parse, for the scan's note."""
        return self._outcome[1]

    @property
    def is_parsed(self) -> bool:
        """Whether the whole tree is built already (a later ``tree`` costs nothing)."""
        return "_outcome" in self.__dict__

    @cached_property
    def _outcome(self) -> tuple[ast.Module | None, str | None]:
        with gc_paused():
            try:
                return parse_module(self.text), None
            except SyntaxError as exc:
                return None, f"line {exc.lineno}: {exc.msg}"
            except (ValueError, OverflowError, RecursionError, MemoryError) as exc:
                # null bytes, absurd nesting
                return None, str(exc) or type(exc).__name__

    @cached_property
    def scopes(self) -> ScopeIndex:
        """The scope index (raises ValueError for a script that does not parse)."""
        if self.tree is None:
            raise ValueError(f"the script does not parse: {self.error}")
        return ScopeIndex(self.tree)

    @cached_property
    def text_lines(self) -> list[str]:
        """Lines split the way the parser counts them (not ``str.splitlines``: form feeds)."""
        return re.split(r"\r\n|\r|\n", self.text)

    @cached_property
    def byte_lines(self) -> list[bytes]:
        """Every line in UTF-8: the AST's column offsets count bytes."""
        return [line.encode("utf-8", "surrogatepass") for line in self.text_lines]

    def line(self, lineno: int) -> bytes:
        """One line in UTF-8 (empty past the end), encoding only that line."""
        lines = self.text_lines
        return (
            lines[lineno - 1].encode("utf-8", "surrogatepass") if 0 < lineno <= len(lines) else b""
        )

    def same_source(self, text: str) -> bool:
        """Whether ``text`` parses to this very tree: the same text up to a BOM, line ends
        (``\\r\\n``, ``\\r``) and final newlines, as a profile's source reader gives it."""
        return _normalized(text.lstrip("\ufeff")) == _normalized(self.text)


# A file this large is parsed a group of top-level statements at a time: one ast.parse of a
# 2.2 MB file holds the parser's own copy of the whole file next to the tree it builds (a peak
# of ~290 MiB; in groups, the tree alone, ~170 MiB; line kinds keep one group's tree at a
# time). Smaller files gain nothing from it.
CHUNKED_FROM_CHARS = 1 << 18
GROUP_LINES = 2000  # lines of one group, at least (a group ends where a statement does)
# Where a line begins at the margin: a top-level statement may start there. Not a comment,
# not a closing bracket, not a clause that continues the statement above it.
_MARGIN = re.compile(r"[^\s#)\]}]")
_CONTINUES = re.compile(r"(?:else|elif|except|finally)\b")
_LINE_END = re.compile(r"\r\n|\r|\n")  # Python's own line ends (not splitlines' others)


def parse_module(
    text: str, *, chunked_from: int = CHUNKED_FROM_CHARS, group_lines: int = GROUP_LINES
) -> ast.Module:
    """``ast.parse(text)``, the same tree (every node, every position), built a group of
    top-level statements at a time for a large file. A group ends before a line at the
    margin; where that line does not start a statement (it is inside a string or brackets,
    or after a backslash), the group does not parse, and the whole text is parsed at once,
    which also gives the syntax error with its own line number."""
    if len(text) < chunked_from or "barry_as_FLUFL" in text:  # that future changes the grammar
        return ast.parse(text)
    lines = _lines(text)
    body: list[ast.stmt] = []
    start = 0
    try:
        for end in _group_ends(lines, group_lines):
            # padded with empty lines, so that every position is the file's own
            body += ast.parse("\n" * start + "".join(lines[start:end])).body
            start = end
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError):
        return ast.parse(text)
    return ast.Module(body=body, type_ignores=[])


def _lines(text: str) -> list[str]:
    """The text's lines, each with its line end."""
    lines, start = [], 0
    for end in _LINE_END.finditer(text):
        lines.append(text[start : end.end()])
        start = end.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def _group_ends(lines: list[str], group_lines: int) -> Iterator[int]:
    """Where each group ends: before a line at the margin, once a group has its lines."""
    start = 0
    for index in range(group_lines, len(lines)):
        line = lines[index]
        if index - start >= group_lines and _MARGIN.match(line) and not _CONTINUES.match(line):
            yield index
            start = index
    yield len(lines)


def top_level_groups(text: str, group_lines: int = GROUP_LINES) -> Iterator[list[ast.stmt]]:
    """The top-level statements of a large ``text``, one group at a time, each as
    ``parse_module`` would give it (every position the file's own). Raises what
    ``ast.parse`` raises where a group does not parse on its own: the caller then parses the
    whole text. A group's tree is the caller's to drop before asking for the next."""
    if "barry_as_FLUFL" in text:
        raise SyntaxError("the grammar changes: parsed whole")
    lines = _lines(text)
    start = 0
    for end in _group_ends(lines, group_lines):
        yield ast.parse("\n" * start + "".join(lines[start:end])).body
        start = end


def parse_script(text: str) -> ParsedScript:
    """Parse ``text`` once for both line kinds and the scan. Never raises on bad source."""
    return ParsedScript(text)


def _normalized(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic-collector passes while a big, acyclic AST and its index are built: those
    passes cost as much as the parse. What was built is then frozen (moved out of the
    collector's generations): the tree stays alive for the scan of the same command, and the
    collector would otherwise walk all of it again on every later pass (1.3 s of `report` on
    the 50,000-line profile). Frozen objects are still freed by reference counting."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
