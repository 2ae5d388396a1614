"""tuneadvisor/numbers.py, the one conversion of every reader (issue 23, points 12-13): a
whole number is ASCII digits only, and a float read from an input is finite and at most
10^30, or the reader's own error, never an OverflowError or a ValueError from deep inside."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuneadvisor.numbers import (
    MAX_NUMBER,
    ascii_int,
    finite_float,
    finite_int,
    is_ascii_digits,
    is_finite_number,
)

UNICODE_DIGITS = ["²", "³", "¹", "٣", "０", "۵", "१", "߁", "𝟡"]


class ReaderError(ValueError):
    """A reader's own error type, as finite_float raises it."""


@pytest.mark.parametrize("digit", UNICODE_DIGITS)
def test_unicode_digits_that_str_isdigit_takes_are_no_whole_number(digit: str) -> None:
    assert digit.isdigit()  # what the readers used to trust
    assert not is_ascii_digits(digit) and not is_ascii_digits("1" + digit)
    assert ascii_int(digit) is None and ascii_int("1" + digit) is None


@given(st.text(max_size=40))
def test_ascii_int_is_the_number_of_ascii_digits_up_to_the_bound(text: str) -> None:
    number = ascii_int(text)
    plain = text != "" and all("0" <= c <= "9" for c in text)
    assert is_ascii_digits(text) == plain
    if number is None:
        assert not plain or int(text) > MAX_NUMBER
    else:
        assert plain and number == int(text) and 0 <= number <= MAX_NUMBER


def test_ascii_int_of_a_number_of_100000_digits_is_none_not_int_s_limit() -> None:
    assert ascii_int("9" * 100_000) is None
    assert ascii_int("0" * 100 + "7") == 7


NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.sampled_from(["inf", "-inf", "nan", "Infinity", "NaN", "1e999", "9" * 400, "x", "", "²"]),
    st.text(max_size=10),
)


@given(NUMBERS)
def test_finite_float_is_finite_and_bounded_or_the_readers_own_error(value: float | str) -> None:
    try:
        number = finite_float(value, "the value", ReaderError)
    except ReaderError as error:
        assert str(error).startswith("the value ")
        return
    assert math.isfinite(number) and abs(number) <= MAX_NUMBER
    assert finite_int(value, "the value", ReaderError) == int(number)


@pytest.mark.parametrize(
    ("value", "said"),
    [(10**400, "beyond the range of a number"), (float("inf"), "not a finite number"),
     ("nan", "not a finite number"), (1e31, "beyond any real value"), ("x", "not a number")],
)  # fmt: skip
def test_finite_float_says_why(value: float | str, said: str) -> None:
    with pytest.raises(ReaderError, match=said):
        finite_float(value, "End", ReaderError)


@given(st.one_of(NUMBERS, st.booleans(), st.none(), st.lists(st.integers(), max_size=2)))
def test_a_json_number_is_finite_bounded_and_no_bool(value: object) -> None:
    expected = (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and (abs(value) <= MAX_NUMBER if isinstance(value, int) else math.isfinite(value)
             and abs(value) <= MAX_NUMBER)
    )  # fmt: skip
    assert is_finite_number(value) == expected


def test_a_log_opened_to_append_keeps_its_path_as_its_name(tmp_path: Path) -> None:
    """The watch screen says where the program's output goes by the log's name: the path,
    not the descriptor's number (os.fdopen names a file by its fd)."""
    from tuneadvisor.files import open_append, open_append_bytes

    for opener in (open_append_bytes, open_append):
        path = tmp_path / f"{opener.__name__}.log"
        with opener(path, "log") as log:
            assert log.name == str(path)
