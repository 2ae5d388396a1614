"""Line kinds from the training script's AST.

``classify_source(text)`` maps the lines of each statement to what the statement does in a
training step. It reads one file, never imports or runs it, and guesses from names and from
what names are bound to in that file. The heuristics, concretely:

Roles of names (``roles``; what names mean by themselves is in ``names``). Before
classifying, one pass over the shared scope index (``scopes``) records every binding (``=``,
``+=``, annotated assignments, ``for`` targets, comprehension targets, ``:=``, function
parameters with their annotations) with its scope: plain names are scoped to their function
(looked up through enclosing functions, then the module), attribute chains such as
``self.train_loader`` are file-wide. Roles then flow through the bindings until nothing
changes (a few rounds):

- DataLoader: bound from a call whose callee name ends in ``loader``/``loaders`` (``DataLoader``,
  ``torch.utils.data.DataLoader``, ``get_loader``, ``fabric.setup_dataloaders``), from
  ``enumerate``/``zip``/``iter``/``tqdm``/``cycle``/``islice``/``chain``/``track`` over a
  DataLoader, annotated ``DataLoader``; or *named* like one: ``*loader``, ``*loaders``,
  ``*prefetcher``, ``dl``, ``*_dl``, each optionally followed by a letter, a number or a split
  (``loader_a``, ``loader2``, ``dl_val``, ``loader_train``, ``loader_training``,
  ``loader_src``); a name that merely contains "loader", such as ``loader_kwargs``, is not
  one. The script scan reads loader names the same way (both ask ``names``). ``next()``
  also accepts iterator names (``it``, ``data_iter``, ``*_iterator``) since a training loop
  rarely ``next()``-s anything else.
- model: bound from ``X()`` for an ``nn.Module`` subclass defined in the file (through
  subclasses of subclasses), ``DDP``/``DistributedDataParallel``/``DataParallel``/``FSDP``,
  ``torch.compile``, ``models.resnet18()``/``torchvision.models.*``, ``timm.create_model``,
  ``*Model*.from_pretrained``, a factory named a verb then a model (``build_model(cfg)``,
  ``get_net()``); ``.to()``/``.cuda()``/``.train()``/... on a model is a model, and so is
  ``model.module``; or *named* ``model``, ``net``, ``network``, ``*_model``, ``*model``,
  ``*net``, ``netG``, ``model_engine`` unless the name is a function or class defined in the
  file or starts with a verb (``build_model``, ``unwrap_model``). Layers are not models:
  ``self.conv1(x)`` inside a ``forward()`` stays "other".
- loss function: ``nn.CrossEntropyLoss()``-like constructors (capitalised, ending ``Loss``),
  or named ``criterion``, ``*criterion*``, ``loss_fn``, ``loss_func``, ``loss_function``.
- optimizer/scheduler: constructors under ``optim``, ``SGD``/``Adam``/..., ``*LR`` schedulers,
  ``get_*schedule*``; or named ``optimizer*``, ``opt``, ``opt_*``, ``*_opt``, ``*sched*``.
  GradScaler: ``GradScaler(...)`` (``torch.cuda.amp``, ``torch.amp``) or named ``*scaler``.
- tensor: anything bound from a forward, a loss, a transfer, a batch from a DataLoader (the
  index of ``enumerate`` excepted), ``torch.*``/``F.*`` calls, arithmetic, indexing or
  tensor methods on tensors (``.shape``, ``.size()``, ``.item()`` and the like are not).
- ``model, opt, dl = accelerator.prepare(model, opt, dl)`` (also ``setup``, ``initialize``)
  passes each argument's role to its target.

Kinds of statements, from the calls and expressions in them:

- ``dataloader``: a ``for`` (or comprehension) over a DataLoader; ``next()`` on one or on an
  iterator of one (``next(it)``, ``next(iter(loader))``, ``it.next()``); ``iter(loader)``
  (starting workers costs time); ``list(loader)``.
- ``transfer``: ``.to(...)`` (not to ``"cpu"``, not dtype-only), ``.cuda()``,
  ``.pin_memory()``, ``send_to_device``/``to_device``, ``torch.tensor(..., device=d)``.
  ``model.to(device)`` counts too: it moves the weights.
- ``forward``: calling a model, ``model.forward(...)``, ``model.generate(...)``.
- ``loss``: calling a loss function, ``F.cross_entropy``/``F.*_loss``/``kl_div``, any
  lower-case call whose name contains ``loss`` or ``criterion`` (not ``plot_loss``-like
  verbs), ``nn.CrossEntropyLoss()(out, y)``.
- ``backward``: ``.backward(...)`` on anything (``loss.backward()``,
  ``scaler.scale(loss).backward()``, ``accelerator.backward(loss)``), ``manual_backward``,
  ``torch.autograd.grad``.
- ``optimizer``: ``.step()`` on an optimizer, scheduler, GradScaler or DeepSpeed engine;
  ``.zero_grad()`` on anything; ``scaler.update()``, ``scaler.unscale_()``;
  ``clip_grad_norm_``/``clip_grad_value_`` (part of the update).
- ``sync`` (the host waits for the GPU): ``.item()``, ``.cpu()``, ``.numpy()``, ``.tolist()``,
  ``.to("cpu")``, ``*.synchronize()``, ``dist.barrier()`` and ``accelerator.wait_for_everyone()``
  (they wait for every rank, and with NCCL for the GPU), ``torch.cuda.empty_cache()`` (its
  ``cudaFree`` synchronises the device); a tensor read on the host: printed or logged
  (``print``, ``logger.info``, ``writer.add_scalar``, ``pbar.set_postfix``, ``wandb.log``;
  not Lightning's ``self.log``, which keeps tensors on the device), formatted (f-string,
  ``str.format``, ``%``), converted (``float``, ``int``, ``bool``, ``str``), or used as an
  ``if``/``while``/``assert`` condition. Collectives such as ``dist.all_reduce`` are *not*
  sync: with NCCL they are queued on the GPU stream and return at once; their cost shows at the
  next sync point.

Precedence, when one statement (or one physical line holding several) matches several kinds,
highest first, chosen for where the line's measured time most likely goes:

1. ``dataloader``: waiting for a batch is host time the GPU cannot hide and the evidence behind
   "dataloader-bound"; sync-looking calls on a fresh batch act on CPU tensors and do not wait.
2. ``sync``: the line's time is mostly waiting for queued GPU work, whatever else it does;
   only a sync line gets the "absorbs earlier GPU time" note, so it must not hide as "loss".
3. ``backward``: costs about twice the forward it may share the line with.
4. ``optimizer``: the update touches every parameter; it rarely shares a statement anyway.
5. ``forward``: in ``loss = criterion(model(x), y)`` the model is the cost, not the loss.
6. ``loss``: still more than moving its labels (``criterion(out, y.to(device))``).
7. ``transfer``.

Limits: names are matched, not types inferred; code in other files is unknown (a model built by
an imported helper is recognised by its name or the helper's); devices are unknown, so
``.cpu()`` on a tensor already on the CPU is still "sync"; ``scaler.step()`` is "optimizer"
although it reads a flag from the GPU; a file that does not parse (syntax error, null bytes,
Python 2, expressions too deep for the parser) classifies nothing rather than guessing from
fragments. Compound
statements give their kind to their header lines only (``for ... in ...:``, ``with ...:``,
``if ...:``); bodies are classified statement by statement. Comments and blank lines are left
out.
"""

