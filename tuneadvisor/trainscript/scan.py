"""Facts from a training script, read from its AST: the script is never imported or run.

What the advisor needs to know about the training script: where each DataLoader setting comes
from (a literal, a Slurm variable, the node's CPU count, a command-line option and what the job
passes for it), DDP and AMP use, and host syncs inside the step loop. The reading follows
simple assignments, dict literals merged into `**kwargs`, and argparse options within the one
file. What it cannot follow is reported as `variable` or `unknown` with the expression text,
never guessed, so the facts about it stay absent.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias, cast

from tuneadvisor.trainscript.fact_rows import FACT_ROWS
from tuneadvisor.trainscript.pyast import dotted_name

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

# When an expression mixes sources (min(8, os.cpu_count())), the first of these names it.
_SOURCE_RANK = {
    SLURM_ENV: 0,
    ARGPARSE: 1,
    CPU_COUNT: 2,
    ENV: 3,
    DEVICE_COUNT: 4,
    CALL: 5,
    VARIABLE: 6,
    UNKNOWN: 7,
    DEFAULT: 8,
    LITERAL: 9,
}

# Every fact `ScriptScan.facts()` can emit: (name, type, unit, description), the row format
# of `tuneadvisor.advisor.facts`. Values of the wrong type are dropped, never emitted.
_FACT_TYPES: Mapping[str, str] = {row[0]: row[1] for row in FACT_ROWS}

_MAX_DEPTH = 12  # how many assignments/expressions deep a value is followed
_MAX_RESOLVES = 20_000  # a budget that keeps pathological files fast
_TEXT_LIMIT = 160

LOADER_PARAMS = (
    "num_workers",
    "pin_memory",
    "persistent_workers",
    "prefetch_factor",
    "batch_size",
    "sampler",
)
# torch.utils.data.DataLoader's defaults and positional order (prefetch_factor and
# persistent_workers are keyword-only).
_LOADER_DEFAULTS: Mapping[str, Scalar] = {
    "num_workers": 0,
    "pin_memory": False,
    "persistent_workers": False,
    "prefetch_factor": None,
    "batch_size": 1,
    "sampler": None,
}
_LOADER_POSITIONAL = (
    "dataset",
    "batch_size",
    "shuffle",
    "sampler",
    "batch_sampler",
    "num_workers",
    "collate_fn",
    "pin_memory",
    "drop_last",
    "timeout",
    "worker_init_fn",
    "multiprocessing_context",
    "generator",
)

_CPU_COUNT_CALLS = frozenset(
    {
        "os.cpu_count",
        "os.process_cpu_count",
        "multiprocessing.cpu_count",
        "torch.multiprocessing.cpu_count",
        "psutil.cpu_count",
    }
)
_ENV_GET_CALLS = frozenset({"os.getenv", "os.environ.get"})
_SLURM_RANK_VARS = frozenset(
    {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NTASKS_PER_NODE", "SLURM_NODEID"}
)
_TORCHRUN_VARS = frozenset({"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK"})
_LOOP_WRAPPERS = frozenset({"enumerate", "tqdm", "trange", "zip", "iter", "islice", "track"})
_DTYPES = {"torch.bfloat16": "bf16", "torch.float16": "fp16", "torch.half": "fp16"}
_DTYPE_STRINGS = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16"}
_DEPRECATED_AMP = ("torch.cuda.amp", "torch.cpu.amp")
_SYNC_METHODS = frozenset({"item", "cpu", "numpy", "tolist"})
_SCALAR_CALLS = frozenset({"float", "int", "len", "str", "bool", "round"})
_NOT_PRINTED = frozenset({"len", "type", "isinstance", "id"})
_PRINT_OPTIONS = frozenset({"sep", "end", "file", "flush"})
_EVAL_NAME = re.compile(r"val|test|eval", re.IGNORECASE)
# Loader-like names, as profile/kinds.py reads them: `train_loader`, `dataloaders`, `dl_val`,
# `loader2`; not `loader_kwargs`.
_LOADER_NAME = re.compile(
    r"(?:.*(?:loader|prefetcher)s?|dl|.*_dl)"
    r"(?:_?(?:[a-z]|\d+|train|training|val|valid|validation|test|eval))?"
)
_SHELL_VAR = re.compile(r"\$\{?#?([A-Za-z_][A-Za-z0-9_]*)")
_SHELL_ARITHMETIC = re.compile(r"\$\(\((.*?)\)\)")
_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHELL_COMMAND = re.compile(r"\$\(|`")
_NPROC_COMMAND = re.compile(r"\$\(\s*nproc\s*\)|`\s*nproc\s*`")
_PLAIN_SHELL_VAR = re.compile(r"\$(?:[A-Za-z_]\w*|\{[A-Za-z_]\w*(?::-[^}]*)?\})")
_NPROC_NAMES = frozenset(
    {"nprocs", "nproc", "nproc_per_node", "ngpus_per_node", "ngpus", "n_gpus", "num_gpus"}
)
_ARITHMETIC: Mapping[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
}
_CONVERSIONS: Mapping[str, Callable[[Any], Scalar]] = {
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
}
_SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_Loop: TypeAlias = ast.For | ast.AsyncFor
Position: TypeAlias = tuple[int, int]


# --------------------------------------------------------------------------- the results


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
class DataLoaderScan:
    line: int
    end_line: int
    name: str | None  # what it is assigned to ("train_loader", "self.loader", a dict key)
    function: str | None  # the function it is built in
    params: Mapping[str, Origin]  # every name in LOADER_PARAMS

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
        return not _SLURM_RANK_VARS.isdisjoint(self.env_reads)

    @property
    def reads_torchrun_env(self) -> bool:
        return not _TORCHRUN_VARS.isdisjoint(self.env_reads)


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


@dataclass(frozen=True)
class ScriptScan:
    parse_error: str | None = None
    dataloaders: tuple[DataLoaderScan, ...] = ()
    train_loader_index: int | None = None
    loops: tuple[LoaderLoop, ...] = ()
    syncs: tuple[SyncSite, ...] = ()  # every sync call; see step_syncs
    options: Mapping[str, ArgOption] = field(default_factory=dict)  # by dest
    ddp: DdpScan = field(default_factory=DdpScan)
    amp: AmpScan = field(default_factory=AmpScan)
    cudnn_benchmark: Origin | None = None
    torch_threads: Origin | None = None
    omp_num_threads: Origin | None = None

    @property
    def train_loader(self) -> DataLoaderScan | None:
        if self.train_loader_index is None:
            return None
        return self.dataloaders[self.train_loader_index]

    @property
    def step_syncs(self) -> tuple[SyncSite, ...]:
        """Syncs run once per training step (every loader loop's when none looks like training)."""
        per_step = [s for s in self.syncs if s.per_step]
        if any(loop.training for loop in self.loops):
            per_step = [s for s in per_step if s.training]
        return tuple(per_step)

    def facts(self) -> dict[str, object]:
        """The flat `script.*` facts; unknown values are absent, never None."""
        if self.parse_error is not None:
            return {}
        out: dict[str, object] = {}
        _put(out, "script.dataloaders", len(self.dataloaders))
        _loader_facts(out, self.train_loader)
        _ddp_facts(out, self.ddp, self.train_loader)
        _amp_facts(out, self.amp)
        _sync_facts(out, self)
        _misc_facts(out, self)
        return out


# --------------------------------------------------------------------------- entry point


def scan_script(text: str, launch_args: Mapping[str, str] | None = None) -> ScriptScan:
    """Read `text` (a training script) for the advisor. Never raises on bad source.

    `launch_args` maps options to the values the job's launch line passes
    (`{"--num-workers": "${SLURM_CPUS_PER_TASK}"}`); None means the launch line is unknown,
    and options then count at their defaults.
    """
    text = text.removeprefix("\ufeff")
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return ScriptScan(parse_error=f"line {exc.lineno}: {exc.msg}")
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, absurd nesting
        return ScriptScan(parse_error=str(exc) or type(exc).__name__)
    try:
        return _scan_tree(tree, text, launch_args)
    except RecursionError:
        return ScriptScan(parse_error="too deeply nested to scan")


def _scan_tree(tree: ast.Module, text: str, launch_args: Mapping[str, str] | None) -> ScriptScan:
    index = _Index(tree, text)
    resolver = _Resolver(index, launch_args)
    loaders = _scan_loaders(index, resolver)
    loops = _scan_loops(index, loaders)
    cudnn, threads, omp = _scan_misc(index, resolver)
    return ScriptScan(
        dataloaders=tuple(loaders),
        train_loader_index=_pick_train_loader(loaders, list(loops.values())),
        loops=tuple(loops.values()),
        syncs=tuple(_scan_syncs(index, loops)),
        options=dict(resolver.options),
        ddp=_scan_ddp(index, resolver),
        amp=_scan_amp(index, resolver),
        cudnn_benchmark=cudnn,
        torch_threads=threads,
        omp_num_threads=omp,
    )


# --------------------------------------------------------------------------- small helpers


def _pos(node: ast.AST) -> Position:
    return (int(getattr(node, "lineno", 0)), int(getattr(node, "col_offset", 0)))


def _end(node: ast.AST) -> Position:
    line = getattr(node, "end_lineno", None)
    col = getattr(node, "end_col_offset", None)
    if line is None or col is None:
        return _pos(node)
    return (int(line), int(col))


def _last(name: str | None) -> str:
    return (name or "").rsplit(".", 1)[-1]


def _const_str(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((kw.value for kw in call.keywords if kw.arg == name), None)


def _argument(call: ast.Call, name: str, position: int) -> ast.expr | None:
    """A keyword argument, else the positional one at `position`."""
    found = _keyword(call, name)
    if found is None and position < len(call.args):
        arg = call.args[position]
        if not isinstance(arg, ast.Starred) and not any(
            isinstance(a, ast.Starred) for a in call.args[:position]
        ):
            found = arg
    return found


def _convert(value: Scalar, convert: Callable[[Any], Scalar]) -> Scalar:
    if value is None:
        return None
    try:
        return convert(value)
    except (ValueError, TypeError, OverflowError):
        return None


def _split_lines(text: str) -> list[bytes]:
    """Lines as the parser counts them (\\n, \\r\\n, \\r), in UTF-8: col offsets are bytes."""
    return [line.encode("utf-8", "surrogatepass") for line in re.split(r"\r\n|\r|\n", text)]


def _walk_body(stmts: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """Nodes of `stmts` in source order, without entering nested functions or classes."""
    stack = list(reversed(stmts))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _is_main_guard(node: ast.If) -> bool:
    """`if __name__ == "__main__":` wraps whole scripts; it makes nothing conditional."""
    test = node.test
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
    )


def _contains(body: Sequence[ast.AST], node: ast.AST) -> bool:
    return any(item is node for item in body)


# --------------------------------------------------------------------------- the index


@dataclass(frozen=True)
class _Binding:
    """`name = value`: visible after `end`."""

    line: int
    end: Position
    value: ast.expr
    scope: ast.AST
    conditional: bool


@dataclass(frozen=True)
class _Mutation:
    """A change to a dict held in a name: `d.update(x)`, `d["k"] = v`, `del d["k"]`."""

    pos: Position
    scope: ast.AST
    conditional: bool
    key: str | None = None  # for item assignment and deletion
    value: ast.expr | None = None  # the item's value, or update()'s positional argument
    keywords: tuple[ast.keyword, ...] = ()
    delete: bool = False


class _Index:
    """One pass over the tree: parents, scopes, imports, bindings, dict mutations, calls."""

    def __init__(self, tree: ast.Module, text: str) -> None:
        self.tree = tree
        self.lines = _split_lines(text)
        self.parents: dict[ast.AST, ast.AST] = {}
        self.imports: dict[str, str] = {}
        self.import_nodes: list[ast.Import | ast.ImportFrom] = []
        self.bindings: dict[str, list[_Binding]] = {}
        self.mutations: dict[str, list[_Mutation]] = {}
        self.calls: list[ast.Call] = []
        self.assigns: list[tuple[ast.expr, ast.expr, ast.stmt]] = []
        self.nodes = list(ast.walk(tree))
        for node in self.nodes:
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        for node in self.nodes:
            self._visit(node)
        self.calls.sort(key=_pos)
        self.assigns.sort(key=lambda item: _pos(item[2]))
        # Reads of environment variables, in source order (needs every import seen first).
        self.env_nodes: list[tuple[str, ast.expr]] = sorted(
            (
                (read[0], node)
                for node in self.nodes
                if isinstance(node, ast.expr)
                and (read := self.env_read(node)) is not None
                and read[0] is not None
            ),
            key=lambda item: _pos(item[1]),
        )

    # ---- building

    def _visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            self._add_import(node)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                self._add_target(target, node.value, node)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self._add_target(node.target, node.value, node)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                self._add_item_mutation(target, None, node)
        elif isinstance(node, ast.Call):
            self.calls.append(node)
            self._add_call_mutation(node)

    def _add_import(self, node: ast.Import | ast.ImportFrom) -> None:
        self.import_nodes.append(node)
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.imports[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    self.imports[root] = root
        elif node.module and not node.level:
            for alias in node.names:
                self.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def _add_target(self, target: ast.expr, value: ast.expr, stmt: ast.stmt) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            # Only `a, b = 1, 2` pairs up; `a, b = f()` binds nothing the scan can follow.
            if (
                isinstance(value, ast.Tuple | ast.List)
                and len(value.elts) == len(target.elts)
                and not any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts))
            ):
                for sub_target, sub_value in zip(target.elts, value.elts, strict=True):
                    self._add_target(sub_target, sub_value, stmt)
            return
        self.assigns.append((target, value, stmt))
        if isinstance(target, ast.Subscript):
            self._add_item_mutation(target, value, stmt)
            return
        name = dotted_name(target)
        if name is not None:
            binding = _Binding(
                stmt.lineno, _end(stmt), value, self.scope_of(stmt), self.conditional(stmt)
            )
            self.bindings.setdefault(name, []).append(binding)

    def _add_item_mutation(self, target: ast.expr, value: ast.expr | None, stmt: ast.stmt) -> None:
        if not isinstance(target, ast.Subscript):
            return
        owner, key = dotted_name(target.value), _const_str(target.slice)
        if owner is None or key is None:
            return
        mutation = _Mutation(
            _pos(stmt),
            self.scope_of(stmt),
            self.conditional(stmt),
            key=key,
            value=value,
            delete=value is None,
        )
        self.mutations.setdefault(owner, []).append(mutation)

    def _add_call_mutation(self, call: ast.Call) -> None:
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr not in ("update", "pop"):
            return
        owner = dotted_name(func.value)
        if owner is None:
            return
        scope, conditional = self.scope_of(call), self.conditional(call)
        if func.attr == "update":
            value = call.args[0] if call.args else None
            mutation = _Mutation(
                _pos(call), scope, conditional, value=value, keywords=tuple(call.keywords)
            )
        else:
            key = _const_str(call.args[0]) if call.args else None
            if key is None:
                return
            mutation = _Mutation(_pos(call), scope, conditional, key=key, delete=True)
        self.mutations.setdefault(owner, []).append(mutation)

    # ---- queries

    def text(self, node: ast.expr) -> str:
        """The node's source text on one line, shortened for evidence."""
        try:
            start, end = node.lineno - 1, (node.end_lineno or node.lineno) - 1
            col, end_col = node.col_offset, node.end_col_offset
            if start == end:
                raw = self.lines[start][col:end_col]
            else:
                middle = self.lines[start + 1 : end]
                raw = b"\n".join([self.lines[start][col:], *middle, self.lines[end][:end_col]])
            text = raw.decode("utf-8", "replace")
        except (AttributeError, IndexError, TypeError):
            text = ast.unparse(node)
        text = " ".join(text.split())
        return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 1] + "…"

    def qual(self, node: ast.AST) -> str | None:
        """The dotted name with imports resolved: `DDP` -> `torch.nn.parallel.Distrib...`."""
        name = dotted_name(node)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        full = self.imports.get(root, root)
        return f"{full}.{rest}" if rest else full

    def scope_of(self, node: ast.AST) -> ast.AST:
        parent = self.parents.get(node)
        while parent is not None and not isinstance(parent, _SCOPES):
            parent = self.parents.get(parent)
        return parent if parent is not None else self.tree

    def function_name(self, node: ast.AST) -> str | None:
        scope = self.scope_of(node)
        while isinstance(scope, ast.Lambda | ast.ClassDef):
            scope = self.scope_of(scope)
        return scope.name if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) else None

    def conditional(self, node: ast.AST) -> bool:
        """Inside an `if` (or an except handler, a match case) of its own scope."""
        parent = self.parents.get(node)
        while parent is not None and not isinstance(parent, _SCOPES):
            if isinstance(parent, ast.If) and not _is_main_guard(parent):
                return True
            if isinstance(parent, ast.IfExp | ast.ExceptHandler | ast.match_case):
                return True
            parent = self.parents.get(parent)
        return False

    def lookup(self, name: str, at: ast.AST) -> list[_Binding]:
        """Bindings of `name` visible at `at`, nearest first (own scope, then enclosing ones)."""
        candidates = self.bindings.get(name)
        if not candidates:
            return []
        pos = _pos(at)
        scope = self.scope_of(at)
        for level, current in enumerate(self._scope_chain(scope)):
            # A function runs after the module body: all module bindings are visible there.
            anywhere = level > 0 and isinstance(current, ast.Module)
            visible = [b for b in candidates if b.scope is current and (anywhere or b.end <= pos)]
            if visible:
                return sorted(visible, key=lambda b: b.end, reverse=True)
            if _is_parameter(current, name.split(".")[0]):
                break  # a parameter: its value comes from the caller
        if name.startswith("self."):  # set in __init__, read in another method
            return sorted(candidates, key=lambda b: b.end, reverse=True)
        return []

    def _scope_chain(self, scope: ast.AST) -> Iterator[ast.AST]:
        yield scope
        while not isinstance(scope, ast.Module):
            scope = self.scope_of(scope)
            if not isinstance(scope, ast.ClassDef):  # class bodies are not visible to methods
                yield scope

    def mutations_after(self, name: str, binding: _Binding, at: ast.AST) -> list[_Mutation]:
        """Changes to the dict bound by `binding`, up to `at` when `at` is in the same scope."""
        same_scope = self.scope_of(at) is binding.scope
        limit = _pos(at)
        return sorted(
            (
                m
                for m in self.mutations.get(name, [])
                if m.scope is binding.scope
                and m.pos >= binding.end
                and (not same_scope or m.pos < limit)
            ),
            key=lambda m: m.pos,
        )

    def env_read(self, node: ast.AST) -> tuple[str | None, ast.expr | None] | None:
        """(variable, default expression) when `node` reads an environment variable."""
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and self.qual(node.value) == "os.environ"
        ):
            return _const_str(node.slice), None
        if isinstance(node, ast.Call) and node.args and self.qual(node.func) in _ENV_GET_CALLS:
            default = node.args[1] if len(node.args) > 1 else _keyword(node, "default")
            return _const_str(node.args[0]), default
        return None


