"""Reading a JSON object field by field with types checked: what ``run.json`` is read with.
A missing field gives its default; a field of the wrong type is one ``InputError`` line that
names the file and the field (``epochs[2].accuracy``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from tuneadvisor.errors import InputError
from tuneadvisor.numbers import is_finite_number


class JsonFields:
    """One JSON object of a run record read field by field: a missing field gives its
    default, a field of the wrong type an ``InputError`` naming the file and the field."""

    def __init__(self, data: object, file: Path | None, where: str = "") -> None:
        if not isinstance(data, Mapping):
            raise InputError(
                file, f"run record: {where.rstrip('.') or 'the record'} is not an object"
            )
        self.data: Mapping[str, Any] = data
        self.file = file
        self.where = where

    def get(self, key: str, ok: Callable[[object], bool], want: str, default: Any) -> Any:
        if key not in self.data:
            return default
        value = self.data[key]
        if not ok(value):
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            raise InputError(self.file, f"run record: {self.where}{key} is {shown}, not {want}")
        return value

    def text(self, key: str, default: str = "") -> str:
        return str(self.get(key, is_str, "a string", default))

    def opt_text(self, key: str) -> str | None:
        value = self.get(key, or_none(is_str), "a string or null", None)
        return None if value is None else str(value)

    def whole(self, key: str, default: int) -> int:
        return int(self.get(key, is_int, "a whole number", default))

    def opt_whole(self, key: str) -> int | None:
        value = self.get(key, or_none(is_int), "a whole number or null", None)
        return None if value is None else int(value)

    def number(self, key: str) -> float | None:
        """A number as written (an int stays an int: the file is rewritten as it was read)."""
        value = self.get(key, or_none(is_number), "a finite number or null", None)
        return cast("float | None", value)

    def loss(self, key: str) -> float | None:
        """A training loss: NaN or infinite when the training diverged, which is no number
        to compute with (None here; the event keeps what was written)."""
        value = self.get(key, or_none(is_number_or_diverged), "a number or null", None)
        return cast("float | None", value) if is_number(value) else None

    def texts(self, key: str) -> tuple[str, ...]:
        items = self.get(key, list_of(is_str), "a list of strings", [])
        return tuple(str(v) for v in items)

    def mapping(self, key: str) -> dict[str, Any]:
        """A JSON object kept as it is (what the training script or the allocation wrote)."""
        return dict(self.get(key, is_mapping, "an object", {}))

    def has(self, key: str) -> bool:
        return key in self.data

    def obj(self, key: str) -> JsonFields:
        return JsonFields(self.mapping(key), self.file, f"{self.where}{key}.")

    def objects(self, key: str, most: int | None = None) -> tuple[JsonFields, ...]:
        """A list of objects; past ``most`` of them, one InputError (checked first)."""
        raw = self.data.get(key)
        if most is not None and isinstance(raw, list) and len(raw) > most:
            raise InputError(
                self.file,
                f"run record: {self.where}{key} holds {len(raw):,} entries (at most {most:,})",
            )
        items = self.get(key, list_of(is_mapping), "a list of objects", [])
        return tuple(
            JsonFields(v, self.file, f"{self.where}{key}[{i}].") for i, v in enumerate(items)
        )


def is_str(value: object) -> bool:
    return isinstance(value, str)


def is_bool(value: object) -> bool:
    return isinstance(value, bool)


def is_int(value: object) -> bool:
    return isinstance(value, int) and is_finite_number(value)


def is_number(value: object) -> bool:
    """Finite and below 1e30 (``files.finite_float``): ``Infinity`` and a number of 400
    digits are refused here, not in the arithmetic of whoever reads the record."""
    return is_finite_number(value)


def is_number_or_diverged(value: object) -> bool:
    """A finite number, NaN or an infinity (a float, as json writes a diverged loss)."""
    return is_number(value) or (isinstance(value, float) and not math.isfinite(value))


def is_mapping(value: object) -> bool:
    return isinstance(value, Mapping)


def or_none(ok: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda value: value is None or ok(value)


def list_of(ok: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda value: isinstance(value, list) and all(ok(v) for v in value)
