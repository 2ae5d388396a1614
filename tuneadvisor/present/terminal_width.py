"""The columns a terminal has: ``$COLUMNS``, else standard output's terminal, else a default
(what ``shutil.get_terminal_size`` gives, without importing shutil: it loads bz2 and lzma, a
cost to every command's start)."""

from __future__ import annotations

import os
import sys


def terminal_columns(default: int) -> int:
    """$COLUMNS, else stdout's terminal's width, else ``default``."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else default