def _is_parameter(scope: ast.AST, name: str) -> bool:
    if not isinstance(scope, _FUNCTIONS):
        return False
    args = scope.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return any(arg is not None and arg.arg == name for arg in every)


# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class _Entry:
    value: ast.expr
    conditional: bool


@dataclass
class _KwMap:
    """What a `**kwargs` dict holds; `opaque` when some of its keys cannot be known."""

    entries: dict[str, _Entry] = field(default_factory=dict)
    opaque: bool = False

    def merge(self, other: _KwMap | None, conditional: bool) -> None:
        if other is None:
            self.opaque = True
            return
        for key, entry in other.entries.items():
            self.entries[key] = _Entry(entry.value, entry.conditional or conditional)
        self.opaque = self.opaque or other.opaque


class _Resolver:
    """Follows an expression back to where its value comes from."""

    def __init__(self, index: _Index, launch_args: Mapping[str, str] | None) -> None:
        self.index = index
        self.launch_args = launch_args
        self._cache: dict[int, Origin] = {}
        self._budget = _MAX_RESOLVES
        self._rules: tuple[Callable[[ast.expr, int], Origin | None], ...] = (
            self._constant,
            self._environment,
            self._counts,
            self._conversion,
            self._min_max,
            self._arithmetic,
            self._if_exp,
            self._subscript,
            self._mapping_get,
            self._reference,
            self._call,
        )
        self.options: dict[str, ArgOption] = {}
        self.options = _collect_options(index, self)
        self._cache.clear()  # values resolved before the options were known

    def resolve(self, node: ast.expr, depth: int = 0) -> Origin:
        cached = self._cache.get(id(node))
        if cached is not None:
            return cached
        self._budget -= 1
        origin = None
        if depth <= _MAX_DEPTH and self._budget > 0:
            origin = next((o for rule in self._rules if (o := rule(node, depth))), None)
        if origin is None:
            origin = Origin(UNKNOWN, self.index.text(node), node.lineno)
        self._cache[id(node)] = origin
        return origin

    def follow(self, node: ast.expr, depth: int = 0) -> ast.expr:
        """The expression a name was last assigned (through `x if c else y`'s first branch)."""
        if depth > _MAX_DEPTH:
            return node
        if isinstance(node, ast.IfExp):
            return self.follow(node.body, depth + 1)
        name = dotted_name(node)
        bindings = self.index.lookup(name, node) if name is not None else []
        return self.follow(bindings[0].value, depth + 1) if bindings else node

    # ---- the rules, tried in order

    def _constant(self, node: ast.expr, depth: int) -> Origin | None:
        if isinstance(node, ast.Constant):
            value = node.value
            if value is None or isinstance(value, int | float | str):  # bool is an int
                return Origin(LITERAL, self.index.text(node), node.lineno, value=value)
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and isinstance(node.operand.value, int | float)
            and not isinstance(node.operand.value, bool)
        ):
            return Origin(LITERAL, self.index.text(node), node.lineno, value=-node.operand.value)
        return None

    def _environment(self, node: ast.expr, depth: int) -> Origin | None:
        read = self.index.env_read(node)
        if read is None:
            return None
        name, default = read
        source = SLURM_ENV if name is not None and name.startswith("SLURM_") else ENV
        fallback = self.resolve(default, depth + 1).value if default is not None else None
        text = self.index.text(node)
        return Origin(source, text, node.lineno, env=name, env_default=fallback)

    def _counts(self, node: ast.expr, depth: int) -> Origin | None:
        if not isinstance(node, ast.Call):
            return None
        qual = self.index.qual(node.func) or ""
        text = self.index.text(node)
        if qual in _CPU_COUNT_CALLS:
            return Origin(CPU_COUNT, text, node.lineno, cpu_call=qual)
        if (
            qual == "len"
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Call)
            and _last(self.index.qual(node.args[0].func)) == "sched_getaffinity"
        ):
            return Origin(CPU_COUNT, text, node.lineno, cpu_call="os.sched_getaffinity")
        if qual.endswith("cuda.device_count") or qual == "torch.accelerator.device_count":
            return Origin(DEVICE_COUNT, text, node.lineno, call=qual)
        return None

    def _conversion(self, node: ast.expr, depth: int) -> Origin | None:
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _CONVERSIONS
            and len(node.args) == 1
            and not node.keywords
        ):
            return None
        convert = _CONVERSIONS[node.func.id]
        inner = self.resolve(node.args[0], depth + 1)
        return replace(
            inner,
            expr=self.index.text(node),
            value=_convert(inner.value, convert),
            env_default=_convert(inner.env_default, convert),
        )

    def _min_max(self, node: ast.expr, depth: int) -> Origin | None:
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("min", "max")
            and len(node.args) >= 2
            and not node.keywords
            and not any(isinstance(arg, ast.Starred) for arg in node.args)
        ):
            return None
        parts = [self.resolve(arg, depth + 1) for arg in node.args]
        numbers = [part.value for part in parts if _is_number(part.value)]
        pick = min if node.func.id == "min" else max
        value = pick(cast(list[float], numbers)) if len(numbers) == len(parts) else None
        return self._combine(node, parts, value)

    def _arithmetic(self, node: ast.expr, depth: int) -> Origin | None:
        if not isinstance(node, ast.BinOp) or type(node.op) not in _ARITHMETIC:
            return None
        left = self.resolve(node.left, depth + 1)
        right = self.resolve(node.right, depth + 1)
        value: Scalar = None
        if _is_number(left.value) and _is_number(right.value):
            try:
                value = _ARITHMETIC[type(node.op)](left.value, right.value)
            except (ZeroDivisionError, OverflowError):
                value = None
        return self._combine(node, [left, right], value)

    def _combine(self, node: ast.expr, parts: list[Origin], value: Scalar) -> Origin:
        """One origin for an expression of several: literal only when all parts are."""
        conditional = any(part.conditional for part in parts)
        text = self.index.text(node)
        if all(part.source == LITERAL for part in parts):
            return Origin(LITERAL, text, parts[0].line, value=value, conditional=conditional)
        lead = min(
            (part for part in parts if part.source != LITERAL),
            key=lambda part: _SOURCE_RANK[part.source],
        )
        return replace(lead, expr=text, value=value, derived=True, conditional=conditional)

    def _if_exp(self, node: ast.expr, depth: int) -> Origin | None:
        # `1 if use_cuda else 0`: the first branch is the one a GPU job takes, by convention.
        if not isinstance(node, ast.IfExp):
            return None
        chosen = self.resolve(node.body, depth + 1)
        if chosen.source == LITERAL and chosen.value is None:
            chosen = self.resolve(node.orelse, depth + 1)
        return replace(chosen, conditional=True)

    def _subscript(self, node: ast.expr, depth: int) -> Origin | None:
        if not isinstance(node, ast.Subscript) or not isinstance(node.ctx, ast.Load):
            return None
        key = _const_str(node.slice)
        mapping = self.mapping(node.value, depth + 1) if key is not None else None
        if mapping is None or key is None or key not in mapping.entries:
            return None
        return self._entry(mapping.entries[key], depth)

    def _mapping_get(self, node: ast.expr, depth: int) -> Origin | None:
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
        ):
            return None
        key = _const_str(node.args[0])
        mapping = self.mapping(node.func.value, depth + 1) if key is not None else None
        if mapping is None or key is None:
            return None
        if key in mapping.entries:
            return self._entry(mapping.entries[key], depth)
        if not mapping.opaque and len(node.args) > 1:
            return self.resolve(node.args[1], depth + 1)
        return None

    def _entry(self, entry: _Entry, depth: int) -> Origin:
        origin = self.resolve(entry.value, depth + 1)
        return replace(origin, conditional=origin.conditional or entry.conditional)

    def _reference(self, node: ast.expr, depth: int) -> Origin | None:
        name = dotted_name(node)
        if name is None:
            return None
        bindings = self.index.lookup(name, node)
        if bindings:
            return self._through_bindings(name, bindings, depth)
        option = self._option_for(node, name)
        if option is not None:
            return self.argparse(option, self.index.text(node))
        return Origin(VARIABLE, self.index.text(node), node.lineno)

    def _through_bindings(self, name: str, bindings: list[_Binding], depth: int) -> Origin:
        # `sampler = None` in an else branch must not hide `sampler = DistributedSampler(...)`
        # in the if branch: None means "not set", so a set value wins.
        first: Origin | None = None
        for binding in bindings:
            origin = self.resolve(binding.value, depth + 1)
            origin = replace(
                origin,
                via=(name, *origin.via),
                conditional=origin.conditional or binding.conditional,
            )
            if not (origin.source == LITERAL and origin.value is None):
                return origin
            first = first or origin
        assert first is not None
        return first

    def _option_for(self, node: ast.expr, name: str) -> ArgOption | None:
        """`args.workers` -> the option with dest `workers` (not `self.workers`, not `torch.x`)."""
        if not isinstance(node, ast.Attribute):
            return None
        root = name.split(".")[0]
        if root in self.index.imports or name == f"self.{node.attr}":
            return None
        return self.options.get(node.attr)

    def _call(self, node: ast.expr, depth: int) -> Origin | None:
        if not isinstance(node, ast.Call):
            return None
        qual = self.index.qual(node.func)
        return Origin(CALL, self.index.text(node), node.lineno, call=qual)

    # ---- argparse

    def argparse(self, option: ArgOption, text: str) -> Origin:
        """The option's value: what the launch line passes, else its default."""
        raw, negated = self._passed(option)
        passed = None if raw is None else _launch_origin(raw, option, negated)
        value = passed.value if passed is not None else _option_default(option)
        return Origin(
            ARGPARSE,
            text,
            option.line,
            value=value,
            option=option,
            passed=raw,
            passed_origin=passed,
        )

    def _passed(self, option: ArgOption) -> tuple[str | None, bool]:
        """The launch line's value for `option` and whether it is a `--no-...` form."""
        if self.launch_args is None:
            return None, False
        for flag in option.flags:
            if flag in self.launch_args:
                return self.launch_args[flag], False
            negative = "--no-" + flag[2:]
            if flag.startswith("--") and negative in self.launch_args:
                return self.launch_args[negative], True
        # argparse also takes any unambiguous prefix of a long option.
        for key, raw in self.launch_args.items():
            if not key.startswith("--") or len(key) < 3:
                continue
            owners = {o.dest for o in self.options.values() for f in o.flags if f.startswith(key)}
            if owners == {option.dest}:
                return raw, False
        return None, False

    # ---- **kwargs dicts

    def mapping(self, node: ast.expr, depth: int = 0) -> _KwMap | None:
        """What a dict expression holds, or None when it cannot be read at all."""
        self._budget -= 1
        if depth > _MAX_DEPTH or self._budget <= 0:
            return None
        if isinstance(node, ast.Dict):
            return self._dict_display(node, depth)
        if isinstance(node, ast.Call) and self.index.qual(node.func) == "dict":
            return self._dict_call(node, depth)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            result = _KwMap()
            result.merge(self.mapping(node.left, depth + 1), conditional=False)
            result.merge(self.mapping(node.right, depth + 1), conditional=False)
            return result
        if isinstance(node, ast.IfExp):
            return self._conditional_mapping(node, depth)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            returned = self._returned_by(node.func.id)
            return self.mapping(returned, depth + 1) if returned is not None else None
        name = dotted_name(node)
        return self._named_mapping(name, node, depth) if name is not None else None

    def _returned_by(self, function: str) -> ast.expr | None:
        """What a module-level function of this file returns, when it has one return:
        `**loader_kwargs(args)` building the DataLoader settings in a helper."""
        for stmt in self.index.tree.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == function:
                returns = [
                    node
                    for node in ast.walk(stmt)
                    if isinstance(node, ast.Return)
                    and node.value is not None
                    and self.index.scope_of(node) is stmt
                ]
                return returns[0].value if len(returns) == 1 else None
        return None

    def _dict_display(self, node: ast.Dict, depth: int) -> _KwMap:
        result = _KwMap()
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:  # {**other}
                result.merge(self.mapping(value, depth + 1), conditional=False)
            elif (text := _const_str(key)) is not None:
                result.entries[text] = _Entry(value, False)
            else:
                result.opaque = True
        return result

    def _dict_call(self, node: ast.Call, depth: int) -> _KwMap:
        result = _KwMap()
        for arg in node.args:
            result.merge(self.mapping(arg, depth + 1), conditional=False)
        self._merge_keywords(result, node.keywords, False, depth)
        return result

    def _merge_keywords(
        self, result: _KwMap, keywords: Sequence[ast.keyword], conditional: bool, depth: int
    ) -> None:
        for kw in keywords:
            if kw.arg is None:
                result.merge(self.mapping(kw.value, depth + 1), conditional)
            else:
                result.entries[kw.arg] = _Entry(kw.value, conditional)

    def _conditional_mapping(self, node: ast.IfExp, depth: int) -> _KwMap:
        # `{'num_workers': 1, 'pin_memory': True} if use_cuda else {}` (older mnist example)
        result = _KwMap()
        result.merge(self.mapping(node.body, depth + 1), conditional=True)
        other = self.mapping(node.orelse, depth + 1)
        if other is None:
            result.opaque = True
            return result
        for key, entry in other.entries.items():
            result.entries.setdefault(key, _Entry(entry.value, True))
        result.opaque = result.opaque or other.opaque
        return result

    def _named_mapping(self, name: str, node: ast.expr, depth: int) -> _KwMap | None:
        bindings = self.index.lookup(name, node)
        if not bindings:
            return None
        binding = bindings[0]
        result = _KwMap()
        result.merge(self.mapping(binding.value, depth + 1), conditional=binding.conditional)
        for mutation in self.index.mutations_after(name, binding, node):
            self._apply(result, mutation, depth)
        return result

    def _apply(self, result: _KwMap, mutation: _Mutation, depth: int) -> None:
        if mutation.delete and mutation.key is not None:
            result.entries.pop(mutation.key, None)
        elif mutation.key is not None and mutation.value is not None:
            result.entries[mutation.key] = _Entry(mutation.value, mutation.conditional)
        else:  # d.update(other, key=value)
            if mutation.value is not None:
                result.merge(self.mapping(mutation.value, depth + 1), mutation.conditional)
            self._merge_keywords(result, mutation.keywords, mutation.conditional, depth)

    # ---- DataLoader arguments

    def loader_params(self, call: ast.Call) -> dict[str, Origin]:
        given, opaque = self._loader_arguments(call)
        params: dict[str, Origin] = {}
        for param in LOADER_PARAMS:
            entry = given.get(param)
            if entry is not None:
                params[param] = self._entry(entry, 0)
            elif opaque is not None:  # could be in *args / **kwargs the scan cannot read
                params[param] = Origin(UNKNOWN, opaque, call.lineno)
            else:
                params[param] = Origin(DEFAULT, "", call.lineno, value=_LOADER_DEFAULTS[param])
        return params

    def _loader_arguments(self, call: ast.Call) -> tuple[dict[str, _Entry], str | None]:
        given: dict[str, _Entry] = {}
        opaque: str | None = None
        for position, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                opaque = self.index.text(arg)
                break
            if position < len(_LOADER_POSITIONAL):
                given[_LOADER_POSITIONAL[position]] = _Entry(arg, False)
        for kw in call.keywords:
            if kw.arg is not None:
                given[kw.arg] = _Entry(kw.value, False)
                continue
            mapping = self.mapping(kw.value)
            if mapping is None or mapping.opaque:
                opaque = opaque or "**" + self.index.text(kw.value)
            for key, entry in (mapping.entries if mapping else {}).items():
                given.setdefault(key, entry)
        return given, opaque


