"""Whether a line added just before the launch line runs exactly when the launch runs.

A line put above ``then srun ...`` joins the ``if``'s condition (srun then runs where the
condition said not to); above a ``case`` arm it is no command at all (the script no longer
parses); inside an array literal it becomes words of the array (``export`` runs instead of
the training); above ``cd x && srun`` it runs when ``cd`` fails and srun does not. So a line
goes in only where the launch starts a command of its own, at the start of its logical
line, outside any array literal or here-document: otherwise the caller writes nothing and
says why (``unsafe_before``).
"""

from __future__ import annotations

import os

from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.launch_line.lexing import lex, logical_lines, unquote
from tuneadvisor.slurm.launch_line.model import LaunchLine

__all__ = ["unsafe_before"]

# Words that make what follows them part of a compound command or a condition.
_RESERVED = frozenset(
    {
        "then",
        "do",
        "else",
        "elif",
        "if",
        "while",
        "until",
        "for",
        "select",
        "case",
        "in",
        "esac",
        "fi",
        "done",
        "function",
        "!",
        "{",
        "}",
        "[[",
        "]]",
        "(",
        ")",
        "coproc",
    }
)
# Operators before the launch that make it run only sometimes, or in a pipeline's subshell.
_CONDITIONAL = frozenset({"&&", "||", "|", "|&", "&"})
_CONTINUES = frozenset({"|", "|&", "&&", "||"})  # a newline after these goes on


def unsafe_before(job: JobScript, launch: LaunchLine) -> str | None:
    """Why a line written right before ``launch.line`` would not run exactly when the
    launch does; None where it would."""
    lines = [(line.number, line.text) for line in job.lines]
    in_array = continues = False
    for logical in logical_lines(lines):
        if logical.first == launch.line:
            if in_array:
                return "the launch is inside an array literal"
            if continues:
                return "the launch line continues the command before it"
            return _starts_badly(logical.text, launch)
        if logical.first > launch.line:
            break
        tokens = lex(logical.text)
        in_array = _array_open_after(tokens, in_array)
        if tokens:  # blank lines and comments do not end a command that goes on
            continues = tokens[-1] in _CONTINUES
    return "the launch line does not start a command (a here-document or a quoted string)"


def _array_open_after(tokens: list[str], open_before: bool) -> bool:
    """Whether an array literal (``cmd=(``) is still open after a line's tokens."""
    open_now = open_before
    for index, token in enumerate(tokens):
        if open_now:
            open_now = token != ")"
        elif token == "(" and index and tokens[index - 1].endswith("="):
            open_now = True
    return open_now


def _starts_badly(text: str, launch: LaunchLine) -> str | None:
    tokens = lex(text)
    if not tokens:
        return "the launch line is empty"
    first = tokens[0]
    if first in _RESERVED or (len(tokens) > 1 and tokens[1] in {")", "("}):
        return f"the launch line begins with {first!r}, part of a compound command"
    program = _program(launch)
    for token in tokens:
        if token in _CONDITIONAL:
            return f"the launch runs after {token!r}, only when the command before it allows"
        if program is not None and os.path.basename(unquote(token)) == program:
            return None
    if program is None and not any(token in _CONDITIONAL for token in tokens):
        return None
    return "the launch's command is not found at the start of its line"


def _program(launch: LaunchLine) -> str | None:
    """The first word of the launch's outermost program, as its base name."""
    if launch.launchers:
        return launch.launchers[0].name.split()[0]
    if launch.python is not None:
        return os.path.basename(launch.python)
    return None
