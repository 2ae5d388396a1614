"""The one error type that reaches the user as a single line and exit status 2."""

from __future__ import annotations

import os

EXIT_BAD_INPUT = 2
# Ctrl-C (128 + SIGINT), as a shell reports it; cli.EXIT_INTERRUPTED is the same number,
# defined there before any import so that a Ctrl-C while starting can use it.
EXIT_INTERRUPTED = 130


class InputError(Exception):
    """Bad input from the user: a file that is missing, unreadable, corrupt or hostile.

    The CLI prints ``str(error)`` as one line on stderr and exits with status 2.
    """

    def __init__(self, path: str | os.PathLike[str] | None, problem: str) -> None:
        self.path = None if path is None else os.fspath(path)
        self.problem = problem
        super().__init__(self.one_line())

    def one_line(self) -> str:
        problem = " ".join(self.problem.split())  # never more than one line
        return f"{self.path}: {problem}" if self.path else problem