def _option_default(option: ArgOption) -> Scalar:
    if option.default is not None:
        value = option.default.value
        # argparse runs string defaults through type=, as it does values from the command line.
        if isinstance(value, str) and option.type_name is not None:
            return _typed_option_value(value, option)
        return value
    if option.action == "store_true":
        return False
    if option.action == "store_false":
        return True
    return None


def _typed_option_value(raw: str, option: ArgOption) -> Scalar:
    convert = {"int": int, "float": float}.get(option.type_name or "")
    if convert is not None:
        return _convert(raw, convert)
    if option.type_name == "bool":
        return raw != ""  # argparse's type=bool: any non-empty string, even "False", is True
    return raw


def _launch_origin(raw: str, option: ArgOption, negated: bool) -> Origin:
    """What a value on the job's launch line is: a number, or a shell variable."""
    if option.action in ("store_true", "store_false", "BooleanOptionalAction"):
        value = option.action != "store_false"
        return Origin(LITERAL, raw, None, value=not value if negated else value)
    bare = raw.strip("\"'")
    names = _shell_variables(bare)
    if names:
        source = SLURM_ENV if names[0].startswith("SLURM_") else ENV
        derived = _PLAIN_SHELL_VAR.fullmatch(bare) is None
        return Origin(source, raw, None, env=names[0], derived=derived)
    if _NPROC_COMMAND.fullmatch(bare):  # nproc counts the cores of the task's affinity mask
        return Origin(CPU_COUNT, raw, None, cpu_call="nproc")
    if _SHELL_COMMAND.search(bare):
        return Origin(UNKNOWN, raw, None)
    return Origin(LITERAL, raw, None, value=_typed_option_value(bare, option))


