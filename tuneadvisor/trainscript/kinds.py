"""Line kinds from the training script's AST.

``classify_source(text)`` maps the lines of each statement to what the statement does in a
training step. It reads one file, never imports or runs it, and guesses from names and from
what names are bound to in that file. The heuristics, concretely:

Roles of names. Before classifying, one pass records every binding (``=``, ``+=``, annotated
assignments, ``for`` targets, comprehension targets, ``:=``, function parameters with their
annotations) with its scope: plain names are scoped to their function (looked up through
enclosing functions, then the module), attribute chains such as ``self.train_loader`` are
file-wide. Roles then flow through the bindings until nothing changes (a few rounds):

- DataLoader: bound from a call whose callee name ends in ``loader``/``loaders`` (``DataLoader``,
  ``torch.utils.data.DataLoader``, ``get_loader``, ``fabric.setup_dataloaders``), from
  ``enumerate``/``zip``/``iter``/``tqdm``/``cycle``/``islice``/``chain``/``track`` over a
  DataLoader, annotated ``DataLoader``; or *named* like one: ``*loader``, ``*loaders``,
  ``*prefetcher``, ``dl``, ``*_dl``, each optionally followed by a letter, a number or a split
  (``loader_a``, ``loader2``, ``dl_val``, ``loader_train``); a name that merely contains
  "loader", such as ``loader_kwargs``, is not one. ``next()`` also accepts iterator names (``it``,
  ``data_iter``, ``*_iterator``) since a training loop rarely ``next()``-s anything else.
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
import gc
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum

from tuneadvisor.trainscript.pyast import dotted_name


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


@dataclass(frozen=True)
class SourceInfo:
    """What one parse of a file tells: line kinds, and where each function ends."""

    kinds: dict[int, LineKind]
    # first line of a def (its first decorator, as co_firstlineno counts, and the `def`
    # line itself) -> the def's last line
    function_ends: dict[int, int]


def classify_source(text: str) -> dict[int, LineKind]:
    """Map every line number of ``text`` that belongs to a classified statement to its kind.

    Lines of a multi-line statement all get the statement's kind. Lines not returned are
    "other". Never raises on bad source: a file that does not parse classifies nothing.
    """
    return analyze_source(text).kinds


def analyze_source(text: str) -> SourceInfo:
    """Kinds and function extents from one parse (never raises; bad source gives nothing)."""
    text = text.lstrip("\ufeff")  # a BOM read as text: Python skips it, ast.parse does not
    with _gc_paused():
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError):
            return SourceInfo({}, {})
        try:
            statements = _Statements(tree)
            roles = _Roles(statements)
            kinds = _classify(statements, roles, _SourceLines(text))
        except RecursionError:  # absurdly nested code: better nothing than a crash
            return SourceInfo({}, {})
        return SourceInfo(kinds, _function_ends(statements))


def _function_ends(statements: _Statements) -> dict[int, int]:
    ends: dict[int, int] = {}
    for stmt, _scope in statements.items:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.end_lineno:
            for first in (stmt.lineno, *(d.lineno for d in stmt.decorator_list[:1])):
                ends[first] = stmt.end_lineno
    return ends


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The collector's passes over a big, acyclic AST cost as much as parsing it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# --- roles of names ---------------------------------------------------------------------

# Bit flags: cheaper than sets, and a name can hold several (a loop target may be both).
_MODEL = 1
_LOADER = 2
_LOSS_FN = 4
_OPTIM = 8
_SCALER = 16
_TENSOR = 32
_CALLABLE = 64  # a def or class of this file: never a model by its name
_MAX_DEPTH = 40  # expression nesting followed; deeper parts count as unknown

_LOADER_NAME = re.compile(
    r"(?:loaders?|prefetcher|(?:^|_)dls?)"
    r"(?:_?(?:[a-z]|\d+|train|val|valid|test|eval|src|tgt|source|target|un)?(?:labell?ed)?)?$",
    re.IGNORECASE,
)
_ITER_NAME = re.compile(r"(?:^|_)(?:data_?)?(?:it|iter|iterator)$", re.IGNORECASE)
_MODEL_NAME = re.compile(
    r"^(?:[a-z0-9]*_)*(?:model|net|network)(?:_?[A-Z0-9][A-Za-z0-9]*)?$"
    r"|^[a-z0-9]*(?:model|net)$|^model_engine$"
)
_VERB_PREFIX = re.compile(
    r"^(?:build|create|get|load|make|init|initialize|save|setup|prepare|wrap|unwrap|freeze|"
    r"train|eval|evaluate|test|validate|export|print|log|compile|copy|run|summarize|count|"
    r"fit|define|construct|plot|show|record|update|write|track|report|append|reset|add)_",
    re.IGNORECASE,
)
_LOSS_FN_NAME = re.compile(r"criterion|^loss_?f(?:n|unc|unction)$|_loss_?fn$", re.IGNORECASE)
_OPTIM_NAME = re.compile(r"optimi[sz]er|sched", re.IGNORECASE)
_OPT_SHORT_NAME = re.compile(r"^opt(?:$|_|[A-Z0-9])|_opt$|^optim$")
_SCALER_NAME = re.compile(r"scaler$", re.IGNORECASE)

_LOADER_WRAPPERS = frozenset(
    {"enumerate", "zip", "iter", "tqdm", "cycle", "islice", "chain", "from_iterable", "track"}
)
_MODULE_BASES = frozenset({"Module", "LightningModule", "PreTrainedModel"})
_MODEL_WRAPPERS = frozenset(
    {
        "DDP",
        "DistributedDataParallel",
        "DataParallel",
        "FSDP",
        "FullyShardedDataParallel",
        "create_model",
    }
)
# Methods of a module (or tensor, or loss function) that return the same kind of thing.
_SAME_ROLE_METHODS = frozenset(
    {
        "to",
        "cuda",
        "cpu",
        "half",
        "float",
        "double",
        "bfloat16",
        "train",
        "eval",
        "requires_grad_",
        "to_empty",
        "share_memory",
        "contiguous",
        "detach",
    }
)
_OPTIMIZER_CLASSES = frozenset(
    {
        "SGD",
        "Adam",
        "AdamW",
        "Adadelta",
        "Adagrad",
        "Adamax",
        "ASGD",
        "LBFGS",
        "NAdam",
        "RAdam",
        "RMSprop",
        "Rprop",
        "SparseAdam",
        "Lion",
        "LAMB",
        "Lamb",
        "Adafactor",
        "FusedAdam",
        "FusedLAMB",
    }
)
_NON_TENSOR_ATTRS = frozenset(
    {"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "layout", "is_leaf"}
)
_NON_TENSOR_METHODS = frozenset(
    {
        "size",
        "dim",
        "numel",
        "nelement",
        "element_size",
        "item",
        "tolist",
        "stride",
        "is_contiguous",
        "data_ptr",
        "get_device",
        "keys",
        "type",
        "backward",
        "register_hook",
    }
)
_TORCH_FUNCTION_MODULES = frozenset({"torch", "F", "torch.nn.functional", "functional"})
_TORCH_NON_TENSOR = frozenset(
    {
        "device",
        "dtype",
        "manual_seed",
        "seed",
        "no_grad",
        "enable_grad",
        "inference_mode",
        "set_grad_enabled",
        "autocast",
        "is_tensor",
        "is_floating_point",
        "numel",
        "save",
        "load",
        "set_num_threads",
        "get_num_threads",
        "set_default_dtype",
        "get_default_dtype",
        "set_float32_matmul_precision",
        "use_deterministic_algorithms",
        "finfo",
        "iinfo",
    }
)
_FUNCTIONAL_LOSSES = frozenset(
    {"cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div"}
)
# ``next(loader_iter)`` and ``list(loader)`` give batches; the wrappers give iterables of them.
_LOADER_CONSUMERS = frozenset({"next", "list", "tuple"})


def _final_name(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


def _is_tensor_function(func: ast.expr) -> bool:
    """``torch.cat``, ``F.softmax``: functions that return tensors (not ``torch.device``)."""
    if not isinstance(func, ast.Attribute) or func.attr in _TORCH_NON_TENSOR:
        return False
    return func.attr[:1].islower() and dotted_name(func.value) in _TORCH_FUNCTION_MODULES


def _is_model_factory(name: str) -> bool:
    """``build_model``, ``get_model``, ``load_model``: a verb, then a model name."""
    verb = _VERB_PREFIX.match(name)
    return verb is not None and bool(_MODEL_NAME.match(name[verb.end() :]))


def _is_model_name(name: str) -> bool:
    return bool(_MODEL_NAME.match(name)) and not _VERB_PREFIX.match(name)


def _is_loss_call_name(name: str) -> bool:
    """A lower-case callee that computes a loss: ``criterion``, ``F.nll_loss``, ``loss_fn``."""
    if not name or name[0].isupper() or _VERB_PREFIX.match(name):
        return False
    lower = name.lower()
    return "loss" in lower or "criterion" in lower or lower in _FUNCTIONAL_LOSSES


def _pattern_roles(name: str) -> int:
    """Roles a name suggests by itself (``train_loader``, ``model``, ``criterion``, ...)."""
    roles = 0
    if _LOADER_NAME.search(name):
        roles |= _LOADER
    if _is_model_name(name):
        roles |= _MODEL
    if _LOSS_FN_NAME.search(name):
        roles |= _LOSS_FN
    if _OPTIM_NAME.search(name) or _OPT_SHORT_NAME.search(name):
        roles |= _OPTIM
    if _SCALER_NAME.search(name):
        roles |= _SCALER
    return roles


class _Statements:
    """Every statement of a module, each with the scope its plain names live in."""

    def __init__(self, tree: ast.Module) -> None:
        self.items: list[tuple[ast.stmt, int]] = []
        self.nodes: list[list[ast.AST]] = []  # per item: what _statement_nodes found
        self.parent: list[int] = []  # scope -> scope names are looked up in next (-1: none)
        self.is_class: list[bool] = []
        self.function_scope: dict[int, int] = {}  # id(def node) -> its scope
        # Source order, so that most bindings flow in the first round.
        module = self._new_scope(-1, False)
        stack: list[tuple[Iterator[ast.stmt], int]] = [(iter(tree.body), module)]
        while stack:
            statements, scope = stack[-1]
            stmt = next(statements, None)
            if stmt is None:
                stack.pop()
                continue
            self.items.append((stmt, scope))
            self.nodes.append(_statement_nodes(stmt))
            children = [(iter(body), inner) for body, inner in self._children(stmt, scope)]
            stack.extend(reversed(children))

    def _new_scope(self, enclosing: int, is_class: bool) -> int:
        parent = enclosing
        if not is_class:  # a function sees its enclosing function's names, not a class body's
            while parent >= 0 and self.is_class[parent]:
                parent = self.parent[parent]
        self.parent.append(parent)
        self.is_class.append(is_class)
        return len(self.parent) - 1

    def _children(self, stmt: ast.stmt, scope: int) -> Iterator[tuple[Sequence[ast.stmt], int]]:
        """The statement lists nested in ``stmt``, each with its scope."""
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = self._new_scope(scope, False)
            self.function_scope[id(stmt)] = inner
            yield stmt.body, inner
            return
        if isinstance(stmt, ast.ClassDef):
            yield stmt.body, self._new_scope(scope, True)
            return
        for field in ("body", "orelse", "finalbody"):
            value = getattr(stmt, field, None)
            if isinstance(value, list) and value:
                yield value, scope
        for handler in getattr(stmt, "handlers", ()):
            yield handler.body, scope
        for case in getattr(stmt, "cases", ()):
            yield case.body, scope


def _header_exprs(stmt: ast.stmt) -> list[ast.expr] | None:
    """The expressions of a compound statement's header; None for a simple statement."""
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.target, stmt.iter]
    if isinstance(stmt, (ast.While, ast.If)):
        return [stmt.test]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        exprs: list[ast.expr] = []
        for item in stmt.items:
            exprs.append(item.context_expr)
            if item.optional_vars is not None:
                exprs.append(item.optional_vars)
        return exprs
    if isinstance(stmt, ast.Match):
        return [stmt.subject]
    # def, class, try (and try/except*): nothing in their headers is classified
    return [] if hasattr(stmt, "body") else None