from __future__ import annotations

import ast
from enum import StrEnum

from tuneadvisor.records import record
from tuneadvisor.trainscript.names import is_loss_call_name
from tuneadvisor.trainscript.parsed import (
    CHUNKED_FROM_CHARS,
    GROUP_LINES,
    ParsedScript,
    gc_paused,
    parse_script,
    top_level_groups,
)
from tuneadvisor.trainscript.pyast import dotted_name, final_name
from tuneadvisor.trainscript.roles import (
    LOADER,
    LOADER_CONSUMERS,
    LOSS_FN,
    MAX_DEPTH,
    MODEL,
    OPTIM,
    SCALER,
    TENSOR,
    Roles,
    StreamedRoles,
)
from tuneadvisor.trainscript.scopes import SIMPLE_STATEMENTS, Statements, header_exprs


class LineKind(StrEnum):
    DATALOADER = "dataloader"
    TRANSFER = "transfer"
    FORWARD = "forward"
    LOSS = "loss"
    BACKWARD = "backward"
    OPTIMIZER = "optimizer"
    SYNC = "sync"
    OTHER = "other"


# Highest first; see the module docstring for why.
PRECEDENCE: tuple[LineKind, ...] = (
    LineKind.DATALOADER,
    LineKind.SYNC,
    LineKind.BACKWARD,
    LineKind.OPTIMIZER,
    LineKind.FORWARD,
    LineKind.LOSS,
    LineKind.TRANSFER,
)
_RANK: dict[LineKind, int] = {kind: rank for rank, kind in enumerate(PRECEDENCE)}
_NO_RANK = len(PRECEDENCE)  # "other"