def _shell_variables(raw: str) -> list[str]:
    """Variables a shell word expands: `$X`, `${X:-1}`, and names inside `$((X - 1))`."""
    names = _SHELL_VAR.findall(raw)
    for expression in _SHELL_ARITHMETIC.findall(raw):
        names += [name for name in _SHELL_NAME.findall(expression) if name not in names]
    return names


def _collect_options(index: _Index, resolver: _Resolver) -> dict[str, ArgOption]:
    options: dict[str, ArgOption] = {}
    for call in index.calls:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "add_argument":
            option = _option(call, resolver)
            if option is not None:
                options.setdefault(option.dest, option)
    for call in index.calls:  # parser.set_defaults(workers=8) overrides default=
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "set_defaults":
            for kw in call.keywords:
                if kw.arg in options:
                    default = resolver.resolve(kw.value)
                    options[kw.arg] = replace(options[kw.arg], default=default)
    return options


def _option(call: ast.Call, resolver: _Resolver) -> ArgOption | None:
    flags = tuple(text for arg in call.args if (text := _const_str(arg)) is not None)
    if not flags:
        return None
    dest = _const_str(_keyword(call, "dest")) or _dest(flags)
    default_node = _keyword(call, "default")
    type_node = _keyword(call, "type")
    action_node = _keyword(call, "action")
    action = _const_str(action_node) or (_last(dotted_name(action_node)) if action_node else None)
    return ArgOption(
        flags=flags,
        dest=dest,
        line=call.lineno,
        default=resolver.resolve(default_node) if default_node is not None else None,
        type_name=_last(dotted_name(type_node)) or None if type_node is not None else None,
        action=action or None,
    )


