"""Roles of the names of a training script, for line kinds: model, DataLoader, loss, ...

One pass records every binding (``=``, ``+=``, annotated assignments, ``for`` targets,
comprehension targets, ``:=``, function parameters with their annotations) with its scope
from the shared scope index; roles then flow through the bindings until nothing changes. What
a name means by itself comes from ``names``; ``kinds``' docstring lists the rules.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from tuneadvisor.trainscript.names import (
    LOADER_WRAPPERS,
    MODEL_WRAPPERS,
    MODULE_BASES,
    is_iterator_name,
    is_loader_name,
    is_loss_call_name,
    is_loss_fn_name,
    is_model_factory,
    is_model_name,
    is_optimizer_constructor,
    is_optimizer_name,
    is_scaler_name,
    names_a_model_class,
    returns_tensor,
)
from tuneadvisor.trainscript.pyast import annotated_types, dotted_name, final_name
from tuneadvisor.trainscript.scopes import Statements

# Bit flags: cheaper than sets, and a name can hold several (a loop target may be both).
MODEL = 1
LOADER = 2
LOSS_FN = 4
OPTIM = 8
SCALER = 16
TENSOR = 32
CALLABLE = 64  # a def or class of this file: never a model by its name
MAX_DEPTH = 40  # expression nesting followed; deeper parts count as unknown

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
# ``next(loader_iter)`` and ``list(loader)`` give batches; the wrappers give iterables of them.
LOADER_CONSUMERS = frozenset({"next", "list", "tuple"})


def _pattern_roles(name: str) -> int:
    """Roles a name suggests by itself (``train_loader``, ``model``, ``criterion``, ...)."""
    roles = 0
    if is_loader_name(name):
        roles |= LOADER
    if is_model_name(name):
        roles |= MODEL
    if is_loss_fn_name(name):
        roles |= LOSS_FN
    if is_optimizer_name(name):
        roles |= OPTIM
    if is_scaler_name(name):
        roles |= SCALER
    return roles


class RoleBinding:
    __slots__ = ("kind", "scope", "target", "value")

    def __init__(self, kind: str, target: ast.expr, value: ast.expr, scope: int) -> None:
        self.kind = kind  # "assign", "aug", "loop" or "type"
        self.target = target
        self.value = value
        self.scope = scope


class Roles:
    """Roles of the file's names, found by letting bindings flow until nothing changes."""

    _ROUNDS = 6
    _EARLY_EXIT = True  # tests turn it off to check that it changes no answer
    _memo: dict[int, int] | None
    _read: set[object] | None  # (scope, name) and dotted names read so far

    def __init__(self, statements: Statements) -> None:
        self._start(statements)
        bindings = self._collect(statements)
        self._find_module_classes()
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

    def _start(self, statements: Statements) -> None:
        self.statements = statements
        self.names: list[dict[str, int]] = [{} for _ in statements.parent]
        self.attrs: dict[str, int] = {}
        self.module_classes: set[str] = set()
        self.loss_classes: set[str] = set()
        self._classes: list[tuple[str, list[str]]] = []  # every class: name, base names
        self._patterns: dict[str, int] = {}
        self._constructors: dict[int, int] = {}
        self._memo = None
        self._read = None
        self._stale = False  # something read this round changed after it was read
        # streamed (StreamedRoles): module-level names read before any binding of them, and
        # the names asked whether they are a module or loss class
        self._misses = False
        self._class_queries: set[str] | None = None

    # collecting ----------------------------------------------------------------------

    def _collect(self, statements: Statements) -> list[RoleBinding]:
        bindings: list[RoleBinding] = []
        for (stmt, scope), nodes in zip(statements.items, statements.nodes, strict=True):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._declare_callable(stmt.name, scope)
                self._collect_params(stmt, statements.function_scope[id(stmt)], bindings)
                continue
            if isinstance(stmt, ast.ClassDef):
                self._declare_callable(stmt.name, scope)
                self._classes.append((stmt.name, [n for n in map(final_name, stmt.bases) if n]))
                continue
            self._collect_statement(stmt, scope, nodes, bindings)
        return bindings

    def _declare_callable(self, name: str, scope: int) -> None:
        table = self.names[scope]
        table[name] = table.get(name, 0) | CALLABLE
        if self._read is not None and (scope, name) in self._read:
            self._stale = True  # streamed: read before this def was seen

    def _collect_params(
        self, func: ast.FunctionDef | ast.AsyncFunctionDef, scope: int, out: list[RoleBinding]
    ) -> None:
        args = func.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is None:
                continue
            self.names[scope].setdefault(arg.arg, 0)
            if arg.annotation is not None:
                target = ast.Name(id=arg.arg, ctx=ast.Store())
                out.append(RoleBinding("type", target, arg.annotation, scope))

    def _collect_statement(
        self, stmt: ast.stmt, scope: int, nodes: list[ast.AST], out: list[RoleBinding]
    ) -> None:
        first = len(out)
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                out.append(RoleBinding("assign", target, stmt.value, scope))
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                out.append(RoleBinding("assign", stmt.target, stmt.value, scope))
            else:
                out.append(RoleBinding("type", stmt.target, stmt.annotation, scope))
        elif isinstance(stmt, ast.AugAssign):
            out.append(RoleBinding("aug", stmt.target, stmt.value, scope))
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            out.append(RoleBinding("loop", stmt.target, stmt.iter, scope))
        for node in nodes:
            if isinstance(node, ast.NamedExpr):
                out.append(RoleBinding("assign", node.target, node.value, scope))
            elif isinstance(node, ast.comprehension):
                out.append(RoleBinding("loop", node.target, node.iter, scope))
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

    def _find_module_classes(self) -> None:
        classes = self._classes
        self.module_classes, self.loss_classes = set(), set()
        changed = True
        while changed:
            changed = False
            for name, bases in classes:
                if name in self.module_classes:
                    continue
                if any(b in MODULE_BASES or b in self.module_classes for b in bases):
                    self.module_classes.add(name)
                    changed = True
        for name, bases in classes:
            if name.endswith("Loss") or any(b.endswith("Loss") for b in bases):
                self.loss_classes.add(name)

    # flowing -------------------------------------------------------------------------

    def _apply(self, binding: RoleBinding) -> bool:
        scope, target, value = binding.scope, binding.target, binding.value
        if binding.kind == "type":
            roles = 0
            for named in annotated_types(value):
                roles |= self._constructed(named)
            return self._assign(target, roles, scope)
        if binding.kind == "aug":
            return self._assign(target, self.of(value, scope) & TENSOR, scope)
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
        return self._assign(target, self.of(value, scope) & (TENSOR | LOADER), scope)

    def _assign_loop(self, target: ast.expr, iterable: ast.expr, scope: int) -> bool:
        roles = self.of(iterable, scope)
        if not roles & (LOADER | TENSOR):
            return False
        if (
            isinstance(iterable, ast.Call)
            and final_name(iterable.func) == "enumerate"
            and isinstance(target, (ast.Tuple, ast.List))
            and len(target.elts) == 2
        ):
            target = target.elts[1]  # the index is an int
        return self._assign(target, TENSOR, scope)

    # reading -------------------------------------------------------------------------

    def name(self, name: str, scope: int) -> int:
        s = scope
        names, parent = self.names, self.statements.parent
        while s >= 0:
            roles = names[s].get(name)
            if roles is not None:
                if self._read is not None:
                    self._read.add((s, name))
                if roles & CALLABLE:
                    return roles
                pattern = self._patterns.get(name)
                return roles | (pattern if pattern is not None else self.pattern(name))
            s = parent[s]
        if self._misses and self._read is not None:
            self._read.add((0, name))  # a later group may bind it at module level
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
        # Nested parts go straight to _of (``of`` with a depth does nothing else), and the
        # node's class picks its reader: an isinstance chain walked for every node was most
        # of flowing a large file's roles.
        if depth > MAX_DEPTH:
            return 0
        cls = type(expr)
        if cls is ast.Name:
            return self.name(expr.id, scope)  # type: ignore[attr-defined]  # it is a Name
        read = _READERS.get(cls)
        if read is None:
            return self._of_subclass(expr, scope, depth + 1)
        return read(self, expr, scope, depth + 1)

    def _of_subclass(self, expr: ast.expr, scope: int, depth: int) -> int:
        """A node of a class not in ``_READERS`` (a subclass of an AST class, say)."""
        if isinstance(expr, ast.Name):
            return self.name(expr.id, scope)
        for cls, read in _READERS.items():
            if isinstance(expr, cls):
                return read(self, expr, scope, depth)
        return 0

    def _subscript(self, expr: ast.Subscript, scope: int, depth: int) -> int:
        return self._of(expr.value, scope, depth) & (TENSOR | LOADER | MODEL)

    def _inner(self, expr: ast.Starred | ast.Await | ast.NamedExpr, scope: int, depth: int) -> int:
        return self._of(expr.value, scope, depth)

    def _binop(self, expr: ast.BinOp, scope: int, depth: int) -> int:
        return (self._of(expr.left, scope, depth) | self._of(expr.right, scope, depth)) & TENSOR

    def _unaryop(self, expr: ast.UnaryOp, scope: int, depth: int) -> int:
        return self._of(expr.operand, scope, depth) & TENSOR

    def _nothing(self, expr: ast.expr, scope: int, depth: int) -> int:
        return 0

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
            roles |= self._of(part, scope, depth)
        return roles & TENSOR

    def _compare(self, expr: ast.Compare, scope: int, depth: int) -> int:
        # ``x is None`` and ``k in batch`` do not read tensor values.
        if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in expr.ops):
            return 0
        roles = self._of(expr.left, scope, depth)
        for part in expr.comparators:
            roles |= self._of(part, scope, depth)
        return roles & TENSOR

    def _attribute(self, expr: ast.Attribute, scope: int, depth: int) -> int:
        dotted = dotted_name(expr)
        roles = self.pattern(expr.attr)
        if dotted is not None:
            if self._read is not None:
                self._read.add(dotted)
            roles |= self.attrs.get(dotted, 0)
        base = self._of(expr.value, scope, depth)
        if base & MODEL and expr.attr in ("module", "_orig_mod"):
            roles |= MODEL
        if base & TENSOR and expr.attr not in _NON_TENSOR_ATTRS:
            roles |= TENSOR
        return roles

    def _call(self, call: ast.Call, scope: int, depth: int) -> int:
        func = call.func
        if isinstance(func, ast.Attribute):
            roles = self._method_result(call, func, scope, depth)
            if roles:
                return roles
        callee = self._of(func, scope, depth)
        if callee & MODEL or callee & LOSS_FN:
            return TENSOR  # a forward pass or a loss
        name = final_name(func)
        if name is None:
            return 0
        if self.starts_dataloader(call, scope, depth):
            return TENSOR if name in LOADER_CONSUMERS else LOADER
        if is_loss_call_name(name):
            return TENSOR
        constructed = self._constructed(func)
        if constructed:
            return constructed
        tensor = isinstance(func, ast.Attribute) and returns_tensor(
            dotted_name(func.value), func.attr
        )
        return TENSOR if tensor else 0

    def _method_result(self, call: ast.Call, func: ast.Attribute, scope: int, depth: int) -> int:
        base = self._of(func.value, scope, depth)
        attr = func.attr
        if attr in _SAME_ROLE_METHODS:
            moved = TENSOR if attr in ("to", "cuda") and not base & (MODEL | LOSS_FN) else 0
            return (base & (MODEL | LOSS_FN | TENSOR)) | moved
        if attr in ("next", "__next__") and base & LOADER:
            return TENSOR
        if attr in ("forward", "generate") and base & MODEL:
            return TENSOR
        if base & TENSOR and attr not in _NON_TENSOR_METHODS:
            return TENSOR
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
        name = final_name(func)
        if name is None:
            return 0
        if self._class_queries is not None:
            self._class_queries.add(name)
        dotted = dotted_name(func) or name
        parts = dotted.split(".")
        if is_loader_name(name):
            return LOADER
        if (
            name in self.module_classes
            or name in MODULE_BASES
            or name in MODEL_WRAPPERS
            or is_model_factory(name)
            or dotted == "torch.compile"
            or (len(parts) >= 2 and parts[-2] == "models" and parts[0] in ("models", "torchvision"))
            or (name in ("from_pretrained", "from_config") and names_a_model_class(parts))
        ):
            return MODEL
        if name in self.loss_classes or (name[0].isupper() and name.endswith("Loss")):
            return LOSS_FN
        if name == "GradScaler":
            return SCALER
        if is_optimizer_constructor(name, parts):
            return OPTIM
        return 0

    # questions the classifier asks -----------------------------------------------------

    def starts_dataloader(self, call: ast.Call, scope: int, depth: int = 0) -> bool:
        """``next(it)``, ``iter(loader)``, ``list(loader)``, ``tqdm(loader)`` and the like."""
        name = final_name(call.func)
        if name not in LOADER_WRAPPERS and name not in LOADER_CONSUMERS:
            return False
        args = [*call.args, *(kw.value for kw in call.keywords if kw.arg == "iterable")]
        if not args:
            return False
        if name == "next":
            first = args[0]
            if self.of(first, scope, depth) & LOADER:
                return True
            final = final_name(first)
            return final is not None and is_iterator_name(final)
        return any(self.of(arg, scope, depth) & LOADER for arg in args)