@record
class SourceInfo:
    """What one parse of a file tells: line kinds, and where each function ends."""

    kinds: dict[int, LineKind]
    # first line of a def (its first decorator, as co_firstlineno counts, and the `def`
    # line itself) -> the def's last line
    function_ends: dict[int, int]


def classify_source(source: str | ParsedScript) -> dict[int, LineKind]:
    """Map every line number of ``source`` that belongs to a classified statement to its kind.

    Lines of a multi-line statement all get the statement's kind. Lines not returned are
    "other". Never raises on bad source: a file that does not parse classifies nothing.
    """
    return analyze_source(source).kinds


def analyze_source(source: str | ParsedScript) -> SourceInfo:
    """Kinds and function extents from one parse (never raises; bad source gives nothing).

    Give a ``ParsedScript`` to share its parse and scope index with the script scan.
    """
    parsed = parse_script(source) if isinstance(source, str) else source
    if not parsed.is_parsed and len(parsed.text) >= CHUNKED_FROM_CHARS:
        with gc_paused():
            streamed = _streamed(parsed)
        if streamed is not None:
            return streamed
    if parsed.tree is None:
        return SourceInfo({}, {})
    with gc_paused():
        try:
            statements = parsed.scopes.statements
            roles = Roles(statements)
            kinds = _classify(statements, roles, parsed)
        except RecursionError:  # absurdly nested code: better nothing than a crash
            return SourceInfo({}, {})
        return SourceInfo(kinds, _function_ends(statements))


def _streamed(parsed: ParsedScript, group_lines: int = GROUP_LINES) -> SourceInfo | None:
    """The same answer for a large file, a group of top-level statements at a time, each
    group's tree dropped before the next is parsed (the whole tree of a 2.2 MB file is ~170
    MiB). None where it could differ (``StreamedRoles`` says when) or a group does not parse
    alone: the caller reads the whole file then."""
    statements = Statements()
    roles = StreamedRoles(statements)
    kinds: dict[int, LineKind] = {}
    ends: dict[int, int] = {}
    try:
        for group in top_level_groups(parsed.text, group_lines):
            statements.drop_statements()
            statements.add(group)
            del group
            roles.add_group()
            if roles.stale:
                return None
            kinds.update(_classify(statements, roles, parsed))  # groups share no line
            ends.update(_function_ends(statements))
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError):
        return None
    return None if roles.stale else SourceInfo(kinds, ends)


def _function_ends(statements: Statements) -> dict[int, int]:
    ends: dict[int, int] = {}
    for stmt, _scope in statements.items:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.end_lineno:
            for first in (stmt.lineno, *(d.lineno for d in stmt.decorator_list[:1])):
                ends[first] = stmt.end_lineno
    return ends


# --- kinds of statements ------------------------------------------------------------------

_SYNC_METHODS = frozenset({"item", "cpu", "numpy", "tolist"})
_SYNC_CALLS = frozenset(
    {"synchronize", "barrier", "monitored_barrier", "wait_for_everyone", "empty_cache"}
)
_CLIP_CALLS = frozenset({"clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"})
_TRANSFER_CALLS = frozenset({"to_device", "send_to_device", "move_to_device"})
_HOST_READ_FUNCS = frozenset({"print", "str", "repr", "float", "int", "bool", "format"})
_HOST_READ_METHODS = frozenset(
    {
        "print",
        "write",
        "format",
        "debug",
        "info",
        "warning",
        "error",
        "critical",
        "exception",
        "log",
        "log_metric",
        "log_metrics",
        "add_scalar",
        "add_scalars",
        "set_postfix",
        "set_description",
    }
)
_DTYPES = frozenset(
    {
        "float",
        "float16",
        "half",
        "bfloat16",
        "float32",
        "float64",
        "double",
        "int",
        "int8",
        "int16",
        "int32",
        "int64",
        "long",
        "uint8",
        "bool",
        "complex64",
        "complex128",
        "cfloat",
        "channels_last",
    }
)


