"""Host syncs of a training script: `.item()`, `.cpu()`, `print(loss)`, ... and whether each
runs once per step inside a loader loop, or every N steps under an `if step % N == 0`."""

from __future__ import annotations

import ast
from collections.abc import Mapping

from tuneadvisor.trainscript.node_index import NodeIndex, const_str, contains, walk_body
from tuneadvisor.trainscript.scans.loaders import Loop
from tuneadvisor.trainscript.scans.results import LoaderLoop, SyncSite
from tuneadvisor.trainscript.scopes import SCOPES

_SYNC_METHODS = frozenset({"item", "cpu", "numpy", "tolist"})
_SCALAR_CALLS = frozenset({"float", "int", "len", "str", "bool", "round"})
_NOT_PRINTED = frozenset({"len", "type", "isinstance", "id"})
_PRINT_OPTIONS = frozenset({"sep", "end", "file", "flush"})


def _sync_kind(index: NodeIndex, call: ast.Call) -> str | None:
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr in _SYNC_METHODS and not call.args:
        return func.attr
    if func.attr == "to" and call.args and (const_str(call.args[0]) or "").startswith("cpu"):
        return "to_cpu"
    qual = index.qual(func) or ""
    if qual.startswith("torch.") and qual.endswith(".synchronize"):
        return "synchronize"
    return None


def find_syncs(index: NodeIndex, loops: Mapping[Loop, LoaderLoop]) -> list[SyncSite]:
    kinds = {id(call): kind for call in index.calls if (kind := _sync_kind(index, call))}
    inner = _chained_syncs(index, kinds)
    names: dict[Loop, set[str]] = {}
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


def _chained_syncs(index: NodeIndex, kinds: Mapping[int, str]) -> set[int]:
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
    index: NodeIndex, node: ast.AST, loops: Mapping[Loop, LoaderLoop]
) -> tuple[Loop | None, str | None]:
    """The DataLoader loop whose body holds `node`, and the `if step % N == 0` guarding it."""
    guard: str | None = None
    child, parent = node, index.scopes.parents.get(node)
    while parent is not None and not isinstance(parent, SCOPES):
        if (
            guard is None
            and isinstance(parent, ast.If)
            and contains(parent.body, child)
            and _has_modulo(parent.test)
        ):
            guard = index.text(parent.test)
        if (
            isinstance(parent, ast.For | ast.AsyncFor)
            and parent in loops
            and contains(parent.body, child)
        ):
            return parent, guard
        child, parent = parent, index.scopes.parents.get(parent)
    return None, None


def _has_modulo(test: ast.expr) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(test))


def _is_print(index: NodeIndex, call: ast.Call) -> bool:
    return index.qual(call.func) == "print"


def _has_sync(call: ast.Call, kinds: Mapping[int, str]) -> bool:
    return any(id(node) in kinds for node in ast.walk(call) if node is not call)


def _tensor_names(index: NodeIndex, loop: Loop) -> set[str]:
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
    for node in walk_body(loop.body):
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


def _prints_tensor(index: NodeIndex, call: ast.Call, tensors: set[str]) -> bool:
    args = [*call.args, *(kw.value for kw in call.keywords if kw.arg not in _PRINT_OPTIONS)]
    for arg in args:
        for node in ast.walk(arg):
            if isinstance(node, ast.Name) and node.id in tensors and _printed(index, node):
                return True
    return False


def _printed(index: NodeIndex, name: ast.Name) -> bool:
    """The tensor itself is formatted, not `x.shape` or `len(x)`."""
    parent = index.scopes.parents.get(name)
    if isinstance(parent, ast.Attribute):
        return False
    if isinstance(parent, ast.Call):
        if parent.func is name:
            return False
        return index.qual(parent.func) not in _NOT_PRINTED
    return True