def _dest(flags: tuple[str, ...]) -> str:
    """argparse's rule: the first long option, else the first short one, dashes to underscores."""
    longs = [flag for flag in flags if flag.startswith("--")]
    chosen = longs[0] if longs else flags[0]
    return chosen.lstrip("-").replace("-", "_")


# --------------------------------------------------------------------------- DataLoaders


def _scan_loaders(index: _Index, resolver: _Resolver) -> list[DataLoaderScan]:
    loaders = []
    for call in index.calls:
        if _last(index.qual(call.func)) != "DataLoader":
            continue
        loaders.append(
            DataLoaderScan(
                line=call.lineno,
                end_line=call.end_lineno or call.lineno,
                name=_loader_name(index, call),
                function=index.function_name(call),
                params=resolver.loader_params(call),
            )
        )
    return loaders


def _loader_name(index: _Index, call: ast.Call) -> str | None:
    """The name a DataLoader is assigned to, or its key in a dict display."""
    node: ast.AST = call
    element: int | None = None
    parent = index.parents.get(node)
    while parent is not None and not isinstance(parent, ast.stmt):
        if isinstance(parent, ast.Dict):
            for key, value in zip(parent.keys, parent.values, strict=True):
                if value is node and (text := _const_str(key)) is not None:
                    return text
        if isinstance(parent, ast.Tuple):
            element = next((i for i, e in enumerate(parent.elts) if e is node), None)
        node, parent = parent, index.parents.get(parent)
    target: ast.expr | None = None
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
        target = parent.targets[0]
    elif isinstance(parent, ast.AnnAssign):
        target = parent.target
    if isinstance(target, ast.Tuple) and element is not None and element < len(target.elts):
        target = target.elts[element]
    return dotted_name(target) if target is not None else None