# The only nodes the passes look at; collected once per statement.
_INTERESTING = (ast.Call, ast.FormattedValue, ast.comprehension, ast.NamedExpr, ast.BinOp)
_LEAVES = (ast.Name, ast.Constant)
_SCALAR_FIELDS = frozenset(
    {"ctx", "type_comment", "kind", "id", "attr", "arg", "name", "module", "level", "conversion"}
)
# type -> (interesting?, child fields); None for things that are not nodes (str, int).
_NODE_TYPES: dict[type, tuple[bool, tuple[str, ...]] | None] = {}


def _node_type(cls: type) -> tuple[bool, tuple[str, ...]] | None:
    info: tuple[bool, tuple[str, ...]] | None
    if not issubclass(cls, ast.AST):
        info = None
    elif issubclass(cls, _LEAVES):
        info = (False, ())
    else:
        fields = tuple(f for f in cls._fields if f not in _SCALAR_FIELDS)
        info = (issubclass(cls, _INTERESTING), fields)
    _NODE_TYPES[cls] = info
    return info


def _statement_nodes(stmt: ast.stmt) -> list[ast.AST]:
    """The interesting nodes a statement evaluates itself (not those of nested bodies).

    A hand-written walk: ``ast.walk`` visits every ``Load()`` and costs twice as much.
    """
    header = _header_exprs(stmt)
    stack: list[object] = [stmt] if header is None else list(header)
    found: list[ast.AST] = []
    types = _NODE_TYPES
    while stack:
        node = stack.pop()
        cls = type(node)
        info = types[cls] if cls in types else _node_type(cls)
        if info is None:
            continue
        interesting, fields = info
        if interesting:
            found.append(node)  # type: ignore[arg-type]  # info says it is a node
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                stack.extend(value)
            elif value is not None:
                stack.append(value)
    return found


