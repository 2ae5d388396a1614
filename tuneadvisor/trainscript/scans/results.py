"""What the script scan finds: where each value comes from (`Origin`), the DataLoaders, loops,
host syncs, DDP and AMP use. `script_facts.ScriptScan` gathers them and flattens them to facts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

Scalar: TypeAlias = int | float | bool | str | None

# Where a value comes from: the `script.*.source` facts.
LITERAL = "literal"  # written in the script (possibly via a variable)
SLURM_ENV = "slurm_env"  # a SLURM_* environment variable
ENV = "env"  # another environment variable (WORLD_SIZE, LOCAL_RANK, ...)
CPU_COUNT = "cpu_count"  # os.cpu_count(), len(os.sched_getaffinity(0)), ...
DEVICE_COUNT = "device_count"  # torch.cuda.device_count()
ARGPARSE = "argparse"  # a command-line option
DEFAULT = "default"  # not passed: the callee's default applies
CALL = "call"  # the result of some other call (a sampler constructor, ...)
VARIABLE = "variable"  # a name the scan could not follow
UNKNOWN = "unknown"  # any other expression
SOURCES = (
    LITERAL,
    SLURM_ENV,
    ENV,
    CPU_COUNT,
    DEVICE_COUNT,
    ARGPARSE,
    DEFAULT,
    CALL,
    VARIABLE,
    UNKNOWN,
)

LOADER_PARAMS = (
    "num_workers",
    "pin_memory",
    "persistent_workers",
    "prefetch_factor",
    "batch_size",
    "sampler",
)
SLURM_RANK_VARS = frozenset(
    {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NTASKS_PER_NODE", "SLURM_NODEID"}
)
TORCHRUN_VARS = frozenset({"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK"})


@dataclass(frozen=True)
class ArgOption:
    """One `parser.add_argument(...)`."""

    flags: tuple[str, ...]  # ("-j", "--workers")
    dest: str  # the attribute on the parsed namespace
    line: int
    default: Origin | None  # None when no default= is given
    type_name: str | None  # "int", "float", "bool", ... as written
    action: str | None  # "store_true", "BooleanOptionalAction", ...

    @property
    def name(self) -> str:
        """The long option when there is one, as a user would type it."""
        longs = [flag for flag in self.flags if flag.startswith("--")]
        return (longs or list(self.flags) or [self.dest])[0]


@dataclass(frozen=True)
class Origin:
    """Where one value comes from, and the value when the scan knows it."""

    source: str  # one of SOURCES
    expr: str  # the expression the value comes from, as written
    line: int | None  # where that expression is (for `default`: the call's line)
    value: Scalar = None  # the value in effect, when known
    env: str | None = None  # the environment variable read
    env_default: Scalar = None  # os.environ.get(..., default)
    cpu_call: str | None = None  # "os.cpu_count", "os.sched_getaffinity", ...
    call: str | None = None  # the callee, for source `call`
    option: ArgOption | None = None  # for source `argparse`
    passed: str | None = None  # the option's value on the job's launch line, verbatim
    passed_origin: Origin | None = None  # what that launch value is
    conditional: bool = False  # only set on some paths (`if use_cuda:`, `x if c else y`)
    derived: bool = False  # computed from the source (min(...), - 1) rather than equal to it
    via: tuple[str, ...] = ()  # the names followed to get here


@dataclass(frozen=True)
class ArgumentsEnd:
    """Where a keyword added to a call goes: its last argument's span, as the parse gave it
    (columns in UTF-8 bytes), so a patch is written from the scan without parsing again."""

    line: int  # the last argument's first line
    end_line: int
    col: int
    end_col: int
    own_line: bool  # one argument a line: a new one goes on a line of its own


@dataclass(frozen=True)
class DataLoaderScan:
    line: int
    end_line: int
    name: str | None  # what it is assigned to ("train_loader", "self.loader", a dict key)
    function: str | None  # the function it is built in
    params: Mapping[str, Origin]  # every name in LOADER_PARAMS
    arguments_end: ArgumentsEnd | None = None  # None: the call takes no argument

    @property
    def distributed_sampler(self) -> bool | None:
        """Whether a DistributedSampler is its sampler (None: cannot tell)."""
        sampler = self.params.get("sampler")
        if sampler is None:
            return None
        if sampler.call is not None:
            return sampler.call.endswith("DistributedSampler")
        if sampler.source == DEFAULT or (sampler.source == LITERAL and sampler.value is None):
            return False
        return None


@dataclass(frozen=True)
class LoaderLoop:
    """A `for ... in <DataLoader>` loop: its body runs once per step."""

    line: int
    iterable: str  # the iterated expression as written
    name: str | None  # the loader's name, when the iterable is one
    training: bool  # it calls .backward() or iterates a train* loader


@dataclass(frozen=True)
class SyncSite:
    """A host-device sync: the host waits for every queued GPU kernel here."""

    line: int
    kind: str  # item, cpu, numpy, tolist, to_cpu, synchronize, print
    text: str
    loop_line: int | None  # the DataLoader loop it runs in once per step, if any
    training: bool  # that loop is a training loop
    guard: str | None  # `batch_idx % args.log_interval == 0`: runs every N steps only

    @property
    def per_step(self) -> bool:
        return self.loop_line is not None


@dataclass(frozen=True)
class DdpScan:
    wrap_lines: tuple[int, ...] = ()  # DistributedDataParallel / FSDP constructions
    init_lines: tuple[int, ...] = ()  # init_process_group calls
    backend: str | None = None
    sampler_lines: tuple[int, ...] = ()  # DistributedSampler constructions
    set_epoch_lines: tuple[int, ...] = ()
    spawn_lines: tuple[int, ...] = ()  # torch.multiprocessing.spawn calls
    data_parallel_lines: tuple[int, ...] = ()  # nn.DataParallel wraps (one process, many GPUs)
    world_size: Origin | None = None
    rank: Origin | None = None
    local_rank: Origin | None = None
    nprocs: Origin | None = None
    env_reads: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def used(self) -> bool:
        return bool(self.wrap_lines)

    @property
    def reads_slurm_env(self) -> bool:
        return not SLURM_RANK_VARS.isdisjoint(self.env_reads)

    @property
    def reads_torchrun_env(self) -> bool:
        return not TORCHRUN_VARS.isdisjoint(self.env_reads)


@dataclass(frozen=True)
class AmpUse:
    line: int
    name: str  # the qualified callee or module: "torch.cuda.amp.autocast"
    kind: str  # autocast, grad_scaler, import
    deprecated: bool
    enabled: bool | None = None  # False when enabled= is known to be False
    dtype: str | None = None  # bf16 / fp16, for autocast


@dataclass(frozen=True)
class AmpScan:
    uses: tuple[AmpUse, ...] = ()
    dtype_lines: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # bf16/fp16 refs

    @property
    def used(self) -> bool:
        return any(u.kind != "import" and u.enabled is not False for u in self.uses)

    @property
    def deprecated(self) -> tuple[AmpUse, ...]:
        return tuple(u for u in self.uses if u.deprecated)

    @property
    def dtype(self) -> str | None:
        return next((u.dtype for u in self.uses if u.dtype is not None), None)