def _pick_train_loader(loaders: list[DataLoaderScan], loops: list[LoaderLoop]) -> int | None:
    """The training DataLoader: named train*, else iterated by a training loop, else the first
    that is not named val/test, else the first."""
    if not loaders:
        return None
    names = [_last(loader.name).lower() for loader in loaders]
    trained = {_last(loop.name).lower() for loop in loops if loop.training and loop.name}
    choices = (
        (i for i, name in enumerate(names) if "train" in name),
        (i for i, name in enumerate(names) if name and name in trained),
        (i for i, ld in enumerate(loaders) if "train" in (ld.function or "").lower()),
        (i for i, name in enumerate(names) if not _EVAL_NAME.search(name)),
    )
    for candidates in choices:
        found = next(candidates, None)
        if found is not None:
            return found
    return 0


# --------------------------------------------------------------------------- loops and syncs


def _scan_loops(index: _Index, loaders: list[DataLoaderScan]) -> dict[_Loop, LoaderLoop]:
    """Every `for ... in <DataLoader>` loop, keyed by its node."""
    loader_names = {_last(loader.name).lower() for loader in loaders if loader.name}
    loops: dict[_Loop, LoaderLoop] = {}
    nodes = [n for n in index.nodes if isinstance(n, ast.For | ast.AsyncFor)]
    for node in sorted(nodes, key=_pos):
        iterable = _unwrap_iterable(index, node.iter)
        name = _iterable_name(iterable)
        direct = isinstance(iterable, ast.Call) and _last(index.qual(iterable.func)) == "DataLoader"
        if not direct and not _looks_like_loader(_last(name).lower(), loader_names):
            continue
        training = _calls_backward(node.body) or "train" in (name or "").lower()
        loops[node] = LoaderLoop(node.lineno, index.text(node.iter), name, training)
    return loops


def _unwrap_iterable(index: _Index, node: ast.expr) -> ast.expr:
    """`enumerate(tqdm(loader))` -> `loader`; `pbar = tqdm(loader)`, `enumerate(pbar)` too."""
    for _ in range(_MAX_DEPTH):
        if (
            isinstance(node, ast.Call)
            and node.args
            and _last(index.qual(node.func)) in _LOOP_WRAPPERS
            and not isinstance(node.args[0], ast.Starred)
        ):
            node = node.args[0]
            continue
        name = dotted_name(node)
        bindings = index.lookup(name, node) if name is not None else []
        value = bindings[0].value if bindings else None
        if not isinstance(value, ast.Call) or _last(index.qual(value.func)) not in _LOOP_WRAPPERS:
            break
        node = value
    return node


def _iterable_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Subscript):  # dataloaders[phase]
        node = node.value
    if isinstance(node, ast.Call):  # self.train_dataloader(), get_loader(...)
        node = node.func
    return dotted_name(node)


def _looks_like_loader(name: str, loader_names: set[str]) -> bool:
    return bool(name) and (name in loader_names or _LOADER_NAME.fullmatch(name) is not None)


def _calls_backward(body: Sequence[ast.stmt]) -> bool:
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "backward"
        for node in _walk_body(body)
    )


def _sync_kind(index: _Index, call: ast.Call) -> str | None:
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr in _SYNC_METHODS and not call.args:
        return func.attr
    if func.attr == "to" and call.args and (_const_str(call.args[0]) or "").startswith("cpu"):
        return "to_cpu"
    qual = index.qual(func) or ""
    if qual.startswith("torch.") and qual.endswith(".synchronize"):
        return "synchronize"
    return None


def _scan_syncs(index: _Index, loops: Mapping[_Loop, LoaderLoop]) -> list[SyncSite]:
    kinds = {id(call): kind for call in index.calls if (kind := _sync_kind(index, call))}
    inner = _chained_syncs(index, kinds)
    names: dict[_Loop, set[str]] = {}
    sites = []
    for call in index.calls:
        kind = kinds.get(id(call))
        if id(call) in inner or (kind is None and not _is_print(index, call)):
            continue
        loop, guard = _step_context(index, call, loops)
        if kind is None:
            if loop is None or _has_sync(call, kinds):
                continue
            tensors = names.setdefault(loop, _tensor_names(index, loop))
            if not _prints_tensor(index, call, tensors):
                continue
            kind = "print"
        info = loops.get(loop) if loop is not None else None
        sites.append(
            SyncSite(
                line=call.lineno,
                kind=kind,
                text=index.text(call),
                loop_line=info.line if info else None,
                training=info.training if info else False,
                guard=guard,
            )
        )
    return sites


def _chained_syncs(index: _Index, kinds: Mapping[int, str]) -> set[int]:
    """`x.cpu().numpy()` is one sync: drop the calls that another sync call is made on."""
    inner: set[int] = set()
    for call in index.calls:
        if id(call) not in kinds:
            continue
        node: ast.AST = call.func
        while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
            if isinstance(node, ast.Call):
                if id(node) in kinds:
                    inner.add(id(node))
                node = node.func
            else:
                node = node.value
    return inner


def _step_context(
    index: _Index, node: ast.AST, loops: Mapping[_Loop, LoaderLoop]
) -> tuple[_Loop | None, str | None]:
    """The DataLoader loop whose body holds `node`, and the `if step % N == 0` guarding it."""
    guard: str | None = None
    child, parent = node, index.parents.get(node)
    while parent is not None and not isinstance(parent, _SCOPES):
        if (
            guard is None
            and isinstance(parent, ast.If)
            and _contains(parent.body, child)
            and _has_modulo(parent.test)
        ):
            guard = index.text(parent.test)
        if (
            isinstance(parent, ast.For | ast.AsyncFor)
            and parent in loops
            and _contains(parent.body, child)
        ):
            return parent, guard
        child, parent = parent, index.parents.get(parent)
    return None, None


def _has_modulo(test: ast.expr) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(test))


def _is_print(index: _Index, call: ast.Call) -> bool:
    return index.qual(call.func) == "print"


def _has_sync(call: ast.Call, kinds: Mapping[int, str]) -> bool:
    return any(id(node) in kinds for node in ast.walk(call) if node is not call)


def _tensor_names(index: _Index, loop: _Loop) -> set[str]:
    """Names in the loop that probably hold tensors: its batch and what is computed from it."""
    target = loop.target
    if (
        isinstance(loop.iter, ast.Call)
        and index.qual(loop.iter.func) == "enumerate"
        and isinstance(target, ast.Tuple)
        and len(target.elts) == 2
    ):
        target = target.elts[1]  # enumerate's index is an int
    names = _target_names(target)
    for node in _walk_body(loop.body):
        if isinstance(node, ast.Assign) and _tensor_valued(node.value, names):
            for sub in node.targets:
                names |= _target_names(sub)
    return names


