"""Numbers read from inputs: whole numbers in ASCII digits only, and every conversion to a
float checked to be finite and of a real size, in one place for every reader.

``str.isdigit`` holds for ``'²'`` (which ``int()`` refuses) and ``float()`` takes ``inf``,
``nan`` and ``1e999``; a number of 309 digits passes the 1,000-digit bound of the inputs
(``files.checked_text``) and overflows only later, in whatever does arithmetic with it.
Nothing here imports the package: the readers, the advisor and the commands all use it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TypeGuard

_ASCII_DIGITS = re.compile(r"[0-9]+")
# What float() reads, less what it also takes and no input writes: Unicode digits ("٣.٥"),
# underscores ("1_0") and Unicode spaces around the number. inf and nan are read here and
# refused by finite_float as not finite (the message says so).
_ASCII_NUMBER = re.compile(
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan)",
    re.IGNORECASE,
)
_ASCII_SPACE = " \t\r\n\v\f"
# The longest number text read (the inputs hold none over 1,000 digits: files.MAX_DIGITS);
# longer is no number, whatever its characters.
MAX_NUMBER_TEXT = 1000
# No figure an input holds comes near this (Slurm's NO_VAL64 is 1.8e19); below it, the
# products and sums the advice makes of a few of them stay finite.
MAX_NUMBER = 1e30


def is_ascii_digits(text: str) -> bool:
    """``text`` is a whole number in ASCII digits. ``str.isdigit`` is no such test: it holds
    for ``'²'`` and every other Unicode digit, which ``int()`` then refuses."""
    return _ASCII_DIGITS.fullmatch(text) is not None


def is_ascii_number(text: str) -> bool:
    """``text`` is a decimal number written in ASCII (``12``, ``-0.5``, ``1e-3``, ``inf``),
    spaces around it allowed, ``MAX_NUMBER_TEXT`` characters at most: what ``float()`` takes
    less the Unicode digits and underscores it takes too."""
    return len(text) <= MAX_NUMBER_TEXT and (
        _ASCII_NUMBER.fullmatch(text.strip(_ASCII_SPACE)) is not None
    )


def ascii_int(text: str) -> int | None:
    """The whole number ``text`` holds in ASCII digits, up to ``MAX_NUMBER``; else None (a
    count a reader takes as unknown when it is not one)."""
    # more than 31 significant digits is past MAX_NUMBER (and int() refuses 4,300)
    if _ASCII_DIGITS.fullmatch(text) is None or len(text.lstrip("0")) > 31:
        return None
    number = int(text)
    return number if number <= MAX_NUMBER else None


def finite_float(
    value: str | float, what: str, error: Callable[[str], Exception] = ValueError
) -> float:
    """``value`` (a number, or the text of one) as a finite float; anything else raises
    ``error(message)`` naming ``what``. Every reader converts through here once: ``float()``
    takes ``inf``, ``nan`` and ``1e999``, an int of 309 digits overflows only later, deep in
    whatever does arithmetic with it, and so does the product of two numbers of 200 digits
    (hence the bound of ``MAX_NUMBER``, far above any real figure). A text is read only when
    it is a number in ASCII (``is_ascii_number``): ``float("٣.٥")`` is 3.5."""
    if isinstance(value, str) and not is_ascii_number(value):
        raise error(f"{what} is {_shown(value)}, not a number")
    try:
        number = float(value)
    except OverflowError:
        raise error(f"{what} is beyond the range of a number") from None
    except (TypeError, ValueError):
        raise error(f"{what} is {_shown(value)}, not a number") from None
    if not math.isfinite(number):
        raise error(f"{what} is {_shown(value)}, not a finite number") from None
    if abs(number) > MAX_NUMBER:
        raise error(f"{what} is {_shown(value)}, beyond any real value (1e30)") from None
    return number


def is_finite_number(value: object) -> TypeGuard[int | float]:
    """A JSON number (not a bool) that ``finite_float`` takes: what a field of numbers may
    hold."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        finite_float(value, "a number")
    except ValueError:
        return False
    return True


def finite_int(
    value: str | float, what: str, error: Callable[[str], Exception] = ValueError
) -> int:
    """``finite_float`` rounded down: a count or a moment that arithmetic can use."""
    return int(finite_float(value, what, error))


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