class _Binding:
    __slots__ = ("kind", "scope", "target", "value")

    def __init__(self, kind: str, target: ast.expr, value: ast.expr, scope: int) -> None:
        self.kind = kind  # "assign", "aug", "loop" or "type"
        self.target = target
        self.value = value
        self.scope = scope


class _Roles:
    """Roles of the file's names, found by letting bindings flow until nothing changes."""

    _ROUNDS = 6
    _EARLY_EXIT = True  # tests turn it off to check that it changes no answer

    def __init__(self, statements: _Statements) -> None:
        self.statements = statements
        self.names: list[dict[str, int]] = [{} for _ in statements.parent]
        self.attrs: dict[str, int] = {}
        self.module_classes: set[str] = set()
        self.loss_classes: set[str] = set()
        self._patterns: dict[str, int] = {}
        self._constructors: dict[int, int] = {}
        self._memo: dict[int, int] | None = None
        self._read: set[object] | None = None  # (scope, name) and dotted names read so far
        self._stale = False  # something read this round changed after it was read
        bindings = self._collect(statements)
        for _ in range(self._ROUNDS):
            # A round whose reads all came before any change of what they read saw final
            # values: running it again would change nothing, so that round is not needed.
            self._read = set()
            self._stale = not self._EARLY_EXIT
            changed = False
            for binding in bindings:
                changed |= self._apply(binding)
            if not changed or not self._stale:
                break
        self._read = None
        self._memo = {}  # roles are final from here on

    # collecting ----------------------------------------------------------------------

    def _collect(self, statements: _Statements) -> list[_Binding]:
        bindings: list[_Binding] = []
        classes: list[tuple[str, list[str]]] = []
        for (stmt, scope), nodes in zip(statements.items, statements.nodes, strict=True):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.names[scope][stmt.name] = _CALLABLE
                self._collect_params(stmt, statements.function_scope[id(stmt)], bindings)
                continue
            if isinstance(stmt, ast.ClassDef):
                self.names[scope][stmt.name] = _CALLABLE
                classes.append((stmt.name, [n for n in map(_final_name, stmt.bases) if n]))
                continue
            self._collect_statement(stmt, scope, nodes, bindings)
        self._find_module_classes(classes)
        return bindings

    def _collect_params(
        self, func: ast.FunctionDef | ast.AsyncFunctionDef, scope: int, out: list[_Binding]
    ) -> None:
        args = func.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is None:
                continue
            self.names[scope].setdefault(arg.arg, 0)
            if arg.annotation is not None:
                target = ast.Name(id=arg.arg, ctx=ast.Store())
                out.append(_Binding("type", target, arg.annotation, scope))

    def _collect_statement(
        self, stmt: ast.stmt, scope: int, nodes: list[ast.AST], out: list[_Binding]
    ) -> None:
        first = len(out)
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                out.append(_Binding("assign", target, stmt.value, scope))
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                out.append(_Binding("assign", stmt.target, stmt.value, scope))
            else:
                out.append(_Binding("type", stmt.target, stmt.annotation, scope))
        elif isinstance(stmt, ast.AugAssign):
            out.append(_Binding("aug", stmt.target, stmt.value, scope))
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            out.append(_Binding("loop", stmt.target, stmt.iter, scope))
        for node in nodes:
            if isinstance(node, ast.NamedExpr):
                out.append(_Binding("assign", node.target, node.value, scope))
            elif isinstance(node, ast.comprehension):
                out.append(_Binding("loop", node.target, node.iter, scope))
        for binding in out[first:]:  # a name bound in a function is local to all of it
            self._declare(binding.target, scope)

    def _declare(self, target: ast.expr, scope: int) -> None:
        if isinstance(target, ast.Name):
            self.names[scope].setdefault(target.id, 0)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._declare(elt, scope)
        elif isinstance(target, ast.Starred):
            self._declare(target.value, scope)

    def _find_module_classes(self, classes: list[tuple[str, list[str]]]) -> None:
        changed = True
        while changed:
            changed = False
            for name, bases in classes:
                if name in self.module_classes:
                    continue
                if any(b in _MODULE_BASES or b in self.module_classes for b in bases):
                    self.module_classes.add(name)
                    changed = True
        for name, bases in classes:
            if name.endswith("Loss") or any(b.endswith("Loss") for b in bases):
                self.loss_classes.add(name)

    # flowing -------------------------------------------------------------------------

    def _apply(self, binding: _Binding) -> bool:
        scope, target, value = binding.scope, binding.target, binding.value
        if binding.kind == "type":
            roles = 0
            for named in _annotated_types(value):
                roles |= self._constructed(named)
            return self._assign(target, roles, scope)
        if binding.kind == "aug":
            return self._assign(target, self.of(value, scope) & _TENSOR, scope)
        if binding.kind == "loop":
            return self._assign_loop(target, value, scope)
        if isinstance(target, (ast.Tuple, ast.List)):
            return self._assign_unpacked(target, value, scope)
        return self._assign(target, self.of(value, scope), scope)

    def _assign(self, target: ast.expr, roles: int, scope: int) -> bool:
        if not roles:
            return False
        if isinstance(target, ast.Name):
            table = self.names[scope]
            old = table.get(target.id, 0)
            if old | roles == old:
                return False
            table[target.id] = old | roles
            if self._read is not None and (scope, target.id) in self._read:
                self._stale = True
            return True
        if isinstance(target, ast.Starred):
            return self._assign(target.value, roles, scope)
        if isinstance(target, (ast.Tuple, ast.List)):
            changed = False
            for elt in target.elts:
                changed |= self._assign(elt, roles, scope)
            return changed
        dotted = dotted_name(target)
        if dotted is None:
            return False
        old = self.attrs.get(dotted, 0)
        if old | roles == old:
            return False
        self.attrs[dotted] = old | roles
        if self._read is not None and dotted in self._read:
            self._stale = True
        return True

    def _assign_unpacked(self, target: ast.Tuple | ast.List, value: ast.expr, scope: int) -> bool:
        sources = _parallel_sources(target, value)
        if sources is not None:
            changed = False
            for elt, source in zip(target.elts, sources, strict=True):
                changed |= self._assign(elt, self.of(source, scope), scope)
            return changed
        # Unpacking one value: a batch gives tensors, ``get_loaders()`` gives loaders.
        return self._assign(target, self.of(value, scope) & (_TENSOR | _LOADER), scope)

    def _assign_loop(self, target: ast.expr, iterable: ast.expr, scope: int) -> bool:
        roles = self.of(iterable, scope)
        if not roles & (_LOADER | _TENSOR):
            return False
        if (
            isinstance(iterable, ast.Call)
            and _final_name(iterable.func) == "enumerate"
            and isinstance(target, (ast.Tuple, ast.List))
            and len(target.elts) == 2
        ):
            target = target.elts[1]  # the index is an int
        return self._assign(target, _TENSOR, scope)

    # reading -------------------------------------------------------------------------

    def name(self, name: str, scope: int) -> int:
        s = scope
        while s >= 0:
            table = self.names[s]
            if name in table:
                if self._read is not None:
                    self._read.add((s, name))
                roles = table[name]
                return roles if roles & _CALLABLE else roles | self.pattern(name)
            s = self.statements.parent[s]
        return self.pattern(name)

    def pattern(self, name: str) -> int:
        roles = self._patterns.get(name)
        if roles is None:
            roles = self._patterns[name] = _pattern_roles(name)
        return roles

    def of(self, expr: ast.expr, scope: int, depth: int = 0) -> int:
        """Roles of an expression's value."""
        memo = self._memo
        if memo is None or depth:  # inner answers may be cut short by the depth limit
            return self._of(expr, scope, depth)
        key = id(expr)
        found = memo.get(key)
        if found is None:
            found = memo[key] = self._of(expr, scope, depth)
        return found

    def _of(self, expr: ast.expr, scope: int, depth: int) -> int:
        if depth > _MAX_DEPTH:
            return 0
        depth += 1
        if isinstance(expr, ast.Name):
            return self.name(expr.id, scope)
        if isinstance(expr, ast.Attribute):
            return self._attribute(expr, scope, depth)
        if isinstance(expr, ast.Call):
            return self._call(expr, scope, depth)
        if isinstance(expr, ast.Subscript):
            return self.of(expr.value, scope, depth) & (_TENSOR | _LOADER | _MODEL)
        if isinstance(expr, (ast.Starred, ast.Await, ast.NamedExpr)):
            return self.of(expr.value, scope, depth)
        if isinstance(expr, ast.BinOp):
            return (self.of(expr.left, scope, depth) | self.of(expr.right, scope, depth)) & _TENSOR
        if isinstance(expr, ast.UnaryOp):
            return self.of(expr.operand, scope, depth) & _TENSOR
        if isinstance(expr, ast.Compare):
            return self._compare(expr, scope, depth)
        return self._other(expr, scope, depth)

    def _other(self, expr: ast.expr, scope: int, depth: int) -> int:
        parts: list[ast.expr]
        if isinstance(expr, ast.BoolOp):
            parts = expr.values
        elif isinstance(expr, ast.IfExp):
            parts = [expr.body, expr.orelse]
        elif isinstance(expr, (ast.Tuple, ast.List)):
            parts = expr.elts
        else:
            return 0
        roles = 0
        for part in parts:
            roles |= self.of(part, scope, depth)
        return roles & _TENSOR

    def _compare(self, expr: ast.Compare, scope: int, depth: int) -> int:
        # ``x is None`` and ``k in batch`` do not read tensor values.
        if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in expr.ops):
            return 0
        roles = self.of(expr.left, scope, depth)
        for part in expr.comparators:
            roles |= self.of(part, scope, depth)
        return roles & _TENSOR

    def _attribute(self, expr: ast.Attribute, scope: int, depth: int) -> int:
        dotted = dotted_name(expr)
        roles = self.pattern(expr.attr)
        if dotted is not None:
            if self._read is not None:
                self._read.add(dotted)
            roles |= self.attrs.get(dotted, 0)
        base = self.of(expr.value, scope, depth)
        if base & _MODEL and expr.attr in ("module", "_orig_mod"):
            roles |= _MODEL
        if base & _TENSOR and expr.attr not in _NON_TENSOR_ATTRS:
            roles |= _TENSOR
        return roles

    def _call(self, call: ast.Call, scope: int, depth: int) -> int:
        func = call.func
        if isinstance(func, ast.Attribute):
            roles = self._method_result(call, func, scope, depth)
            if roles:
                return roles
        callee = self.of(func, scope, depth)
        if callee & _MODEL or callee & _LOSS_FN:
            return _TENSOR  # a forward pass or a loss
        name = _final_name(func)
        if name is None:
            return 0
        if self.starts_dataloader(call, scope, depth):
            return _TENSOR if name in _LOADER_CONSUMERS else _LOADER
        if _is_loss_call_name(name):
            return _TENSOR
        constructed = self._constructed(func)
        if constructed:
            return constructed
        return _TENSOR if _is_tensor_function(func) else 0

    def _method_result(self, call: ast.Call, func: ast.Attribute, scope: int, depth: int) -> int:
        base = self.of(func.value, scope, depth)
        attr = func.attr
        if attr in _SAME_ROLE_METHODS:
            moved = _TENSOR if attr in ("to", "cuda") and not base & (_MODEL | _LOSS_FN) else 0
            return (base & (_MODEL | _LOSS_FN | _TENSOR)) | moved
        if attr in ("next", "__next__") and base & _LOADER:
            return _TENSOR
        if attr in ("forward", "generate") and base & _MODEL:
            return _TENSOR
        if base & _TENSOR and attr not in _NON_TENSOR_METHODS:
            return _TENSOR
        return 0

    def _constructed(self, func: ast.expr) -> int:
        """Roles of what calling (or annotating with) ``func`` makes: DataLoader, model, ...

        Depends on the callee's spelling only, so each answer is kept (rounds ask again).
        """
        key = id(func)
        roles = self._constructors.get(key)
        if roles is None:
            roles = self._constructors[key] = self._construct(func)
        return roles

    def _construct(self, func: ast.expr) -> int:
        name = _final_name(func)
        if name is None:
            return 0
        dotted = dotted_name(func) or name
        parts = dotted.split(".")
        if _LOADER_NAME.search(name):
            return _LOADER
        if (
            name in self.module_classes
            or name in _MODULE_BASES
            or name in _MODEL_WRAPPERS
            or _is_model_factory(name)
            or dotted == "torch.compile"
            or (len(parts) >= 2 and parts[-2] == "models" and parts[0] in ("models", "torchvision"))
            or (name in ("from_pretrained", "from_config") and _names_a_model_class(parts))
        ):
            return _MODEL
        if name in self.loss_classes or (name[0].isupper() and name.endswith("Loss")):
            return _LOSS_FN
        if name == "GradScaler":
            return _SCALER
        if _is_optimizer_constructor(name, parts):
            return _OPTIM
        return 0

    # questions the classifier asks -----------------------------------------------------

    def starts_dataloader(self, call: ast.Call, scope: int, depth: int = 0) -> bool:
        """``next(it)``, ``iter(loader)``, ``list(loader)``, ``tqdm(loader)`` and the like."""
        name = _final_name(call.func)
        if name not in _LOADER_WRAPPERS and name not in _LOADER_CONSUMERS:
            return False
        args = [*call.args, *(kw.value for kw in call.keywords if kw.arg == "iterable")]
        if not args:
            return False
        if name == "next":
            first = args[0]
            if self.of(first, scope, depth) & _LOADER:
                return True
            final = _final_name(first)
            return final is not None and bool(_ITER_NAME.search(final))
        return any(self.of(arg, scope, depth) & _LOADER for arg in args)


