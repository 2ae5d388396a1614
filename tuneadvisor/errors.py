"""The one error type that reaches the user as a single line and exit status 2."""

from __future__ import annotations

import os
from pathlib import Path

EXIT_BAD_INPUT = 2


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


MAX_TEXT_INPUT = 64 * 1024 * 1024  # job scripts, seff text, metrics logs


def read_text_input(path: str | os.PathLike[str], what: str, limit: int = MAX_TEXT_INPUT) -> str:
    """Read a text input, turning every failure into one InputError line."""
    file = Path(path)
    try:
        # A FIFO or device would block or never end: only regular files are read.
        if file.exists() and not file.is_file() and not file.is_dir():
            raise InputError(path, f"{what} is not a regular file")
        with file.open("rb") as stream:
            data = stream.read(limit + 1)
        if len(data) > limit:
            raise InputError(path, f"{what} is larger than {limit // (1024 * 1024)} MiB")
    except FileNotFoundError:
        raise InputError(path, f"no such file ({what})") from None
    except IsADirectoryError:
        raise InputError(path, f"{what} is a directory, not a file") from None
    except PermissionError:
        raise InputError(path, f"{what} is not readable (permission denied)") from None
    except OSError as exc:
        raise InputError(path, f"cannot read {what}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"{what} is not UTF-8 text (byte {exc.start})") from None