def _target_names(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Tuple | ast.List):
        return set().union(*(_target_names(e) for e in node.elts))
    if isinstance(node, ast.Starred):
        return _target_names(node.value)
    return set()


def _tensor_valued(value: ast.expr, names: set[str]) -> bool:
    if isinstance(value, ast.Constant | ast.JoinedStr):
        return False
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Name) and func.id in _SCALAR_CALLS:
            return False
        return not (isinstance(func, ast.Attribute) and func.attr in ("item", "tolist"))
    if isinstance(value, ast.BinOp | ast.UnaryOp):
        return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(value))
    return True


def _prints_tensor(index: _Index, call: ast.Call, tensors: set[str]) -> bool:
    args = [*call.args, *(kw.value for kw in call.keywords if kw.arg not in _PRINT_OPTIONS)]
    for arg in args:
        for node in ast.walk(arg):
            if isinstance(node, ast.Name) and node.id in tensors and _printed(index, node):
                return True
    return False


def _printed(index: _Index, name: ast.Name) -> bool:
    """The tensor itself is formatted, not `x.shape` or `len(x)`."""
    parent = index.parents.get(name)
    if isinstance(parent, ast.Attribute):
        return False
    if isinstance(parent, ast.Call):
        if parent.func is name:
            return False
        return index.qual(parent.func) not in _NOT_PRINTED
    return True


# --------------------------------------------------------------------------- DDP


def _scan_ddp(index: _Index, resolver: _Resolver) -> DdpScan:
    groups: dict[str, list[ast.Call]] = {}
    for call in index.calls:
        func = call.func
        qual = index.qual(func) or (func.attr if isinstance(func, ast.Attribute) else "")
        group = _ddp_group(qual)
        if group is not None:
            groups.setdefault(group, []).append(call)
    inits = groups.get("init", [])
    spawns = groups.get("spawn", [])
    backend_node = _argument(inits[0], "backend", 0) if inits else None
    backend = resolver.resolve(backend_node).value if backend_node is not None else None
    env_reads = _env_reads(index)
    roles = _Roles(index, resolver, env_reads)
    return DdpScan(
        wrap_lines=_lines(groups.get("wrap", [])),
        init_lines=_lines(inits),
        backend=backend if isinstance(backend, str) else None,
        sampler_lines=_lines(groups.get("sampler", [])),
        set_epoch_lines=_lines(groups.get("set_epoch", [])),
        spawn_lines=_lines(spawns),
        world_size=roles.find(inits, "world_size", {"world_size"}, {"WORLD_SIZE", "SLURM_NTASKS"}),
        rank=roles.find(
            inits, "rank", {"rank", "global_rank", "world_rank"}, {"RANK", "SLURM_PROCID"}
        ),
        local_rank=roles.find([], "", {"local_rank"}, {"LOCAL_RANK", "SLURM_LOCALID"}),
        nprocs=roles.nprocs(spawns),
        env_reads=env_reads,
    )


def _ddp_group(qual: str) -> str | None:
    last = _last(qual)
    if last in ("DistributedDataParallel", "FullyShardedDataParallel", "DDP", "FSDP"):
        return "wrap"
    if last == "init_process_group":
        return "init"
    if last.endswith("DistributedSampler"):
        return "sampler"
    if last == "set_epoch":
        return "set_epoch"
    if qual.endswith("multiprocessing.spawn") or qual == "mp.spawn":
        return "spawn"
    return None


def _lines(calls: Sequence[ast.Call]) -> tuple[int, ...]:
    return tuple(call.lineno for call in calls)


def _env_reads(index: _Index) -> dict[str, tuple[int, ...]]:
    reads: dict[str, list[int]] = {}
    for name, node in index.env_nodes:
        reads.setdefault(name, []).append(node.lineno)
    return {name: tuple(lines) for name, lines in reads.items()}


class _Roles:
    """World size, ranks and process counts: from init_process_group, names, or env reads."""

    _VAGUE = (VARIABLE, UNKNOWN, CALL)

    def __init__(
        self, index: _Index, resolver: _Resolver, env_reads: Mapping[str, tuple[int, ...]]
    ) -> None:
        self.index = index
        self.resolver = resolver
        self.env_reads = env_reads

    def find(
        self, inits: list[ast.Call], keyword: str, names: set[str], env: set[str]
    ) -> Origin | None:
        fallback: Origin | None = None
        for call in inits:
            node = _keyword(call, keyword) if keyword else None
            if node is not None:
                origin = self.resolver.resolve(node)
                if origin.source not in self._VAGUE:
                    return origin
                fallback = fallback or origin
        return (
            self._from_names(names) or self._from_env(env) or self._from_options(names) or fallback
        )

    def nprocs(self, spawns: list[ast.Call]) -> Origin | None:
        for call in spawns:
            node = _argument(call, "nprocs", 2)
            if node is not None:
                return self.resolver.resolve(node)
        return self._from_names(set(_NPROC_NAMES)) or self._from_keywords(_NPROC_NAMES)

    def _from_names(self, names: set[str]) -> Origin | None:
        bindings = [
            binding
            for name, found in self.index.bindings.items()
            if _last(name).lower() in names
            for binding in found
        ]
        for binding in sorted(bindings, key=lambda b: b.end):
            origin = self.resolver.resolve(binding.value)
            if origin.source not in self._VAGUE:
                return origin
        return None

    def _from_env(self, env: set[str]) -> Origin | None:
        for name, node in self.index.env_nodes:
            if name in env:
                return self.resolver.resolve(node)
        return None

    def _from_options(self, names: set[str]) -> Origin | None:
        dests = sorted(names & set(self.resolver.options))
        if not dests:
            return None
        return self.resolver.argparse(self.resolver.options[dests[0]], f"args.{dests[0]}")

    def _from_keywords(self, names: frozenset[str]) -> Origin | None:
        for call in self.index.calls:
            for kw in call.keywords:
                if kw.arg in names:
                    origin = self.resolver.resolve(kw.value)
                    if origin.source not in self._VAGUE:
                        return origin
        return None


# --------------------------------------------------------------------------- AMP


def _scan_amp(index: _Index, resolver: _Resolver) -> AmpScan:
    uses = [*_deprecated_imports(index)]
    for call in index.calls:
        qual = index.qual(call.func) or ""
        last = _last(qual)
        if last not in ("autocast", "GradScaler"):
            continue
        deprecated = qual.startswith(_DEPRECATED_AMP)
        enabled_node = _keyword(call, "enabled")
        enabled = resolver.resolve(enabled_node).value if enabled_node is not None else None
        uses.append(
            AmpUse(
                line=call.lineno,
                name=qual,
                kind="autocast" if last == "autocast" else "grad_scaler",
                deprecated=deprecated,
                enabled=enabled if isinstance(enabled, bool) else None,
                dtype=_autocast_dtype(index, resolver, call, qual) if last == "autocast" else None,
            )
        )
    return AmpScan(uses=tuple(sorted(uses, key=lambda u: u.line)), dtype_lines=_dtype_lines(index))


def _deprecated_imports(index: _Index) -> Iterator[AmpUse]:
    for node in index.import_nodes:
        if isinstance(node, ast.ImportFrom):
            modules = [f"{node.module}.{alias.name}" for alias in node.names if node.module]
        else:
            modules = [alias.name for alias in node.names]
        for module in modules:
            if module.startswith(_DEPRECATED_AMP):
                yield AmpUse(node.lineno, module, "import", True)
                break


