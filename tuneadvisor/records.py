"""`@record`: a dataclass whose methods are shared code, not code generated per class.

`dataclasses.dataclass` compiles an `__init__`, `__repr__`, `__eq__`, `__hash__`,
`__setattr__` and `__delattr__` for each class it decorates: ~0.9 ms a frozen class, and the
~50 on `report`'s path cost ~45 ms of every report's start (issue 29, point 7). `record` lets
`dataclasses` collect the fields only (no method generated, the cheap part) and gives the class
methods that read them: the same fields, `dataclasses.replace`, `fields`, `asdict` and
`is_dataclass` as before, and mypy checks it as a dataclass (`typing.dataclass_transform`).

Only ``__dataclass_params__`` tells them apart (it says what ``dataclasses`` was asked for:
no generated method); nothing here reads it. What it does not do, it refuses when the class
is defined: `init=False` or keyword-only fields, `InitVar`, ordering, slots and inheritance
between records (none of the classes needs them; use `dataclasses.dataclass` there).
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from itertools import repeat
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T", bound=type)


@overload
def record(cls: T, /) -> T: ...
@overload
def record(*, frozen: bool = True, eq: bool = True) -> Callable[[T], T]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def record(cls: Any = None, /, *, frozen: bool = True, eq: bool = True) -> Any:
    """Make ``cls`` a dataclass (frozen and compared by value unless told otherwise)."""

    def wrap(cls: T) -> T:
        return _build(cls, frozen=frozen, eq=eq)

    return wrap if cls is None else wrap(cls)


def _build(cls: T, *, frozen: bool, eq: bool) -> T:
    own = dict(cls.__dict__)  # what the class defines itself is kept, as dataclasses keeps it
    fields = _fields(cls)
    methods: dict[str, Any] = {"__init__": _init(cls, fields), "__repr__": _repr(fields)}
    compare_key = _key(tuple(f.name for f in fields if f.compare))
    if eq:

        def __eq__(self: Any, other: object) -> bool:
            if other.__class__ is not self.__class__:
                return NotImplemented
            # tuples, as dataclasses compares them: `is` before `==` for each field
            return bool(compare_key(self) == compare_key(other))

        methods["__eq__"] = __eq__
    if frozen:
        methods.update(__setattr__=_frozen_set, __delattr__=_frozen_del)
    for name, method in methods.items():
        if name not in own:  # as dataclasses: what the class defines stays
            setattr(cls, name, method)
    # as dataclasses: a __hash__ of the class's own stays (not the None that defining __eq__
    # leaves); otherwise a frozen record hashes its fields and a mutable one is unhashable
    explicit = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    if eq and not explicit:
        cls.__hash__ = _hash(fields) if frozen else None  # type: ignore[assignment, method-assign]
    return cls


def _fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    """The class's fields, collected by `dataclasses` (which generates no method for them);
    what a record does not keep is refused here."""
    for base in cls.__mro__[1:-1]:
        if dataclasses.is_dataclass(base):
            raise TypeError(f"{cls.__qualname__}: a record does not inherit from a dataclass")
    dataclasses.dataclass(init=False, repr=False, eq=False)(cls)  # the same class, with fields
    for f in cls.__dataclass_fields__.values():  # type: ignore[attr-defined]
        if "InitVar" in str(f.type):
            raise TypeError(f"{cls.__qualname__}.{f.name}: a record has no InitVar fields")
    fields = dataclasses.fields(cls)
    for f in fields:
        if not f.init or f.kw_only:
            raise TypeError(f"{cls.__qualname__}.{f.name}: init=False and kw_only are not kept")
    return fields


def _init(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., None]:
    """The __init__ a dataclass would have: positional or keyword, defaults, factories,
    then ``__post_init__``."""
    name, names, count = cls.__qualname__, tuple(f.name for f in fields), len(fields)
    defaults = {f.name: f.default for f in fields if f.default is not dataclasses.MISSING}
    factories = tuple(
        (f.name, f.default_factory) for f in fields if f.default_factory is not dataclasses.MISSING
    )
    post_init = getattr(cls, "__post_init__", None)
    setattr_, every = object.__setattr__, frozenset(names)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        # one attribute at a time, in the fields' order, as a generated __init__ sets them:
        # the values then live in the instance itself (never touch self.__dict__, which
        # would give each instance a dict of its own: twice the memory of a small one)
        # (`any(map(...))` runs the setattrs in C: a quarter of a Python loop's time)
        if not kwargs and len(args) == count:  # every field by position, or by keyword
            any(map(setattr_, repeat(self), names, args))
        elif not args and kwargs.keys() == every:
            any(map(setattr_, repeat(self), names, map(kwargs.__getitem__, names)))
        else:
            values = _values(name, names, defaults, factories, args, kwargs)
            any(map(setattr_, repeat(self), names, map(values.__getitem__, names)))
        if post_init is not None:
            post_init(self)

    return __init__


def _repr(fields: tuple[dataclasses.Field[Any], ...]) -> Callable[[Any], str]:
    shown = tuple(f.name for f in fields if f.repr)

    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{type(self).__qualname__}({inner})"

    return __repr__


def _hash(fields: tuple[dataclasses.Field[Any], ...]) -> Callable[[Any], int]:
    key = _key(tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)))

    def __hash__(self: Any) -> int:
        return hash(key(self))

    return __hash__


def _key(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The named fields' values of an instance, as a tuple."""
    if len(names) >= 2:
        return attrgetter(*names)
    return lambda item: tuple([getattr(item, name) for name in names])


def _values(
    name: str,
    names: tuple[str, ...],
    defaults: dict[str, Any],
    factories: tuple[tuple[str, Callable[[], Any]], ...],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> dict[str, Any]:
    """Each field's value for a call that leaves some to their defaults (or is wrong)."""
    values = dict(defaults)
    values.update(zip(names, args, strict=False))  # too many: counted below
    if kwargs:
        if not kwargs.keys().isdisjoint(names[: len(args)]):
            _explain(name, names, args, kwargs, values)
        values.update(kwargs)
    for field, factory in factories:
        if field not in values:
            values[field] = factory()
    if len(values) != len(names) or len(args) > len(names):
        _explain(name, names, args, kwargs, values)
    return values


def _explain(
    name: str,
    names: tuple[str, ...],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    values: dict[str, Any],
) -> None:
    """Raise the TypeError a generated __init__ would for these arguments."""
    if len(args) > len(names):
        raise TypeError(
            f"{name}() takes {len(names)} positional arguments but {len(args)} were given"
        )
    for key in kwargs:
        if key not in names:
            raise TypeError(f"{name}() got an unexpected keyword argument {key!r}")
        if key in names[: len(args)]:
            raise TypeError(f"{name}() got multiple values for argument {key!r}")
    missing = ", ".join(repr(key) for key in names if key not in values)
    raise TypeError(f"{name}() missing required arguments: {missing}")


def _frozen_set(self: object, name: str, value: object) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_del(self: object, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