def _annotated_types(annotation: ast.expr, depth: int = 0) -> list[ast.expr]:
    """The classes an annotation names: ``DataLoader[Any]``, ``GradScaler | None``,
    ``Optional["nn.Module"]``."""
    if depth > 4:
        return []
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return []
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return [
            *_annotated_types(annotation.left, depth + 1),
            *_annotated_types(annotation.right, depth + 1),
        ]
    if isinstance(annotation, ast.Subscript):
        if _final_name(annotation.value) not in ("Optional", "Union", "Annotated"):
            return _annotated_types(annotation.value, depth + 1)
        inner = annotation.slice
        parts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        return [t for part in parts for t in _annotated_types(part, depth + 1)]
    return [annotation]


def _parallel_sources(target: ast.Tuple | ast.List, value: ast.expr) -> list[ast.expr] | None:
    """Element-wise sources for ``a, b = x, y`` and ``m, o = accelerator.prepare(m, o)``."""
    if any(isinstance(elt, ast.Starred) for elt in target.elts):
        return None
    if isinstance(value, (ast.Tuple, ast.List)):
        sources = value.elts
    elif isinstance(value, ast.Call) and _final_name(value.func) in (
        "prepare",
        "setup",
        "initialize",
    ):
        sources = value.args
    else:
        return None
    if len(sources) != len(target.elts) or any(isinstance(s, ast.Starred) for s in sources):
        return None
    return list(sources)