_Reader = Callable[[Roles, Any, int, int], int]
# The reader of each class of expression (a Name is looked up before this); a class not here
# at all (a subclass of one) is read as isinstance reads it.
_READERS: dict[type, _Reader] = {
    ast.Attribute: Roles._attribute,
    ast.Call: Roles._call,
    ast.Subscript: Roles._subscript,
    ast.Starred: Roles._inner,
    ast.Await: Roles._inner,
    ast.NamedExpr: Roles._inner,
    ast.BinOp: Roles._binop,
    ast.UnaryOp: Roles._unaryop,
    ast.Compare: Roles._compare,
    ast.BoolOp: Roles._other,
    ast.IfExp: Roles._other,
    ast.Tuple: Roles._other,
    ast.List: Roles._other,
}
for _cls in ast.expr.__subclasses__():  # every other expression (Constant, Lambda, ...): none
    _READERS.setdefault(_cls, Roles._nothing)
del _cls


class StreamedRoles(Roles):
    """Roles of a large file's names, a group of top-level statements at a time: each group
    is declared and flowed once as it comes (``add_group``), then classified with what is
    known so far, and dropped.

    That is the whole-file answer (every declaration first, then rounds until what was read
    stays as it was read) exactly when nothing read, by the flow or by the classifying, is
    changed or declared afterwards, nor a name asked about turns out a module or loss class
    after: the whole file's first round then reads the same values and is its last.
    ``stale`` says where that does not hold; the caller then reads the whole file at once.
    """

    def __init__(self, statements: Statements) -> None:
        self._start(statements)
        self._read = set()  # kept over every group: any later change of it makes it stale
        self._misses = True
        self._class_queries = set()

    @property
    def stale(self) -> bool:
        return self._stale

    def add_group(self) -> None:
        """Declare and flow the statements now in ``statements`` (one group's)."""
        grown = len(self.statements.parent) - len(self.names)
        self.names.extend({} for _ in range(grown))
        self._memo = None
        self._constructors.clear()  # keyed by node ids: the last group's are gone
        known = len(self._classes)
        bindings = self._collect(self.statements)
        if len(self._classes) > known:
            asked = self._class_queries or set()
            before = [(n in self.module_classes, n in self.loss_classes) for n in asked]
            self._find_module_classes()
            after = [(n in self.module_classes, n in self.loss_classes) for n in asked]
            self._stale |= before != after
        for binding in bindings:
            self._apply(binding)
        self._memo = {}  # for classifying this group; a later change makes all of it stale


def _parallel_sources(target: ast.Tuple | ast.List, value: ast.expr) -> list[ast.expr] | None:
    """Element-wise sources for ``a, b = x, y`` and ``m, o = accelerator.prepare(m, o)``."""
    if any(isinstance(elt, ast.Starred) for elt in target.elts):
        return None
    if isinstance(value, (ast.Tuple, ast.List)):
        sources = value.elts
    elif isinstance(value, ast.Call) and final_name(value.func) in (
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
