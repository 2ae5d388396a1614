"""Loading profile files without trusting them.

A profile is either the pickle ``kernprof -l`` writes (line_profiler 4.x or 5.x) or the table
``python -m line_profiler`` prints; the content decides which, never the file's name. Every
problem with the file becomes one InputError naming it; nothing from line_profiler is
imported, and nothing in the file is executed (see safe_pickle).
"""

from __future__ import annotations

import codecs
import math
import os
from collections.abc import Iterable
from typing import TypeGuard

from tuneadvisor.errors import InputError
from tuneadvisor.files import read_regular_file
from tuneadvisor.profile.model import FunctionTiming, LineTiming, Profile, ProfileSet
from tuneadvisor.profile.safe_pickle import (
    DEFAULT_LIMITS,
    PickleLimits,
    PickleRejected,
    StatsStandIn,
    load_linestats,
)

_PICKLE_START = 0x80  # PROTO, the first opcode of every pickle since protocol 2
_MAX_COUNT = 2**64  # line_profiler counts hits and timer ticks in 64-bit integers
NO_FUNCTIONS = (
    "this profile holds no functions: was @profile applied and the script run under kernprof -l?"
)


class _NotLineStats(Exception):
    """The pickle loaded, but what it holds is not line_profiler's LineStats."""


# A printed table costs about 45 times its size in memory to parse (a 64 MB table of a million
# lines took 2.9 GB and 35 s): 4 MiB holds tens of thousands of lines, more than anyone prints.
MAX_TABLE_BYTES = 4 << 20


def load_profile(path: str | os.PathLike[str], *, limits: PickleLimits = DEFAULT_LIMITS) -> Profile:
    """Read one .lprof pickle (line_profiler 4.x/5.x) or a printed line_profiler table.

    Raises InputError (naming the file and the problem) for anything else. ``limits`` bounds
    the file's size and what its pickle may hold (see safe_pickle.PickleLimits).
    """
    origin = os.fspath(path)
    data = _read(origin, limits.max_bytes)
    try:
        profile = _parse(data, origin, limits)
    except (PickleRejected, _NotLineStats) as exc:
        raise InputError(origin, str(exc)) from None
    if not profile.functions:
        # kernprof -l without any @profile, or a table with only its 'Timer unit:' line.
        raise InputError(origin, NO_FUNCTIONS)
    return profile


def load_profiles(
    paths: Iterable[str | os.PathLike[str]], *, limits: PickleLimits = DEFAULT_LIMITS
) -> ProfileSet:
    """Several files (one per rank): each kept, and their merge."""
    profiles = [load_profile(p, limits=limits) for p in paths]
    if not profiles:
        raise InputError(None, "no profile files given")
    return ProfileSet.of(profiles)


# -- reading ------------------------------------------------------------------------------


def _read(path: str, max_bytes: int) -> bytes:
    """The file's bytes, refusing what is not a regular, readable, bounded file."""
    data = read_regular_file(path, "profile", max_bytes)
    if len(data) > max_bytes:
        raise InputError(path, f"larger than the {max_bytes} byte limit for a profile")
    return data


def _parse(data: bytes, origin: str, limits: PickleLimits) -> Profile:
    if not data:
        raise InputError(origin, "empty file")
    if data[0] == _PICKLE_START:
        return _from_stats(load_linestats(data, limits), origin)
    if len(data) > MAX_TABLE_BYTES:
        raise InputError(
            origin,
            f"a printed table of more than {MAX_TABLE_BYTES >> 20} MiB (about 60,000 lines): "
            "give the .lprof file it was printed from",
        )
    text = _decode(data)
    if text is None:
        raise InputError(origin, "binary data that is neither an .lprof pickle nor text")
    if text.lstrip()[:1] in ("{", "[") and "Timer unit:" not in text:
        raise InputError(origin, "looks like JSON, not a line_profiler profile")
    from tuneadvisor.profile.sniff import JOB_SCRIPT_GIVEN, looks_like_job_script
    from tuneadvisor.profile.table_cells import TableError  # .lprof never needs them

    if looks_like_job_script(text):
        raise InputError(origin, JOB_SCRIPT_GIVEN)
    from tuneadvisor.profile.text_table import parse_table

    try:
        return parse_table(text, origin)
    except TableError as exc:
        raise InputError(origin, str(exc)) from None