def _names_a_model_class(parts: list[str]) -> bool:
    owner = parts[-2] if len(parts) >= 2 else ""
    return "Model" in owner or "For" in owner


def _is_optimizer_constructor(name: str, parts: list[str]) -> bool:
    lower = name.lower()
    return (
        name in _OPTIMIZER_CLASSES
        or "optimi" in lower
        or "schedul" in lower
        or name.endswith("LR")
        or name == "ReduceLROnPlateau"
        or ("optim" in parts[:-1] and name[:1].isupper())
    )


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


class _SourceLines:
    """Lines split the way the parser counts them (not ``str.splitlines``: form feeds), as
    UTF-8 bytes since the AST's column offsets count bytes. Built on first use."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._lines: list[str] | None = None

    def line(self, lineno: int) -> bytes:
        if self._lines is None:
            self._lines = re.split(r"\r\n|\r|\n", self._text)
        return self._lines[lineno - 1].encode() if 0 < lineno <= len(self._lines) else b""


def _classify(statements: _Statements, roles: _Roles, source: _SourceLines) -> dict[int, LineKind]:
    best: dict[int, int] = {}
    for (stmt, scope), nodes in zip(statements.items, statements.nodes, strict=True):
        rank = _statement_rank(stmt, scope, nodes, roles)
        if rank == _NO_RANK:
            continue
        header = _header_exprs(stmt)
        end = stmt.end_lineno or stmt.lineno
        if header is not None:
            end = _header_end(stmt, header, source)
        for lineno in range(stmt.lineno, end + 1):
            if best.get(lineno, _NO_RANK) > rank:
                best[lineno] = rank
    return {lineno: PRECEDENCE[rank] for lineno, rank in best.items()}


def _statement_rank(stmt: ast.stmt, scope: int, nodes: list[ast.AST], roles: _Roles) -> int:
    rank = _NO_RANK
    if isinstance(stmt, (ast.For, ast.AsyncFor)) and roles.of(stmt.iter, scope) & _LOADER:
        return _RANK[LineKind.DATALOADER]
    if isinstance(stmt, (ast.If, ast.While, ast.Assert)) and roles.of(stmt.test, scope) & _TENSOR:
        rank = _RANK[LineKind.SYNC]  # ``if loss < best:`` reads the tensor on the host
    for node in nodes:
        kind = _node_kind(node, scope, roles)
        if kind is not None and _RANK[kind] < rank:
            rank = _RANK[kind]
            if rank == 0:
                break
    return rank


def _node_kind(node: ast.AST, scope: int, roles: _Roles) -> LineKind | None:
    if isinstance(node, ast.Call):
        return _call_kind(node, scope, roles)
    if isinstance(node, ast.FormattedValue):
        return LineKind.SYNC if roles.of(node.value, scope) & _TENSOR else None
    if isinstance(node, ast.comprehension):
        return LineKind.DATALOADER if roles.of(node.iter, scope) & _LOADER else None
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod)
        and isinstance(node.left, (ast.Constant, ast.JoinedStr))
        and _reads_tensor(node.right, scope, roles)
    ):
        return LineKind.SYNC  # "%.3f" % loss
    return None


def _call_kind(call: ast.Call, scope: int, roles: _Roles) -> LineKind | None:
    func = call.func
    kind: LineKind | None = None
    if isinstance(func, ast.Attribute):
        kind = _method_kind(call, func, scope, roles)
    elif isinstance(func, ast.Name):
        kind = _function_kind(call, func.id, scope, roles)
    if kind is not None:
        return kind
    name = _final_name(func)
    if name in _SYNC_CALLS:
        return LineKind.SYNC
    if name in _CLIP_CALLS:
        return LineKind.OPTIMIZER
    if name in _TRANSFER_CALLS:
        return LineKind.TRANSFER
    if name == "grad" and (dotted_name(func) or "").endswith("autograd.grad"):
        return LineKind.BACKWARD
    callee = roles.of(func, scope)
    if callee & _MODEL:
        return LineKind.FORWARD
    if callee & _LOSS_FN or (name is not None and _is_loss_call_name(name)):
        return LineKind.LOSS
    if name in ("tensor", "as_tensor") and _device_keyword(call) is not None:
        return _to_kind(call)
    return None


def _method_kind(call: ast.Call, func: ast.Attribute, scope: int, roles: _Roles) -> LineKind | None:
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
    if attr == "step" and base & (_OPTIM | _SCALER | _MODEL):
        return LineKind.OPTIMIZER
    if attr in ("update", "unscale_") and base & _SCALER:
        return LineKind.OPTIMIZER
    if attr in ("next", "__next__") and base & _LOADER:
        return LineKind.DATALOADER
    if attr in ("forward", "generate") and base & _MODEL:
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


def _function_kind(call: ast.Call, name: str, scope: int, roles: _Roles) -> LineKind | None:
    if (name == "iter" or name in _LOADER_CONSUMERS) and roles.starts_dataloader(call, scope):
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
    if isinstance(expr, ast.Call) and _final_name(expr.func) == "device" and expr.args:
        return _is_cpu(expr.args[0])
    return False


def _is_dtype(expr: ast.expr) -> bool:
    if isinstance(expr, ast.Attribute):
        return expr.attr in _DTYPES and dotted_name(expr.value) == "torch"
    return isinstance(expr, ast.Name) and expr.id in ("dtype", "memory_format")


def _args_read_tensor(call: ast.Call, scope: int, roles: _Roles) -> bool:
    args = [*call.args, *(kw.value for kw in call.keywords)]
    return any(_reads_tensor(arg, scope, roles) for arg in args)


def _reads_tensor(expr: ast.expr, scope: int, roles: _Roles, depth: int = 0) -> bool:
    """A tensor value, or a tuple/list/dict/f-string holding one (not ``f(x)``, ``x.shape``)."""
    if depth > _MAX_DEPTH:
        return False
    if roles.of(expr, scope) & _TENSOR:
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


def _header_end(stmt: ast.stmt, header: list[ast.expr], source: _SourceLines) -> int:
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
