"""The job script's lines and ``#SBATCH`` arguments, cut as sbatch's ``_get_argument`` cuts
them, and the records the model is made of (lines, tokens, directives, problems)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tuneadvisor.slurm.options import C_SPACE

__all__ = [
    "CONFLICTING_DIRECTIVES",
    "DEPRECATED_PREFIX",
    "DIRECTIVE_AFTER_COMMAND",
    "DOS_LINE_BREAKS",
    "EMPTY_SCRIPT",
    "HETJOB_COMPONENTS",
    "IGNORED_DIRECTIVE",
    "INVALID_DIRECTIVE",
    "NOT_A_BATCH_SCRIPT",
    "NULL_CHARACTER",
    "SITE_PLUGIN_OPTION",
    "Directive",
    "Line",
    "Problem",
    "Token",
]

# Problem ids (finding ids where the advisor reports them; never rename).
INVALID_DIRECTIVE = "invalid-directive"
DOS_LINE_BREAKS = "dos-line-breaks"
NOT_A_BATCH_SCRIPT = "not-a-batch-script"
EMPTY_SCRIPT = "empty-script"
NULL_CHARACTER = "null-character"
CONFLICTING_DIRECTIVES = "conflicting-directives"
DIRECTIVE_AFTER_COMMAND = "directive-after-command"
IGNORED_DIRECTIVE = "ignored-directive"
DEPRECATED_PREFIX = "deprecated-prefix"
HETJOB_COMPONENTS = "hetjob-components"
SITE_PLUGIN_OPTION = "site-plugin-option"  # a SPANK plugin's option (Shifter's --image...)

MAGIC = ("#SBATCH", "#SLURM")
HETJOB_WORD = re.compile(r"(?i)(?:het|pack)job(?=[ \t\n\v\f\r]|$)")


@dataclass(frozen=True)
class Line:
    number: int  # 1-based
    text: str  # without its line break
    ending: str  # "\n", "\r\n", or "" for a last line without one


@dataclass(frozen=True)
class Token:
    """One argument of a directive line, as sbatch's ``_get_argument`` cuts it."""

    line: int
    start: int  # offsets of the raw text in the line's text
    end: int
    value: str  # quotes and backslashes removed: what getopt sees
    offsets: tuple[int, ...]  # for each character of value, its offset in the line's text
    component: int = 0  # heterogeneous-job component


@dataclass(frozen=True)
class Directive:
    """One option sbatch reads from the script, where it is written and its value."""

    name: str  # canonical long name ("cpus-per-task")
    value: str  # as sbatch receives it; "" when given without a value
    line: int  # line of the option itself
    spelling: str  # as written: "--cpus-per-task", "--cpus-per-t", "-c"
    component: int
    token: int  # index of the option's token in JobScript.tokens
    letter: int | None = None  # short options: index of the letter in the token's value
    value_at: int | None = None  # attached value: where it starts in the token's value
    value_token: int | None = None  # value given as the next argument: its token index

    @property
    def has_value(self) -> bool:
        return self.value_at is not None or self.value_token is not None


@dataclass(frozen=True)
class Problem:
    id: str  # INVALID_DIRECTIVE, DOS_LINE_BREAKS, ...
    line: int | None  # 1-based; None for the whole file
    option: str | None  # canonical long name when one is concerned
    message: str
    fatal: bool  # sbatch refuses the script


# ----------------------------------------------------------------------------- lines


def split_lines(text: str) -> tuple[Line, ...]:
    lines: list[Line] = []
    parts = text.split("\n")
    for index, part in enumerate(parts):
        if index == len(parts) - 1:
            if part:
                lines.append(Line(index + 1, part, ""))
        elif part.endswith("\r"):
            lines.append(Line(index + 1, part[:-1], "\r\n"))
        else:
            lines.append(Line(index + 1, part, "\n"))
    return tuple(lines)


def is_command(text: str) -> bool:
    stripped = text.lstrip(C_SPACE)
    return bool(stripped) and not stripped.startswith("#")


@dataclass
class LineScan:
    tokens: list[Token] = field(default_factory=list)
    separator: bool = False  # the line starts the next hetjob component
    error: str | None = None  # fatal for sbatch: unmatched quote, leading ':'


def _read_argument(
    text: str, pos: int, line: int, rest: int
) -> tuple[Token | None, int, str | None]:
    """One argument from ``pos`` (after blanks; ``rest`` is where the blanks began, which
    sbatch's messages quote from): ``_get_argument``'s state machine."""
    start, quote, escape = pos, "", False
    chars: list[str] = []
    offsets: list[int] = []
    while pos < len(text) and (quote or text[pos] not in C_SPACE):
        char = text[pos]
        if escape:
            escape = False
        elif char == "\\":
            escape, pos = True, pos + 1
            continue
        elif quote:
            if char == quote:
                quote, pos = "", pos + 1
                continue
        elif char in "\"'":
            quote, pos = char, pos + 1
            continue
        elif char == "#":
            break
        chars.append(char)
        offsets.append(pos)
        pos += 1
    error = f"Unmatched `{quote}` in [{text[rest:]}]" if quote else None
    if not chars:
        return None, pos, error
    return Token(line, start, pos, "".join(chars), tuple(offsets)), pos, error


def scan_directive(text: str, pos: int, line: int) -> LineScan:
    scan = LineScan()
    while True:
        rest = pos
        while pos < len(text) and text[pos] in C_SPACE:
            pos += 1
        if HETJOB_WORD.match(text, pos):
            scan.separator = not scan.tokens
            return scan
        if pos < len(text) and text[pos] == ":":
            scan.error = f"Unexpected `:` in [{text[pos:]}]"
            return scan
        if pos >= len(text):
            return scan
        token, pos, scan.error = _read_argument(text, pos, line, rest)
        if token is None:  # "" or a comment: sbatch stops reading the line
            return scan
        scan.tokens.append(token)
        if scan.error:
            return scan
