"""The sbatch 22.05 option table, value validation, typed values and rendering.

The table lists every long option sbatch 22.05.8 accepts (found by asking the real binary:
``--a`` ... ``--z`` list the candidates, ``--NAME`` / ``--NAME=x`` tell whether a value is
required, optional or refused), so anything else in a ``#SBATCH`` line is reported as an
unknown option, as sbatch reports it.

Values are checked the way sbatch checks them before it talks to the controller (Slurm's
``parse_int``, ``str_to_mbytes``, ``time_str2secs``, ``verify_node_count``,
``parse_mail_type``); the error messages are sbatch's own. GRES and ``--gpus*`` values are
only checked for their syntax: whether a GRES name exists depends on the cluster.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from functools import partial
from typing import TypeVar

__all__ = [
    "OPTIONS",
    "Arg",
    "GresItem",
    "JobRequest",
    "LongMatch",
    "NodeRange",
    "SbatchOption",
    "TimeLimit",
    "find_option",
    "gpu_count",
    "match_long",
    "parse_count",
    "parse_exclusive",
    "parse_gpus",
    "parse_gres",
    "parse_mail_type",
    "parse_memory",
    "parse_memory_mib",
    "parse_no_kill",
    "parse_nodes",
    "parse_time",
    "render_memory",
    "render_time",
    "short_option",
    "validate",
]

# C's isspace() in the "C" locale: what sbatch treats as blank.
C_SPACE = " \t\n\v\f\r"
INT_MAX = 2**31 - 1
# Slurm's INFINITE and NO_VAL for 32-bit values, as time_str2secs returns them.
_INFINITE = 0xFFFFFFFF
_T = TypeVar("_T")


class Arg(Enum):
    """Whether an option takes a value (getopt's has_arg)."""

    NONE = "none"
    REQUIRED = "required"
    OPTIONAL = "optional"  # only as ``--name=value`` or ``-Xvalue``


@dataclass(frozen=True)
class SbatchOption:
    name: str  # canonical long name, as ``sbatch -v`` prints it
    arg: Arg
    short: str | None = None
    aliases: tuple[str, ...] = ()  # other long names that set the same thing


def _opt(name: str, arg: Arg, short: str | None = None, *aliases: str) -> SbatchOption:
    return SbatchOption(name, arg, short, tuple(aliases))


_R, _N, _O = Arg.REQUIRED, Arg.NONE, Arg.OPTIONAL

# sbatch 22.05.8, verified against the binary (see the module docstring).
OPTIONS: tuple[SbatchOption, ...] = (
    _opt("account", _R, "A"),
    _opt("acctg-freq", _R),
    _opt("array", _R, "a"),
    _opt("batch", _R),
    _opt("bb", _R),
    _opt("bbf", _R),
    _opt("begin", _R, "b"),
    _opt("chdir", _R, "D"),
    _opt("cluster-constraint", _R),
    _opt("clusters", _R, "M", "cluster"),
    _opt("comment", _R),
    _opt("constraint", _R, "C"),
    _opt("container", _R),
    _opt("context", _R),
    _opt("contiguous", _N),
    _opt("core-spec", _R, "S"),
    _opt("cores-per-socket", _R),
    _opt("cpu-freq", _R),
    _opt("cpus-per-gpu", _R),
    _opt("cpus-per-task", _R, "c"),
    _opt("deadline", _R),
    _opt("delay-boot", _R),
    _opt("dependency", _R, "d"),
    _opt("distribution", _R, "m"),
    _opt("error", _R, "e"),
    _opt("exclude", _R, "x"),
    _opt("exclusive", _O),
    _opt("export", _R),
    _opt("export-file", _R),
    _opt("extra-node-info", _R, "B"),
    _opt("get-user-env", _O),
    _opt("gid", _R),
    _opt("gpu-bind", _R),
    _opt("gpu-freq", _R),
    _opt("gpus", _R, "G"),
    _opt("gpus-per-node", _R),
    _opt("gpus-per-socket", _R),
    _opt("gpus-per-task", _R),
    _opt("gres", _R),
    _opt("gres-flags", _R),
    _opt("help", _N, "h"),
    _opt("hint", _R),
    _opt("hold", _N, "H"),
    _opt("ignore-pbs", _N),
    _opt("input", _R, "i"),
    _opt("job-name", _R, "J"),
    _opt("kill-on-invalid-dep", _R),
    _opt("licenses", _R, "L"),
    _opt("mail-type", _R),
    _opt("mail-user", _R),
    _opt("mcs-label", _R),
    _opt("mem", _R),
    _opt("mem-bind", _R),
    _opt("mem-per-cpu", _R),
    _opt("mem-per-gpu", _R),
    _opt("mincpus", _R),
    _opt("network", _R),
    _opt("nice", _O),
    _opt("no-kill", _O, "k"),
    _opt("no-requeue", _N),
    _opt("nodefile", _R, "F"),
    _opt("nodelist", _R, "w"),
    _opt("nodes", _R, "N"),
    _opt("ntasks", _R, "n"),
    _opt("ntasks-per-core", _R),
    _opt("ntasks-per-gpu", _R),
    _opt("ntasks-per-node", _R, None, "tasks-per-node"),
    _opt("ntasks-per-socket", _R),
    _opt("ntasks-per-tres", _R),
    _opt("open-mode", _R),
    _opt("output", _R, "o"),
    _opt("overcommit", _N, "O"),
    _opt("oversubscribe", _N, "s"),
    _opt("parsable", _N),
    _opt("partition", _R, "p"),
    _opt("power", _R),
    _opt("prefer", _R),
    _opt("priority", _R),
    _opt("profile", _R),
    _opt("propagate", _O),
    _opt("qos", _R, "q"),
    _opt("quiet", _N, "Q"),
    _opt("reboot", _N),
    _opt("requeue", _N),
    _opt("reservation", _R),
    _opt("signal", _R),
    _opt("sockets-per-node", _R),
    _opt("spread-job", _N),
    _opt("switches", _R),
    _opt("test-only", _N),
    _opt("thread-spec", _R),
    _opt("threads-per-core", _R),
    _opt("time", _R, "t"),
    _opt("time-min", _R),
    _opt("tmp", _R),
    _opt("uid", _R),
    _opt("usage", _N),
    _opt("use-min-nodes", _N),
    _opt("verbose", _N, "v"),
    _opt("version", _N, "V"),
    _opt("wait", _N, "W"),
    _opt("wait-all-nodes", _R),
    _opt("wckey", _R),
    _opt("wrap", _R),
)

# Every long spelling getopt knows (aliases are entries of their own there).
_LONG: dict[str, SbatchOption] = {
    spelling: option for option in OPTIONS for spelling in (option.name, *option.aliases)
}
_SHORT: dict[str, SbatchOption] = {o.short: o for o in OPTIONS if o.short}


def find_option(name: str) -> SbatchOption | None:
    """The option for a long name or alias (``"cpus-per-task"``, ``"cluster"``), a short
    letter (``"c"``) or a spelling with dashes (``"--mem"``, ``"-c"``); no abbreviations."""
    bare = name.lstrip("-")
    if len(bare) == 1:
        return _SHORT.get(bare)
    return _LONG.get(bare)


def short_option(letter: str) -> SbatchOption | None:
    return _SHORT.get(letter)


@dataclass(frozen=True)
class LongMatch:
    """How getopt_long resolves ``--spelled``: exact name, unique prefix, or an error."""

    option: SbatchOption | None
    error: str | None = None  # sbatch's message when option is None


def match_long(spelled: str, written: str | None = None) -> LongMatch:
    """Resolve a long option as GNU getopt_long does: an exact name wins, else a prefix of
    exactly one entry; a prefix of several entries is ambiguous. ``written`` is the whole
    argument (``--foo=2``), which getopt's messages quote."""
    if spelled in _LONG:
        return LongMatch(_LONG[spelled])
    candidates = [name for name in _LONG if name.startswith(spelled)]
    if len(candidates) == 1:
        return LongMatch(_LONG[candidates[0]])
    quoted = written or f"--{spelled}"
    if not candidates:
        return LongMatch(None, f"unrecognized option '{quoted}'")
    listed = " ".join(f"'--{name}'" for name in candidates)
    return LongMatch(None, f"option '{quoted}' is ambiguous; possibilities: {listed}")


# ----------------------------------------------------------------------------- counts


def _strtol_prefix(text: str) -> tuple[int | None, str]:
    """C strtol(base 10): skip leading blanks, optional sign, digits. Returns the number
    (None when there are no digits) and what is left."""
    match = re.match(r"[ \t\n\v\f\r]*([+-]?[0-9]+)", text)
    if not match:
        return None, text
    return int(match.group(1)), text[match.end() :]


def parse_count(value: str, name: str = "cpus-per-task") -> int:
    """A positive int as Slurm's ``parse_int(name, value, true)`` reads it (``72.``, ``0`` and
    ``4 `` are invalid). Values past INT_MAX are refused here (sbatch wraps them around)."""
    number, rest = _strtol_prefix(value)
    if number is None or rest or number <= 0:
        raise ValueError(f'Invalid numeric value "{value}" for --{name}.')
    if number > INT_MAX:
        raise ValueError(f"Numeric argument ({number}) too big for --{name}.")
    return number


# ----------------------------------------------------------------------------- memory

_MEM_SUFFIX = {"k": -1, "m": 0, "g": 1, "t": 2}  # powers of 1024 relative to MiB; k rounds up


def parse_memory(value: str, name: str = "mem") -> int:
    """MiB from a Slurm size (``str_to_mbytes``): a number with an optional K/M/G/T suffix,
    optionally followed by B (``8G``, ``8gb``, ``512``); MB by default, KiB rounded up.
    ``0`` is valid and means all the memory of the node (for ``--mem``)."""
    number, rest = _strtol_prefix(value)
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


# ----------------------------------------------------------------------------- nodes


@dataclass(frozen=True)
class NodeRange:
    minimum: int
    maximum: int | None = None  # None: no maximum given (or 0, which means the same)


def _str_to_nodes(text: str) -> tuple[int, str]:
    """Slurm's ``_str_to_nodes``: strtol then an optional k and m multiplier; -1 when there
    are no digits."""
    number, rest = _strtol_prefix(text)
    if number is None:
        return -1, text
    for suffix, factor in (("kK", 1024), ("mM", 1024 * 1024)):
        if rest and rest[0] in suffix:
            number, rest = number * factor, rest[1:]
    return (number + 2**31) % 2**32 - 2**31, rest  # the C code casts to int


def parse_nodes(value: str) -> NodeRange:
    """``--nodes``: ``N`` or ``min-max`` (``1k`` is 1024), as ``verify_node_count`` reads it."""
    if "-" not in value:
        count, rest = _str_to_nodes(value)
        if rest.strip(C_SPACE) or count < 0:
            raise ValueError(f'"{value}" is not a valid node count')
        return NodeRange(count, count)
    low_text, high_text = value.split("-", 1)
    low, rest = _str_to_nodes(low_text)
    if rest.strip(C_SPACE):
        raise ValueError(f'"{low_text}" is not a valid node count')
    high, rest = _str_to_nodes(high_text)
    if rest.strip(C_SPACE):
        raise ValueError(f'"{high_text}" is not a valid node count')
    low = max(low, 1) if low < 0 else low
    if high != 0 and high < low:
        raise ValueError(f"Maximum node count {high} is less than minimum node count {low}")
    return NodeRange(low, high or None)


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
        return int(match.group(1)) * factor
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


# ----------------------------------------------------------------------------- others

_MAIL_FLAGS = {
    "ARRAY_TASKS",
    "BEGIN",
    "END",
    "FAIL",
    "INVALID_DEPEND",
    "REQUEUE",
    "STAGE_OUT",
    "TIME_LIMIT",
    "TIME_LIMIT_90",
    "TIME_LIMIT_80",
    "TIME_LIMIT_50",
}
_MAIL_ALL = frozenset({"INVALID_DEPEND", "BEGIN", "END", "FAIL", "REQUEUE", "STAGE_OUT"})


def parse_mail_type(value: str) -> frozenset[str]:
    """``--mail-type`` as ``parse_mail_type`` reads it: case-insensitive comma list, ``ALL``
    expanded, ``NONE`` clears; unknown words are skipped unless nothing valid is left."""
    flags: set[str] = set()
    for word in (w.upper() for w in value.split(",") if w):
        if word == "NONE":
            return frozenset()
        if word == "ALL":
            flags |= _MAIL_ALL
        elif word in _MAIL_FLAGS:
            flags.add(word)
    if not flags:
        raise ValueError("Invalid --mail-type specification")
    return frozenset(flags)


def parse_exclusive(value: str | None) -> str:
    """``--exclusive[=user|mcs]`` -> ``"exclusive"``, ``"user"`` or ``"mcs"``."""
    if not value:
        return "exclusive"
    if value.lower() in ("user", "mcs"):
        return value.lower()
    raise ValueError("Invalid --exclusive specification")


def parse_no_kill(value: str | None) -> bool:
    """``--no-kill[=set|off|no]`` -> whether the job survives a node failure."""
    if not value or value.lower() == "set":
        return True
    if value.lower() in ("off", "no"):
        return False
    raise ValueError("Invalid --no-kill specification")


# What sbatch checks itself before submitting; every other value is passed on as written.
_VALIDATORS: dict[str, Callable[[str], object]] = {
    "cpus-per-task": partial(parse_count, name="cpus-per-task"),
    "ntasks": partial(parse_count, name="ntasks"),
    "ntasks-per-node": partial(parse_count, name="ntasks-per-node"),
    "cpus-per-gpu": partial(parse_count, name="cpus-per-gpu"),
    "mem": partial(parse_memory, name="mem"),
    "mem-per-cpu": partial(parse_memory, name="mem-per-cpu"),
    "mem-per-gpu": partial(parse_memory, name="mem-per-gpu"),
    "time": parse_time,
    "nodes": parse_nodes,
    "gres": parse_gres,
    "gpus": partial(parse_gpus, name="gpus"),
    "gpus-per-node": partial(parse_gpus, name="gpus-per-node"),
    "gpus-per-task": partial(parse_gpus, name="gpus-per-task"),
    "mail-type": parse_mail_type,
    "exclusive": parse_exclusive,
    "no-kill": parse_no_kill,
}


def validate(name: str, value: str | None) -> str | None:
    """The error sbatch would print for ``--name=value``, or None when it is accepted.
    ``name`` is a canonical long name; ``value`` is None when none was given."""
    option = _LONG.get(name)
    if option is None:
        return f"unrecognized option '--{name}'"
    if option.arg is Arg.NONE:
        return None if value is None else f"option '--{name}' doesn't allow an argument"
    if value is None:
        return None if option.arg is Arg.OPTIONAL else f"option '--{name}' requires an argument"
    check = _VALIDATORS.get(option.name)
    if check is None:
        return None
    try:
        check(value)
    except ValueError as error:
        return str(error)
    return None


# ----------------------------------------------------------------------------- typed view


def _typed(directives: Mapping[str, str], name: str, parse: Callable[[str], _T]) -> _T | None:
    value = directives.get(name)
    if value is None:
        return None
    try:
        return parse(value)
    except ValueError:
        return None  # an invalid value is reported as a problem; here it is simply absent


@dataclass(frozen=True)
class JobRequest:
    """The resources a job asks for, typed; None where the directive is absent or invalid."""

    cpus_per_task: int | None = None
    ntasks: int | None = None
    ntasks_per_node: int | None = None
    nodes: NodeRange | None = None
    mem_mib: int | None = None  # --mem, per node; 0 means all of the node's memory
    mem_per_cpu_mib: int | None = None
    mem_per_gpu_mib: int | None = None
    time_limit: TimeLimit | None = None
    gres: tuple[GresItem, ...] | None = None
    gpus: tuple[GresItem, ...] | None = None
    gpus_per_node: tuple[GresItem, ...] | None = None
    gpus_per_task: tuple[GresItem, ...] | None = None
    cpus_per_gpu: int | None = None
    partition: str | None = None
    exclusive: str | None = None

    @classmethod
    def from_directives(cls, directives: Mapping[str, str]) -> JobRequest:
        def count(name: str) -> int | None:
            return _typed(directives, name, partial(parse_count, name=name))

        def memory(name: str) -> int | None:
            return _typed(directives, name, partial(parse_memory, name=name))

        def gpus(name: str) -> tuple[GresItem, ...] | None:
            return _typed(directives, name, partial(parse_gpus, name=name))

        return cls(
            cpus_per_task=count("cpus-per-task"),
            ntasks=count("ntasks"),
            ntasks_per_node=count("ntasks-per-node"),
            nodes=_typed(directives, "nodes", parse_nodes),
            mem_mib=memory("mem"),
            mem_per_cpu_mib=memory("mem-per-cpu"),
            mem_per_gpu_mib=memory("mem-per-gpu"),
            time_limit=_typed(directives, "time", parse_time),
            gres=_typed(directives, "gres", parse_gres),
            gpus=gpus("gpus"),
            gpus_per_node=gpus("gpus-per-node"),
            gpus_per_task=gpus("gpus-per-task"),
            cpus_per_gpu=count("cpus-per-gpu"),
            partition=directives.get("partition"),
            exclusive=_typed(directives, "exclusive", parse_exclusive),
        )

    @property
    def gpus_on_node(self) -> int | None:
        """GPUs per node from ``--gres`` or ``--gpus-per-node`` (None when neither is set)."""
        if self.gpus_per_node is not None:
            return gpu_count(self.gpus_per_node)
        if self.gres is not None:
            return gpu_count(self.gres)
        return None
