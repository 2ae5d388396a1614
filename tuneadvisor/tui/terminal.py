"""The screens need a terminal: without one on stdout (a batch job, nohup, a pipe) a Textual
app never ends and spins a core (issue 24, point 8). No Textual here: the refusal comes
before it loads."""

from __future__ import annotations

import sys

from tuneadvisor.errors import InputError


def require_terminal(command: str, instead: str) -> None:
    """InputError (one line, exit 2) naming what to run instead, unless stdout is a
    terminal."""
    if not sys.stdout.isatty():
        raise InputError(
            None,
            f"{command}: stdout is not a terminal (a batch job, nohup or a pipe), and the "
            f"screen needs one: {instead}",
        )
