"""The sbatch 22.05 option table, value validation and the typed view of a job's request.

The table lists every long option sbatch 22.05.8 accepts (found by asking the real binary:
``--a`` ... ``--z`` list the candidates, ``--NAME`` / ``--NAME=x`` tell whether a value is
required, optional or refused), so anything else in a ``#SBATCH`` line is reported as an
unknown option, as sbatch reports it.

Values are checked the way sbatch checks them before it talks to the controller (Slurm's
``parse_int``, ``str_to_mbytes``, ``time_str2secs``, ``verify_node_count``,
``parse_mail_type``); the error messages are sbatch's own. Sizes, times and GRES values
are read by :mod:`tuneadvisor.slurm.units`; GRES and ``--gpus*`` values are only checked
for their syntax: whether a GRES name exists depends on the cluster.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from functools import partial
from typing import TypeVar

from tuneadvisor.slurm.array_spec import check_array
from tuneadvisor.slurm.units import (
    INT_MAX,
    GresItem,
    TimeLimit,
    gpu_count,
    parse_gpus,
    parse_gres,
    parse_memory,
    parse_time,
    strtol_prefix,
)

__all__ = [
    "CONFLICTING_OPTIONS",
    "OPTIONS",
    "RESOURCE_OPTIONS",
    "Arg",
    "JobRequest",
    "LongMatch",
    "NodeRange",
    "SbatchOption",
    "conflicting_with",
    "find_option",
    "match_long",
    "parse_count",
    "parse_exclusive",
    "parse_mail_type",
    "parse_no_kill",
    "parse_nodes",
    "short_option",
    "validate",
]

# C's isspace() in the "C" locale: what sbatch treats as blank.
C_SPACE = " \t\n\v\f\r"
# sbatch takes one of these (they are mutually exclusive): writing one means dropping the others.
MEMORY_OPTIONS = ("mem", "mem-per-cpu", "mem-per-gpu")
# Options sbatch refuses together, with its message: the sbatch man page
# (https://slurm.schedmd.com/sbatch.html) says so under --mem ("--mem, --mem-per-cpu and
# --mem-per-gpu options are mutually exclusive"), --cpus-per-gpu and --ntasks-per-gpu; each
# pair was checked with sbatch 22.05.8 --test-only, whose messages these are.
CONFLICTING_OPTIONS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset(MEMORY_OPTIONS), "--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."),
    (
        frozenset({"cpus-per-task", "cpus-per-gpu"}),
        "--cpus-per-gpu is mutually exclusive with --cpus-per-task",
    ),
    (
        frozenset({"ntasks-per-node", "ntasks-per-gpu"}),
        "--ntasks-per-node is mutually exclusive with --ntasks-per-gpu and SLURM_NTASKS_PER_GPU",
    ),
    (
        frozenset({"gpus-per-task", "ntasks-per-gpu"}),
        "--gpus-per-task is mutually exclusive with --ntasks-per-gpu and SLURM_NTASKS_PER_GPU",
    ),
)
# Options that size the allocation (what the advice sizes or reads to size it): a request
# for one that sbatch never read is not revived behind the advice's back.
RESOURCE_OPTIONS = frozenset(
    {
        "nodes", "ntasks", "ntasks-per-node", "ntasks-per-gpu", "ntasks-per-socket",
        "ntasks-per-core", "cpus-per-task", "cpus-per-gpu", "mincpus", "mem", "mem-per-cpu",
        "mem-per-gpu", "gres", "gpus", "gpus-per-node", "gpus-per-task", "gpus-per-socket",
        "sockets-per-node", "cores-per-socket", "threads-per-core", "extra-node-info",
        "exclusive", "oversubscribe", "overcommit", "hint",
    }
)  # fmt: skip


def conflicting_with(name: str) -> frozenset[str]:
    """The options sbatch refuses next to ``name`` (a canonical long name)."""
    return frozenset(
        other for group, _ in CONFLICTING_OPTIONS if name in group for other in group - {name}
    )


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


def parse_count(value: str, name: str = "cpus-per-task") -> int:
    """A positive int as Slurm's ``parse_int(name, value, true)`` reads it (``72.``, ``0`` and
    ``4 `` are invalid). Values past INT_MAX are refused here (sbatch wraps them around)."""
    number, rest = strtol_prefix(value)
    if number is None or rest or number <= 0:
        raise ValueError(f'Invalid numeric value "{value}" for --{name}.')
    if number > INT_MAX:
        raise ValueError(f"Numeric argument ({number}) too big for --{name}.")
    return number


# ----------------------------------------------------------------------------- nodes


@dataclass(frozen=True)
class NodeRange:
    minimum: int
    maximum: int | None = None  # None: no maximum given (or 0, which means the same)


def _str_to_nodes(text: str) -> tuple[int, str]:
    """Slurm's ``_str_to_nodes``: strtol then an optional k and m multiplier; -1 when there
    are no digits."""
    number, rest = strtol_prefix(text)
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


# What sbatch checks itself before submitting (and --array, which the controller refuses at
# submission, as sbatch prints it); every other value is passed on as written.
_VALIDATORS: dict[str, Callable[[str], object]] = {
    "array": check_array,
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

    # What the request adds up to on each node, as slurmctld allocates it (checked against
    # `scontrol show job` on Slurm 22.05.8: tests/fixtures/slurm-local/requests/).

    @property
    def node_count(self) -> int:
        """--nodes (its minimum); else as many nodes as --ntasks needs at --ntasks-per-node
        each (Slurm reads that as a maximum a node); 1 when neither says."""
        if self.nodes is not None:
            return max(1, self.nodes.minimum)  # --nodes=0 (sbatch refuses it) divides nothing
        if self.ntasks and self.ntasks_per_node:
            return math.ceil(self.ntasks / self.ntasks_per_node)
        return 1

    @property
    def tasks_total(self) -> int:
        """--ntasks, else nodes x --ntasks-per-node (1 per node when neither is given)."""
        return self.ntasks or self.node_count * (self.ntasks_per_node or 1)

    @property
    def tasks_per_node(self) -> int:
        """--ntasks-per-node, else the tasks spread evenly (the busiest node's share)."""
        return self.ntasks_per_node or max(1, math.ceil(self.tasks_total / self.node_count))

    @property
    def node_gpus(self) -> int | None:
        """GPUs on each node from any GPU option: --gres/--gpus-per-node, --gpus spread over
        the nodes, --gpus-per-task x the node's tasks. None when no option asks for GPUs."""
        gpus = self.gpus_on_node
        if gpus is None and self.gpus is not None:
            gpus = math.ceil(gpu_count(self.gpus) / max(self.node_count, 1))
        if gpus is None and self.gpus_per_task is not None:
            gpus = gpu_count(self.gpus_per_task) * self.tasks_per_node
        return gpus

    @property
    def node_cpus(self) -> int:
        """CPUs allocated on each node: tasks x --cpus-per-task, else --cpus-per-gpu x the
        node's GPUs (slurmctld's NumCPUs; CPUs/Task stays 1 there), else one per task."""
        if self.cpus_per_task is None and self.cpus_per_gpu is not None and self.node_gpus:
            return max(self.cpus_per_gpu * self.node_gpus, self.tasks_per_node)
        return self.tasks_per_node * (self.cpus_per_task or 1)

    @property
    def task_cpus(self) -> int:
        """Cores each task can use: --cpus-per-task, else its share of the CPUs that
        --cpus-per-gpu brings (a one-task job with 8 GPUs x 4 has 32), else 1."""
        if self.cpus_per_task is not None:
            return self.cpus_per_task
        return max(1, self.node_cpus // self.tasks_per_node)

    @property
    def node_mem_mib(self) -> int | None:
        """Memory on each node: --mem, else --mem-per-cpu x the node's CPUs (every task's,
        not one task's), else --mem-per-gpu x the node's GPUs. None when no option sets it
        or --mem=0 (all of the node's memory: no number to compare with)."""
        if self.mem_mib is not None:
            return self.mem_mib or None
        if self.mem_per_cpu_mib:
            return self.mem_per_cpu_mib * self.node_cpus
        if self.mem_per_gpu_mib and self.node_gpus:
            return self.mem_per_gpu_mib * self.node_gpus
        return None
