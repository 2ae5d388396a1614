"""Slurm's units: durations, sizes (MiB) and GPU counts, each read by one function here.

Two families, because Slurm reads and prints them differently:

- What sbatch reads (checked the way sbatch checks them, with its messages): ``--mem``
  sizes (``str_to_mbytes``: whole MiB, K/M/G/T suffixes, KiB rounded up), ``--time``
  (``time_str2secs``: every Slurm time format), ``--gres`` and ``--gpus*`` (GRES items and
  their GPU count). Errors are ValueError with sbatch's message.
- What Slurm's commands print (sacct, seff, scontrol, sinfo): clock durations
  (``[D-][HH:]MM:SS[.fff]``), time limits (``UNLIMITED`` is None), sizes with binary
  suffixes (``323852K``, ``1.50G``; ``16?`` is unknown), TRES lists
  (``cpu=1,mem=100M,gres/gpu=1``) and GRES strings (``gpu:a100:4(S:0-1)``). Errors are
  :class:`UnitError`; each parser wraps them in its own error with where it was reading.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from tuneadvisor.numbers import finite_float

__all__ = [
    "INT_MAX",
    "NO_VAL32",
    "GresItem",
    "TimeLimit",
    "UnitError",
    "gpu_count",
    "gpus_in_gres",
    "gpus_in_tres",
    "parse_duration",
    "parse_gpus",
    "parse_gres",
    "parse_memory",
    "parse_memory_mib",
    "parse_size_mib",
    "parse_time",
    "parse_timelimit",
    "parse_tres",
    "render_memory",
    "render_time",
    "strtol_prefix",
    "to_mib",
]

INT_MAX = 2**31 - 1
# Slurm's INFINITE and NO_VAL for 32-bit values, as time_str2secs returns them.
_INFINITE = 0xFFFFFFFF
_NO_VAL64 = 0xFFFFFFFFFFFFFFFE
# Slurm's NO_VAL / INFINITE as 32-bit numbers in JSON output (dbv0.0.38): no value.
NO_VAL32 = 0xFFFFFFFE


class UnitError(ValueError):
    """A value printed by Slurm is not in the unit's format; the message says which."""


def strtol_prefix(text: str) -> tuple[int | None, str]:
    """C strtol(base 10): skip leading blanks, optional sign, digits. Returns the number
    (None when there are no digits) and what is left."""
    match = re.match(r"[ \t\n\v\f\r]*([+-]?[0-9]+)", text)
    if not match:
        return None, text
    return int(match.group(1)), text[match.end() :]


# ----------------------------------------------------------------------------- memory

_MEM_SUFFIX = {"k": -1, "m": 0, "g": 1, "t": 2}  # powers of 1024 relative to MiB; k rounds up


