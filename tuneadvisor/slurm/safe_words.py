"""Values on their way into a job script or a command line, checked against what they
stand for and quoted for the shell that will read them.

A report, a rule pack or a training script is a file people pass around: whatever it says
must never become code when the job starts. So every value written into a job script or a
command goes through one of these: a count is a bounded whole number, a time or a size is
what sbatch reads, an option name looks like one, and nothing holds a control character
(a newline ends the line and starts a command). Each refusal is one ``InputError`` line.
"""

from __future__ import annotations

import math
import os
import re
import shlex

from tuneadvisor.errors import InputError
from tuneadvisor.slurm.options import validate

__all__ = [
    "MAX_COUNT",
    "MAX_WORD",
    "checked_count",
    "checked_directive",
    "checked_text",
    "is_option_name",
    "is_plain_word",
    "shell_word",
]

MAX_COUNT = 1_000_000  # cores, tasks, GPUs, workers, steps: far above any real job
MAX_WORD = 4096  # one word of a command line (a path, a value)

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# ``--num-workers``, ``-j``, ``--lr.min``: what argparse and getopt take for an option.
_OPTION = re.compile(r"-{1,2}[A-Za-z0-9][A-Za-z0-9_.-]{0,100}")
# A word the shell reads as itself: no quoting, expansion, globbing or operator.
_PLAIN = re.compile(r"[A-Za-z0-9_.,:+=@%/-]{1,200}")

Where = str | os.PathLike[str] | None


def checked_text(value: object, what: str, where: Where = None) -> str:
    """``value`` as a string of at most MAX_WORD characters without control characters."""
    if not isinstance(value, str):
        raise InputError(where, f"{what} must be text, not {type(value).__name__}")
    if len(value) > MAX_WORD:
        raise InputError(where, f"{what} is longer than {MAX_WORD} characters")
    bad = _CONTROL.search(value)
    if bad is not None:
        raise InputError(where, f"{what} holds a control character ({bad.group()!r}): refused")
    return value


def checked_count(
    value: object, what: str, where: Where = None, *, minimum: int = 0, maximum: int = MAX_COUNT
) -> int:
    """A whole number in ``minimum..maximum``: an int, an integral float or a string of
    digits; never a bool, NaN, infinity, or a number of thousands of digits."""
    number: int | None = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]{1,12}", value.strip()):
        number = int(value.strip())
    if number is None:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
        raise InputError(where, f"{what} must be a whole number, not {shown}")
    if not minimum <= number <= maximum:
        raise InputError(where, f"{what} must be {minimum}..{maximum}, not {_short(number)}")
    return number


def checked_directive(name: str, value: object, where: Where = None) -> str:
    """A value for ``#SBATCH --name=value`` that sbatch accepts (``--time``, ``--mem``...)."""
    text = checked_text(value, f"--{name}", where)
    error = validate(name, text)
    if error:
        raise InputError(where, f"--{name}={text!r}: {error}")
    return text


def is_option_name(name: str) -> bool:
    """``--num-workers``: a word that can only be read as an option name."""
    return _OPTION.fullmatch(name) is not None


def is_plain_word(word: str) -> bool:
    """A value the shell reads as itself (``8``, ``true``, ``0.5``, ``a/b.txt``)."""
    return _PLAIN.fullmatch(word) is not None


def shell_word(value: object, what: str, where: Where = None) -> str:
    """One word for a shell command line: checked text, quoted when it needs quotes."""
    return shlex.quote(checked_text(value, what, where))


def _short(number: int) -> str:
    digits = len(str(abs(number))) if abs(number) < 10**100 else None
    return str(number) if digits is not None and digits <= 20 else "a huge number"
