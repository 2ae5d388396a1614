"""Text that came from an input, made safe to print on a terminal (issue 23, point 11).

A job name or an option holding ``ESC ] 0;...`` would set the window title, ``ESC [ 2J``
clear the screen, ``\\r`` hide the start of a line of the diff `apply` shows before
``--submit``. Every C0 and C1 control character (and DEL) becomes its visible ``\\xNN``
escape, except the newline and the tab, which are layout. Applied where text leaves for a
terminal or a document (the reports, the diffs, `doctor`, the TUI, the one error line),
never in the parsers: the JSON report keeps the exact value, JSON-escaped.

The TUI also escapes Rich markup where Textual parses a string as markup (a border title):
``tui/safe_text.py``, which keeps rich out of the reports' imports.
"""

from __future__ import annotations

import re

# C0 (0x00-0x1f) but \t (0x09) and \n (0x0a), DEL (0x7f), C1 (0x80-0x9f)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# the same, the newline and tab included: for text that must stay on one line
_CONTROL_ONE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _visible(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def terminal_safe(text: str) -> str:
    """``text`` with every control character but ``\\n`` and ``\\t`` written as ``\\xNN``."""
    return _CONTROL.sub(_visible, text)


def one_line_safe(text: str) -> str:
    """``text`` with every control character, ``\\n`` and ``\\t`` too, written as ``\\xNN``:
    for a title or a table cell that must stay one line."""
    return _CONTROL_ONE_LINE.sub(_visible, text)


# A name read from a file (a kernel, an operator, a trace folder, a setting) shown on any face:
# long C++ template names are cut here, so a 16 MB name never reaches a table or a terminal.
NAME_LIMIT = 300


def name_safe(text: str, limit: int = NAME_LIMIT) -> str:
    """A name that came from a file, as every face shows it: on one line (control characters
    and line breaks as ``\\xNN``, so a name cannot forge a report line or reach the terminal)
    and at most ``limit`` characters, cut with ``…``."""
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return one_line_safe(text)