def _classify(statements: Statements, roles: Roles, source: ParsedScript) -> dict[int, LineKind]:
    best: dict[int, int] = {}
    for (stmt, scope), nodes in zip(statements.items, statements.nodes, strict=True):
        if not nodes and type(stmt) in SIMPLE_STATEMENTS and type(stmt) is not ast.Assert:
            continue  # nothing to classify (``x = y * 2``); an assert's test may be a tensor
        rank = _statement_rank(stmt, scope, nodes, roles)
        if rank == _NO_RANK:
            continue
        header = header_exprs(stmt)
        end = stmt.end_lineno or stmt.lineno
        if header is not None:
            end = _header_end(stmt, header, source)
        for lineno in range(stmt.lineno, end + 1):
            if best.get(lineno, _NO_RANK) > rank:
                best[lineno] = rank
    return {lineno: PRECEDENCE[rank] for lineno, rank in best.items()}


def _statement_rank(stmt: ast.stmt, scope: int, nodes: list[ast.AST], roles: Roles) -> int:
    rank = _NO_RANK
    if isinstance(stmt, (ast.For, ast.AsyncFor)) and roles.of(stmt.iter, scope) & LOADER:
        return _RANK[LineKind.DATALOADER]
    if isinstance(stmt, (ast.If, ast.While, ast.Assert)) and roles.of(stmt.test, scope) & TENSOR:
        rank = _RANK[LineKind.SYNC]  # ``if loss < best:`` reads the tensor on the host
    for node in nodes:
        kind = _node_kind(node, scope, roles)
        if kind is not None and _RANK[kind] < rank:
            rank = _RANK[kind]
            if rank == 0:
                break
    return rank


def _node_kind(node: ast.AST, scope: int, roles: Roles) -> LineKind | None:
    if isinstance(node, ast.Call):
        return _call_kind(node, scope, roles)
    if isinstance(node, ast.FormattedValue):
        return LineKind.SYNC if roles.of(node.value, scope) & TENSOR else None
    if isinstance(node, ast.comprehension):
        return LineKind.DATALOADER if roles.of(node.iter, scope) & LOADER else None
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod)
        and isinstance(node.left, (ast.Constant, ast.JoinedStr))
        and _reads_tensor(node.right, scope, roles)
    ):
        return LineKind.SYNC  # "%.3f" % loss
    return None


def _call_kind(call: ast.Call, scope: int, roles: Roles) -> LineKind | None:
    func = call.func
    kind: LineKind | None = None
    if isinstance(func, ast.Attribute):
        kind = _method_kind(call, func, scope, roles)
    elif isinstance(func, ast.Name):
        kind = _function_kind(call, func.id, scope, roles)
    if kind is not None:
        return kind
    name = final_name(func)
    if name in _SYNC_CALLS:
        return LineKind.SYNC
    if name in _CLIP_CALLS:
        return LineKind.OPTIMIZER
    if name in _TRANSFER_CALLS:
        return LineKind.TRANSFER
    if name == "grad" and (dotted_name(func) or "").endswith("autograd.grad"):
        return LineKind.BACKWARD
    callee = roles.of(func, scope)
    if callee & MODEL:
        return LineKind.FORWARD
    if callee & LOSS_FN or (name is not None and is_loss_call_name(name)):
        return LineKind.LOSS
    if name in ("tensor", "as_tensor") and _device_keyword(call) is not None:
        return _to_kind(call)
    return None


def _method_kind(call: ast.Call, func: ast.Attribute, scope: int, roles: Roles) -> LineKind | None:
    attr = func.attr
    if attr in ("backward", "manual_backward"):
        return LineKind.BACKWARD
    if attr == "zero_grad":
        return LineKind.OPTIMIZER
    if attr in _SYNC_METHODS:
        return LineKind.SYNC
    if attr == "to":
        return _to_kind(call)
    if attr in ("cuda", "pin_memory"):
        return LineKind.TRANSFER
    base = roles.of(func.value, scope)
    if attr == "step" and base & (OPTIM | SCALER | MODEL):
        return LineKind.OPTIMIZER
    if attr in ("update", "unscale_") and base & SCALER:
        return LineKind.OPTIMIZER
    if attr in ("next", "__next__") and base & LOADER:
        return LineKind.DATALOADER
    if attr in ("forward", "generate") and base & MODEL:
        return LineKind.FORWARD
    if (
        attr in _HOST_READ_METHODS
        and _host_read_applies(func)
        and _args_read_tensor(call, scope, roles)
    ):
        return LineKind.SYNC
    return None