def parse_memory(value: str, name: str = "mem") -> int:
    """MiB from a Slurm size (``str_to_mbytes``): a number with an optional K/M/G/T suffix,
    optionally followed by B (``8G``, ``8gb``, ``512``); MB by default, KiB rounded up.
    ``0`` is valid and means all the memory of the node (for ``--mem``)."""
    number, rest = strtol_prefix(value)
    if number is None or number < 0 or number >= 2**63:
        raise ValueError(f"Invalid --{name} specification")
    if not rest:
        return number
    unit, tail = rest[0].lower(), rest[1:]
    if unit not in _MEM_SUFFIX or tail not in ("", "B", "b"):
        raise ValueError(f"Invalid --{name} specification")
    power = _MEM_SUFFIX[unit]
    return -(-number // 1024) if power < 0 else number * 1024**power


def parse_memory_mib(value: str) -> int | None:
    """MiB of a Slurm size, or None when sbatch would refuse it (see :func:`parse_memory`)."""
    try:
        return parse_memory(value)
    except ValueError:
        return None


def render_memory(mib: int) -> str:
    """The shortest exact spelling: 8192 -> ``8G``, 1536 -> ``1536M``, 0 -> ``0``."""
    if mib < 0:
        raise ValueError(f"negative memory size: {mib}")
    if mib == 0:
        return "0"
    for suffix, size in (("T", 1024**2), ("G", 1024)):
        if mib % size == 0:
            return f"{mib // size}{suffix}"
    return f"{mib}M"


# ----------------------------------------------------------------------------- time


@dataclass(frozen=True)
class TimeLimit:
    """A ``--time`` value. ``seconds`` is None when unlimited (``UNLIMITED``, ``INFINITE``,
    ``-1``, or a total of zero, which sbatch also turns into no limit)."""

    seconds: int | None

    @property
    def unlimited(self) -> bool:
        return self.seconds is None

    @property
    def minutes(self) -> int | None:
        """The limit Slurm stores: whole minutes, rounded up (``time_str2mins``)."""
        return None if self.seconds is None else -(-self.seconds // 60)

    def render(self) -> str:
        return render_time(self.seconds)


def _is_valid_timespec(text: str) -> bool:
    """Slurm's ``_is_valid_timespec``: only digits, ``-`` and ``:``; at most one dash, never
    after a colon; at most two colons; enough groups of digits for the colons."""
    if re.search(r"[^0-9:-]", text) or text.count("-") > 1 or text.count(":") > 2:
        return False
    if "-" in text and ":" in text[: text.index("-")]:
        return False
    groups, colons = len(re.findall(r"[0-9]+", text)), text.count(":")
    if "-" in text:
        return groups >= 1 and (colons == 0 or groups >= colons + 2)
    return groups >= colons + 1


def _scan_ints(text: str, seps: str) -> list[int]:
    """sscanf("%d<sep>%d...") : the leading fields that parse, stopping at the first miss."""
    values: list[int] = []
    pos = 0
    for index in range(len(seps) + 1):
        if index:
            if not text.startswith(seps[index - 1], pos):
                break
            pos += 1
        match = re.match(r"[+-]?[0-9]+", text[pos:])
        if not match:
            break
        values.append(int(match.group()))
        pos += match.end()
    return values


def _time_seconds(value: str) -> int | None:
    """Slurm's ``time_str2secs`` (None for invalid, _INFINITE for unlimited)."""
    if value.lower() in ("-1", "infinite", "unlimited"):
        return _INFINITE
    if not value or not _is_valid_timespec(value):
        return None
    if "-" in value:
        days, hours, minutes, seconds = [*_scan_ints(value, "-::"), 0, 0, 0, 0][:4]
        return days * 86400 + hours * 3600 + minutes * 60 + seconds
    fields = _scan_ints(value, "::")
    if len(fields) == 3:
        return fields[0] * 3600 + fields[1] * 60 + fields[2]
    fields += [0, 0]
    return fields[0] * 60 + fields[1]  # minutes[:seconds]


def parse_time(value: str, name: str = "time") -> TimeLimit:
    """Every Slurm time format: ``minutes``, ``minutes:seconds``, ``hours:minutes:seconds``,
    ``days-hours``, ``days-hours:minutes``, ``days-hours:minutes:seconds``, and
    ``UNLIMITED``/``INFINITE``/``-1``. ``abc``, ``1.5``, `` 60`` and ``1:2:3:4`` are invalid."""
    seconds = _time_seconds(value)
    if seconds is None:
        raise ValueError(f"Invalid --{name} specification")
    if seconds in (_INFINITE, 0):
        return TimeLimit(None)
    if not 0 < seconds <= INT_MAX:  # sbatch's int arithmetic wraps these around
        raise ValueError(f"--{name} value out of range: {value}")
    return TimeLimit(seconds)


def render_time(seconds: int | None) -> str:
    """``UNLIMITED``, ``D-HH:MM:SS`` with days, else ``HH:MM:SS`` (Slurm's secs2time_str)."""
    if seconds is None:
        return "UNLIMITED"
    if seconds < 0:
        raise ValueError(f"negative time: {seconds}")
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


# ----------------------------------------------------------------------------- GPUs


@dataclass(frozen=True)
class GresItem:
    """One generic resource request: ``gpu:a100:2`` -> name gpu, type a100, count 2."""

    name: str
    type: str | None
    count: int


_COUNT = re.compile(r"([0-9]+)([kKmMgG]?)")
_NUMERIC_LOOKING = re.compile(r"[+-]?[0-9.]")
_GRES_WORD = re.compile(r"[^\s:,=/()]+")


def _gres_count(text: str) -> int | None:
    """A GRES count (``2``, ``2k``); None when the field is not a count at all; ValueError
    for a malformed number such as ``1.5`` or ``-1``."""
    match = _COUNT.fullmatch(text)
    if match:
        factor = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[match.group(2).lower()]
        count = int(match.group(1)) * factor
        if count >= _NO_VAL64:  # slurm reads counts as 64-bit (strtoull): beyond is an error
            raise ValueError(f"invalid count {text!r}")
        return count
    if _NUMERIC_LOOKING.match(text):
        raise ValueError(f"invalid count {text!r}")
    return None


def _gres_item(text: str) -> GresItem:
    fields = text.split(":")
    if len(fields) > 3 or not all(_GRES_WORD.fullmatch(f) for f in fields):
        raise ValueError(f"invalid generic resource {text!r}")
    count = _gres_count(fields[-1]) if len(fields) > 1 else None
    named = fields[:-1] if count is not None else fields
    if len(named) > 2 or _gres_count(named[0]) is not None:
        raise ValueError(f"invalid generic resource {text!r}")
    return GresItem(named[0], named[1] if len(named) > 1 else None, 1 if count is None else count)


def parse_gres(value: str) -> tuple[GresItem, ...]:
    """``--gres``: comma list of ``name[:type][:count]`` (count 1 when absent); ``none``
    clears it. Whether a name exists is the controller's business, not checked here."""
    if value.lower() == "none":
        return ()
    try:
        return tuple(_gres_item(item) for item in value.split(","))
    except ValueError as error:
        raise ValueError(f"Invalid generic resource (gres) specification: {error}") from None


def parse_gpus(value: str, name: str = "gpus") -> tuple[GresItem, ...]:
    """``--gpus``/``--gpus-per-node``/``--gpus-per-task``: comma list of ``[type:]count``."""
    items: list[GresItem] = []
    for item in value.split(","):
        gpu_type, _, count_text = item.rpartition(":")
        count = _gres_count(count_text) if _GRES_WORD.fullmatch(count_text) else None
        if count is None or (gpu_type and not _GRES_WORD.fullmatch(gpu_type)):
            raise ValueError(f"Invalid --{name} specification: {item!r}")
        items.append(GresItem("gpu", gpu_type or None, count))
    if len({item.type is None for item in items}) > 1:
        raise ValueError("Invalid GRES specification (with and without type identification)")
    return tuple(items)


def gpu_count(items: tuple[GresItem, ...]) -> int:
    """How many GPUs a GRES or ``--gpus*`` request asks for (all types together)."""
    return sum(item.count for item in items if item.name == "gpu")


# ----------------------------------------------------------------------------- as printed

_BINARY = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)([KMGTP]?)([nc]?)")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_DURATION = re.compile(r"(?:([0-9]+)-)?(?:([0-9]+):)?([0-9]+):([0-9]+(?:\.[0-9]+)?)")
# Time limits that are no limit: sacct's and scontrol's words, and sinfo's.
_NO_LIMIT = frozenset({"UNLIMITED", "INFINITE", "N/A", "PARTITION_LIMIT", "INVALID", ""})
# at the start or after a comma: a lookbehind (a try never starts inside a type's name)
_GRES_GPU = re.compile(r"(?<![^,])(?:gres[:/])?gpu(?::[^:,(]+)?:([0-9]+)")


def to_mib(number: float, suffix: str) -> float:
    """``number`` of a binary unit ("" bytes, K, M, G, T, P) in MiB."""
    return number * _BINARY[suffix] / _BINARY["M"]


def parse_duration(text: str) -> float:
    """``MM:SS.mmm``, ``HH:MM:SS``, ``D-HH:MM:SS`` -> seconds."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise UnitError(f"{text.strip()!r} is not a duration like 1-02:03:04 or 00:10.089")
    days, hours, minutes, seconds = match.groups()
    whole = (int(days or 0) * 24 + int(hours or 0)) * 60 + int(minutes)
    what = f"the duration {text.strip()[:20]!r}"
    return finite_float(finite_float(whole * 60, what, UnitError) + float(seconds), what, UnitError)


def parse_timelimit(text: str) -> int | None:
    """A printed time limit -> seconds; None for no limit (``UNLIMITED``, ``INFINITE``,
    ``Partition_Limit``, ``N/A``...)."""
    if text.strip().upper() in _NO_LIMIT:
        return None
    return round(parse_duration(text))


def parse_size_mib(text: str, bare_unit: Literal["", "K", "M"]) -> float | None:
    """``323852K`` -> 316.26..; ``16?`` (sacct's "unknown") and empty -> None.

    ``bare_unit`` is the unit of a number printed without suffix ("" bytes for MaxRSS,
    "M" for ReqMem and TRES mem). A trailing ``n``/``c`` (old ReqMem) is ignored here.
    """
    value = text.strip()
    if not value or value.endswith("?"):
        return None
    match = _SIZE.fullmatch(value)
    if match is None:
        raise UnitError(f"{value!r} is not a size like 323852K or 500M")
    number, suffix, _per = match.groups()
    size = to_mib(finite_float(number, f"the size {value[:20]!r}", UnitError), suffix or bare_unit)
    return finite_float(size, f"the size {value[:20]!r}", UnitError)


def parse_tres(text: str) -> dict[str, float]:
    """``billing=1,cpu=1,gres/gpu=1,mem=100M,node=1`` -> counts; ``mem`` in MiB."""
    tres: dict[str, float] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, raw = item.partition("=")
        if not sep:
            raise UnitError(f"{item!r} in TRES {text!r} is not name=value")
        name = name.strip()
        if name in ("mem", "vmem"):
            size = parse_size_mib(raw, "M")
            if size is not None:
                tres[name] = size
        elif _NUMBER.fullmatch(raw.strip()):
            tres[name] = finite_float(raw, f"{name} in TRES", UnitError)
    return tres


def gpus_in_tres(tres: Mapping[str, float]) -> int:
    """``gres/gpu`` when listed, else the typed entries (``gres/gpu:a100``) summed."""
    if "gres/gpu" in tres:
        return int(tres["gres/gpu"])
    return int(sum(v for k, v in tres.items() if k.startswith("gres/gpu:")))


def gpus_in_gres(text: str | None) -> int:
    """``gpu:1``, ``gpu:a100:4(S:0-1)``, ``gres/gpu:2``, ``gpu:a100:2,gpu:v100:1`` -> count."""
    if not text or text in ("(null)", "N/A", "None", "Unknown"):
        return 0
    return sum(int(m.group(1)) for m in _GRES_GPU.finditer(text.replace("gres:gpu", "gpu")))