def _decode(data: bytes) -> str | None:
    """Text as a terminal or an editor would have saved it, or None for binary data."""
    encoding = "utf-8"
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"  # PowerShell's `>` writes this
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        return None
    return None if "\x00" in text else text


# -- validating what the pickle held ------------------------------------------------------


def _from_stats(obj: object, origin: str) -> Profile:
    if not isinstance(obj, StatsStandIn):
        raise _NotLineStats(f"a pickle of {_kind(obj)}, not line_profiler's LineStats")
    if obj.builds != 1 or type(obj.state) is not dict:
        raise _NotLineStats("a LineStats pickle without its timings and unit")
    state = obj.state
    if "timings" not in state or "unit" not in state:
        raise _NotLineStats("a LineStats pickle without its timings and unit")
    unit = _unit(state["unit"])
    timings = state["timings"]
    if type(timings) is not dict:
        raise _NotLineStats(f"LineStats timings are {_kind(timings)}, not a dict")
    functions = tuple(_function(key, entries, unit) for key, entries in timings.items())
    return Profile(origin=origin, unit_s=unit, functions=functions, source_format="lprof")


def _unit(value: object) -> float:
    if not _is_number(value) or not math.isfinite(value) or not 0 < value <= 1:
        raise _NotLineStats("LineStats unit is not a timer unit (seconds, above 0, at most 1)")
    return float(value)


def _is_number(value: object) -> TypeGuard[int | float]:
    return type(value) is int or type(value) is float  # not bool, nor any subclass


def _function(key: object, entries: object, unit: float) -> FunctionTiming:
    if (
        type(key) is not tuple
        or len(key) != 3
        or type(key[0]) is not str
        or type(key[1]) is not int
        or type(key[2]) is not str
        or key[1] < 0
    ):
        raise _NotLineStats("a LineStats key is not (filename, first line, function name)")
    filename, first_lineno, name = key
    if type(entries) is not list:
        raise _NotLineStats(f"timings of {name[:60]!r} are {_kind(entries)}, not a list")
    # Repeated line numbers are summed, as line_profiler does when it adds stats.
    summed: dict[int, tuple[int, float]] = {}
    for entry in entries:
        lineno, hits, time_s = _entry(entry, unit, name)
        old_hits, old_time = summed.get(lineno, (0, 0.0))
        summed[lineno] = (old_hits + hits, old_time + time_s)
    lines = tuple(
        LineTiming(lineno, hits, time_s) for lineno, (hits, time_s) in sorted(summed.items())
    )
    return FunctionTiming(filename, first_lineno, name, lines)


def _entry(entry: object, unit: float, name: str) -> tuple[int, int, float]:
    """(lineno, hits, seconds) from one (lineno, hits, time in timer units) tuple."""
    if type(entry) is not tuple or len(entry) != 3:
        raise _NotLineStats(f"a timing of {name[:60]!r} is not (line, hits, time)")
    lineno, hits, time = entry
    if type(lineno) is not int or type(hits) is not int or not _is_number(time):
        raise _NotLineStats(f"a timing of {name[:60]!r} is not (line, hits, time) numbers")
    if not (0 <= lineno < _MAX_COUNT and 0 <= hits < _MAX_COUNT):
        raise _NotLineStats(f"a timing of {name[:60]!r} has a line or hit count out of range")
    if not (math.isfinite(time) and 0 <= time < _MAX_COUNT):
        raise _NotLineStats(f"a timing of {name[:60]!r} has a time out of range")
    return lineno, hits, time * unit


def _kind(obj: object) -> str:
    """What an untrusted object is, without calling its repr (which may recurse)."""
    name = type(obj).__name__
    return ("an " if name[:1] in ("a", "e", "i", "o", "u") else "a ") + name
