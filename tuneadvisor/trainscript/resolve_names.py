"""Names the plain lookup of `resolve` cannot follow, and where their values come from:

- a parameter of the function that builds the DataLoader, taken at its default where every
  call leaves it out (``def load(batch_size, num_workers=0)`` called as ``load(batch_size=64)``),
  or at what the one call passes;
- an attribute of a class written in the file (``class Config: num_workers = 6``, read as
  ``Config.num_workers`` or through ``cfg = Config()``) that no method sets;
- a module-level name of a local module the script imports (``config.NUM_WORKERS``), given
  to the scan as values resolved in that module.

Each gives back the expression to follow on, or None when the value is not certain.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tuneadvisor.trainscript.node_index import NodeIndex
from tuneadvisor.trainscript.pyast import final_name
from tuneadvisor.trainscript.scans.results import ArgOption, Origin
from tuneadvisor.trainscript.scopes import FUNCTIONS


@dataclass(frozen=True)
class Elsewhere:
    """What the rest of the program (the local modules) says about names this file reads."""

    options: Mapping[str, ArgOption] = field(default_factory=dict)  # argparse, by dest
    values: Mapping[str, Origin] = field(default_factory=dict)  # `config.NUM_WORKERS`
    calls: tuple[ast.Call, ...] = ()  # calls in the file that imports this one
    # `config.LOADER_KWARGS`: a module-level dict's keys, each resolved in its own module
    mappings: Mapping[str, Mapping[str, Origin]] = field(default_factory=dict)


@dataclass(frozen=True)
class Found:
    node: ast.expr  # the expression the value comes from
    via: str  # how it was reached, for the origin's path (``load()``, ``Config``)


def parameter_value(
    index: NodeIndex, node: ast.expr, outside_calls: Sequence[ast.Call]
) -> Found | None:
    """A parameter's default where every call omits it, or what the one call in this file
    passes; ``outside_calls``: calls in the file that imports this one (a helper module)."""
    if not isinstance(node, ast.Name):
        return None
    function = index.scopes.scope_of(node)
    if not isinstance(function, FUNCTIONS) or isinstance(function, ast.Lambda):
        return None
    position, default = _parameter(function.args, node.id)
    if position is None and default is None:
        return None
    calls = [c for c in [*index.calls, *outside_calls] if final_name(c.func) == function.name]
    if not calls or any(_unreadable(call) for call in calls):
        return None  # not called where the scan sees it, or with *args / **kwargs
    passed = [_passed(call, node.id, position) for call in calls]
    if all(value is None for value in passed):
        return Found(default, f"{function.name}()") if default is not None else None
    if len(calls) == 1 and passed[0] is not None and calls[0] in index.calls:
        return Found(passed[0], f"{function.name}()")
    return None


def _parameter(args: ast.arguments, name: str) -> tuple[int | None, ast.expr | None]:
    """The parameter's position (None for keyword-only) and its default."""
    positional = [*args.posonlyargs, *args.args]
    for i, arg in enumerate(positional):
        if arg.arg == name:
            first_default = len(positional) - len(args.defaults)
            default = args.defaults[i - first_default] if i >= first_default else None
            return i - (1 if positional[0].arg in ("self", "cls") else 0), default
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if arg.arg == name:
            return None, kw_default
    return None, None


def _unreadable(call: ast.Call) -> bool:
    return any(isinstance(a, ast.Starred) for a in call.args) or any(
        kw.arg is None for kw in call.keywords
    )


def _passed(call: ast.Call, name: str, position: int | None) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if position is not None and position < len(call.args):
        return call.args[position]
    return None


def class_attribute(index: NodeIndex, node: ast.expr) -> Found | None:
    """``Config.num_workers`` or ``cfg.num_workers`` with ``cfg = Config()``: the class body's
    value, when the class is the file's, the instance is made once and nothing sets it."""
    if not isinstance(node, ast.Attribute) or not isinstance(node.value, ast.Name):
        return None
    owner = node.value.id
    classes = {s.name: s for s in index.tree.body if isinstance(s, ast.ClassDef)}
    made = [b.value for b in index.bindings.get(owner, [])]
    if owner not in classes:
        if len(made) != 1 or not isinstance(made[0], ast.Call):
            return None
        owner = final_name(made[0].func) or ""
    cls = classes.get(owner)
    if cls is None or _set_elsewhere(index, node.attr):
        return None
    for stmt in cls.body:
        value = _assigned(stmt, node.attr)
        if value is not None:
            return Found(value, owner)
    return None


def _assigned(stmt: ast.stmt, name: str) -> ast.expr | None:
    if isinstance(stmt, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == name for t in stmt.targets
    ):
        return stmt.value
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return stmt.value if stmt.target.id == name else None
    return None


def _set_elsewhere(index: NodeIndex, attr: str) -> bool:
    """Any ``x.attr = ...`` or ``setattr`` in the file: the class value may not be the one read."""
    for node in ast.walk(index.tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Attribute) and t.attr == attr for t in targets):
            return True
        if isinstance(node, ast.Call) and final_name(node.func) == "setattr":
            return True
    return False


def module_value(index: NodeIndex, node: ast.expr, values: Mapping[str, Origin]) -> Origin | None:
    """``config.NUM_WORKERS`` (or ``NUM_WORKERS`` from ``from config import``): the value
    the local module gives it, resolved there."""
    qual = index.qual(node)
    return values.get(qual) if qual is not None else None


def held_attribute(index: NodeIndex, node: ast.expr) -> Found | None:
    """``self.args.cpu_workers`` where ``self.args = args`` is the object's only binding of
    it and ``args.cpu_workers = 8`` is set once, unconditionally, at the module level on a
    module-level ``args``: the value a careful reader follows through the object."""
    if not (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and isinstance(node.value.value, ast.Name)
        and node.value.value.id == "self"
    ):
        return None
    held = index.bindings.get(f"self.{node.value.attr}", [])
    if len(held) != 1 or not isinstance(held[0].value, ast.Name):
        return None
    owner = held[0].value.id
    module = index.tree
    if not any(b.scope is module for b in index.bindings.get(owner, [])):
        return None  # not the module's object: a caller's, which is not followed
    sets = index.bindings.get(f"{owner}.{node.attr}", [])
    if len(sets) != 1 or sets[0].scope is not module or sets[0].conditional:
        return None
    return Found(sets[0].value, f"{owner}.{node.attr}")