def _host_read_applies(func: ast.Attribute) -> bool:
    # Lightning's ``self.log(...)`` keeps tensors on the device and reduces them later.
    on_self = isinstance(func.value, ast.Name) and func.value.id == "self"
    return not (on_self and func.attr.startswith("log"))


def _function_kind(call: ast.Call, name: str, scope: int, roles: Roles) -> LineKind | None:
    if (name == "iter" or name in LOADER_CONSUMERS) and roles.starts_dataloader(call, scope):
        return LineKind.DATALOADER
    if name in _HOST_READ_FUNCS and _args_read_tensor(call, scope, roles):
        return LineKind.SYNC
    return None


def _device_keyword(call: ast.Call) -> ast.expr | None:
    return next((kw.value for kw in call.keywords if kw.arg == "device"), None)


def _to_kind(call: ast.Call) -> LineKind | None:
    """``.to(device)`` is a transfer, ``.to("cpu")`` waits, ``.to(torch.float16)`` is a cast."""
    device = _device_keyword(call)
    targets = [device] if device is not None else list(call.args)
    if not targets:
        return None
    if any(_is_cpu(t) for t in targets):
        return LineKind.SYNC
    if device is None and all(_is_dtype(t) for t in targets):
        return None
    return LineKind.TRANSFER


def _is_cpu(expr: ast.expr) -> bool:
    if isinstance(expr, ast.Constant):
        return expr.value == "cpu"
    if isinstance(expr, ast.Call) and final_name(expr.func) == "device" and expr.args:
        return _is_cpu(expr.args[0])
    return False


def _is_dtype(expr: ast.expr) -> bool:
    if isinstance(expr, ast.Attribute):
        return expr.attr in _DTYPES and dotted_name(expr.value) == "torch"
    return isinstance(expr, ast.Name) and expr.id in ("dtype", "memory_format")


def _args_read_tensor(call: ast.Call, scope: int, roles: Roles) -> bool:
    args = [*call.args, *(kw.value for kw in call.keywords)]
    return any(_reads_tensor(arg, scope, roles) for arg in args)


def _reads_tensor(expr: ast.expr, scope: int, roles: Roles, depth: int = 0) -> bool:
    """A tensor value, or a tuple/list/dict/f-string holding one (not ``f(x)``, ``x.shape``)."""
    if depth > MAX_DEPTH:
        return False
    if roles.of(expr, scope) & TENSOR:
        return True
    parts: list[ast.expr | None]
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        parts = list(expr.elts)
    elif isinstance(expr, ast.Dict):
        parts = list(expr.values)
    elif isinstance(expr, ast.JoinedStr):
        parts = [v.value for v in expr.values if isinstance(v, ast.FormattedValue)]
    else:
        return False
    return any(p is not None and _reads_tensor(p, scope, roles, depth + 1) for p in parts)


def _body_start(stmt: ast.stmt, default: int) -> int:
    if isinstance(stmt, ast.Match):
        return stmt.cases[0].pattern.lineno if stmt.cases else default
    body = getattr(stmt, "body", None)
    return body[0].lineno if isinstance(body, list) and body else default


def _header_end(stmt: ast.stmt, header: list[ast.expr], source: ParsedScript) -> int:
    """Last line of a compound statement's header: where its ``:`` is."""
    if not header:
        return stmt.lineno
    last = max(header, key=lambda e: (e.end_lineno or 0, e.end_col_offset or 0))
    lineno = last.end_lineno or stmt.lineno
    col = last.end_col_offset or 0
    limit = _body_start(stmt, lineno)
    # Only closing brackets, commas, comments and line continuations sit before the colon.
    while lineno <= limit:
        line = source.line(lineno)
        for char in line[col:]:
            if char == ord(":"):
                return lineno
            if char == ord("#"):
                break
            if char not in b" \t\f),]\\":
                return lineno
        lineno += 1
        col = 0
    return max(stmt.lineno, limit - 1)