def _autocast_dtype(index: _Index, resolver: _Resolver, call: ast.Call, qual: str) -> str | None:
    deprecated = qual.startswith(_DEPRECATED_AMP)
    node = _keyword(call, "dtype")
    if node is None and not deprecated and len(call.args) > 1:
        node = call.args[1]  # torch.autocast(device_type, dtype, ...)
    if node is not None:
        target = resolver.follow(node)
        return _DTYPES.get(index.qual(target) or "") or _DTYPE_STRINGS.get(_const_str(target) or "")
    if deprecated:  # torch.cuda.amp.autocast defaults to fp16, torch.cpu.amp to bf16
        return "fp16" if qual.startswith("torch.cuda.") else "bf16"
    device = _argument(call, "device_type", 0)
    value = resolver.resolve(device).value if device is not None else None
    return {"cuda": "fp16", "cpu": "bf16"}.get(value) if isinstance(value, str) else None


def _dtype_lines(index: _Index) -> dict[str, tuple[int, ...]]:
    lines: dict[str, list[int]] = {}
    for node in index.nodes:
        if isinstance(node, ast.Attribute):
            dtype = _DTYPES.get(index.qual(node) or "")
            if dtype is not None:
                lines.setdefault(dtype, []).append(node.lineno)
    return {dtype: tuple(sorted(found)) for dtype, found in lines.items()}


# --------------------------------------------------------------------------- the rest


def _scan_misc(
    index: _Index, resolver: _Resolver
) -> tuple[Origin | None, Origin | None, Origin | None]:
    """cudnn.benchmark, torch.set_num_threads and OMP_NUM_THREADS: the last setting wins."""
    cudnn: Origin | None = None
    threads: Origin | None = None
    omp: Origin | None = None
    for target, value, _stmt in index.assigns:
        if index.qual(target) == "torch.backends.cudnn.benchmark":
            cudnn = resolver.resolve(value)
        elif _is_omp_item(index, target):
            omp = resolver.resolve(value)
    for call in index.calls:
        qual = index.qual(call.func) or ""
        if qual.startswith("torch") and qual.endswith(".set_num_threads") and call.args:
            threads = resolver.resolve(call.args[0])
        elif (
            qual in ("os.environ.setdefault", "os.putenv")
            and len(call.args) == 2
            and _const_str(call.args[0]) == "OMP_NUM_THREADS"
        ):
            omp = resolver.resolve(call.args[1])
    return cudnn, threads, omp


def _is_omp_item(index: _Index, target: ast.expr) -> bool:
    return (
        isinstance(target, ast.Subscript)
        and index.qual(target.value) == "os.environ"
        and _const_str(target.slice) == "OMP_NUM_THREADS"
    )


# --------------------------------------------------------------------------- facts


def _put(out: dict[str, object], name: str, value: object) -> None:
    """Set a fact when the value has the fact's type (numeric strings count as ints)."""
    kind = _FACT_TYPES[name]
    if kind == "int" and isinstance(value, str):
        value = _convert(value.strip(), int)  # OMP_NUM_THREADS="4"
    if kind == "bool" and _is_number(value) and value in (0, 1):
        value = bool(value)
    ok = {
        "int": isinstance(value, int) and not isinstance(value, bool),
        "bool": isinstance(value, bool),
        "str": isinstance(value, str) and value != "",
        "float": _is_number(value),
    }[kind]
    if ok:
        out[name] = value


def _origin_facts(out: dict[str, object], prefix: str, origin: Origin) -> None:
    """`prefix`, `prefix.source`, and whichever details the registry lists for `prefix`."""
    details: dict[str, object] = {
        "source": origin.source,
        "line": origin.line,
        "expr": origin.expr,
        "env": origin.env,
        "env_default": origin.env_default,
        "cpu_call": origin.cpu_call,
        "conditional": origin.conditional,
        "derived": origin.derived,
        "passed": origin.passed,
        "passed_source": origin.passed_origin.source if origin.passed_origin else None,
        "literal": origin.value if origin.source == LITERAL else None,
    }
    if origin.option is not None:
        details["option"] = origin.option.name
        details["default"] = _option_default(origin.option)
        default = origin.option.default
        details["default_source"] = default.source if default is not None else None
    for key, value in details.items():
        name = f"{prefix}.{key}"
        if name in _FACT_TYPES and value is not None:
            _put(out, name, value)
    if origin.value is not None and prefix in _FACT_TYPES:
        _put(out, prefix, origin.value)


def _loader_facts(out: dict[str, object], loader: DataLoaderScan | None) -> None:
    if loader is None:
        return
    _put(out, "script.dataloader.line", loader.line)
    if loader.name:
        _put(out, "script.dataloader.name", loader.name)
    for param in LOADER_PARAMS:
        _origin_facts(out, f"script.{param}", loader.params[param])
    sampler = loader.params["sampler"]
    if sampler.call:
        _put(out, "script.sampler", _last(sampler.call))


def _ddp_facts(out: dict[str, object], ddp: DdpScan, loader: DataLoaderScan | None) -> None:
    _put(out, "script.ddp", ddp.used)
    _put(out, "script.ddp.init", bool(ddp.init_lines))
    if ddp.wrap_lines or ddp.init_lines:
        _put(out, "script.ddp.line", min(ddp.wrap_lines + ddp.init_lines))
    if ddp.backend:
        _put(out, "script.ddp.backend", ddp.backend)
    _put(out, "script.ddp.set_epoch", bool(ddp.set_epoch_lines))
    _put(out, "script.ddp.spawn", bool(ddp.spawn_lines))
    _put(out, "script.ddp.slurm_env", ddp.reads_slurm_env)
    _put(out, "script.ddp.torchrun_env", ddp.reads_torchrun_env)
    sampler = loader.distributed_sampler if loader is not None else None
    if sampler is None and loader is not None and ddp.sampler_lines:
        sampler = True  # built, and passed some way the scan cannot follow: do not accuse
    if sampler is not None:
        _put(out, "script.ddp.distributed_sampler", sampler)
    for prefix, origin in (
        ("script.world_size", ddp.world_size),
        ("script.rank", ddp.rank),
        ("script.local_rank", ddp.local_rank),
        ("script.nprocs", ddp.nprocs),
    ):
        if origin is not None:
            _origin_facts(out, prefix, origin)


def _amp_facts(out: dict[str, object], amp: AmpScan) -> None:
    _put(out, "script.amp", amp.used)
    deprecated = amp.deprecated
    _put(out, "script.amp.deprecated", bool(deprecated))
    if deprecated:
        _put(out, "script.amp.deprecated.line", deprecated[0].line)
        _put(out, "script.amp.deprecated.count", len(deprecated))
    _put(out, "script.amp.grad_scaler", any(u.kind == "grad_scaler" for u in amp.uses))
    if amp.dtype:
        _put(out, "script.amp.dtype", amp.dtype)


def _sync_facts(out: dict[str, object], scan: ScriptScan) -> None:
    if not scan.loops:
        return  # no step loop found: "no syncs" would be a guess
    _put(out, "script.loader_loops", len(scan.loops))
    syncs = scan.step_syncs
    unguarded = [s for s in syncs if s.guard is None]
    _put(out, "script.sync_in_loop.count", len(syncs))
    _put(out, "script.sync_in_loop.unguarded", len(unguarded))
    _put(out, "script.sync_in_loop.guarded", len(syncs) - len(unguarded))
    if syncs:
        _put(out, "script.sync_in_loop.line", (unguarded or list(syncs))[0].line)
        _put(out, "script.sync_in_loop.kinds", ",".join(sorted({s.kind for s in syncs})))


def _misc_facts(out: dict[str, object], scan: ScriptScan) -> None:
    if scan.cudnn_benchmark is not None and scan.cudnn_benchmark.value is not None:
        _put(out, "script.cudnn_benchmark", scan.cudnn_benchmark.value)
    if scan.torch_threads is not None:
        _origin_facts(out, "script.torch_threads", scan.torch_threads)
    if scan.omp_num_threads is not None:
        _origin_facts(out, "script.omp_num_threads", scan.omp_num_threads)
