"""The script scan's index of one parse: imports, bindings by name and position, dict
mutations, calls, environment reads; and the small AST helpers the scan's modules share.

Scopes come from the shared scope index (`ParsedScript.scopes`), so line kinds and the scan
see the same scopes of the same tree.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from tuneadvisor.trainscript.pyast import dotted_name
from tuneadvisor.trainscript.scans.results import Scalar
from tuneadvisor.trainscript.scopes import FUNCTIONS, is_parameter

if TYPE_CHECKING:
    from tuneadvisor.trainscript.parsed import ParsedScript

Position: TypeAlias = tuple[int, int]
_ENV_GET_CALLS = frozenset({"os.getenv", "os.environ.get"})
_TEXT_LIMIT = 160


def pos_of(node: ast.AST) -> Position:
    return (int(getattr(node, "lineno", 0)), int(getattr(node, "col_offset", 0)))


def end_of(node: ast.AST) -> Position:
    line = getattr(node, "end_lineno", None)
    col = getattr(node, "end_col_offset", None)
    if line is None or col is None:
        return pos_of(node)
    return (int(line), int(col))


def last_part(name: str | None) -> str:
    return (name or "").rsplit(".", 1)[-1]


def const_str(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def keyword_arg(call: ast.Call, name: str) -> ast.expr | None:
    return next((kw.value for kw in call.keywords if kw.arg == name), None)


def argument(call: ast.Call, name: str, position: int) -> ast.expr | None:
    """A keyword argument, else the positional one at `position`."""
    found = keyword_arg(call, name)
    if found is None and position < len(call.args):
        arg = call.args[position]
        if not isinstance(arg, ast.Starred) and not any(
            isinstance(a, ast.Starred) for a in call.args[:position]
        ):
            found = arg
    return found


def convert_value(value: Scalar, convert: Callable[[Any], Scalar]) -> Scalar:
    if value is None:
        return None
    try:
        return convert(value)
    except (ValueError, TypeError, OverflowError):
        return None


def walk_body(stmts: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """Nodes of `stmts` in source order, without entering nested functions or classes."""
    stack = list(reversed(stmts))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (*FUNCTIONS, ast.ClassDef)):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def contains(body: Sequence[ast.AST], node: ast.AST) -> bool:
    return any(item is node for item in body)


@dataclass(frozen=True)
class ValueBinding:
    """`name = value`: visible after `end`."""

    line: int
    end: Position
    value: ast.expr
    scope: ast.AST
    conditional: bool


@dataclass(frozen=True)
class Mutation:
    """A change to a dict held in a name: `d.update(x)`, `d["k"] = v`, `del d["k"]`."""

    pos: Position
    scope: ast.AST
    conditional: bool
    key: str | None = None  # for item assignment and deletion
    value: ast.expr | None = None  # the item's value, or update()'s positional argument
    keywords: tuple[ast.keyword, ...] = ()
    delete: bool = False


class NodeIndex:
    """One pass over the tree: imports, bindings, dict mutations, calls (scopes are shared)."""

    def __init__(self, parsed: ParsedScript) -> None:
        self.scopes = parsed.scopes
        self.tree = self.scopes.tree
        self.lines = parsed.byte_lines
        self.imports: dict[str, str] = {}
        self.import_nodes: list[ast.Import | ast.ImportFrom] = []
        self.bindings: dict[str, list[ValueBinding]] = {}
        self.mutations: dict[str, list[Mutation]] = {}
        self.calls: list[ast.Call] = []
        self.assigns: list[tuple[ast.expr, ast.expr, ast.stmt]] = []
        self.nodes = self.scopes.nodes
        for node in self.nodes:
            self._visit(node)
        self.calls.sort(key=pos_of)
        self.assigns.sort(key=lambda item: pos_of(item[2]))
        # Reads of environment variables, in source order (needs every import seen first).
        self.env_nodes: list[tuple[str, ast.expr]] = sorted(
            (
                (read[0], node)
                for node in self.nodes
                if isinstance(node, ast.expr)
                and (read := self.env_read(node)) is not None
                and read[0] is not None
            ),
            key=lambda item: pos_of(item[1]),
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
            scope, conditional = self.scopes.scope_of(stmt), self.scopes.conditional(stmt)
            binding = ValueBinding(stmt.lineno, end_of(stmt), value, scope, conditional)
            self.bindings.setdefault(name, []).append(binding)

    def _add_item_mutation(self, target: ast.expr, value: ast.expr | None, stmt: ast.stmt) -> None:
        if not isinstance(target, ast.Subscript):
            return
        owner, key = dotted_name(target.value), const_str(target.slice)
        if owner is None or key is None:
            return
        mutation = Mutation(
            pos_of(stmt),
            self.scopes.scope_of(stmt),
            self.scopes.conditional(stmt),
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
        scope, conditional = self.scopes.scope_of(call), self.scopes.conditional(call)
        if func.attr == "update":
            value = call.args[0] if call.args else None
            mutation = Mutation(
                pos_of(call), scope, conditional, value=value, keywords=tuple(call.keywords)
            )
        else:
            key = const_str(call.args[0]) if call.args else None
            if key is None:
                return
            mutation = Mutation(pos_of(call), scope, conditional, key=key, delete=True)
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

    def lookup(self, name: str, at: ast.AST) -> list[ValueBinding]:
        """Bindings of `name` visible at `at`, nearest first (own scope, then enclosing ones)."""
        candidates = self.bindings.get(name)
        if not candidates:
            return []
        pos = pos_of(at)
        scope = self.scopes.scope_of(at)
        for level, current in enumerate(self.scopes.scope_chain(scope)):
            # A function runs after the module body: all module bindings are visible there.
            anywhere = level > 0 and isinstance(current, ast.Module)
            visible = [b for b in candidates if b.scope is current and (anywhere or b.end <= pos)]
            if visible:
                return sorted(visible, key=lambda b: b.end, reverse=True)
            if is_parameter(current, name.split(".")[0]):
                break  # a parameter: its value comes from the caller
        if name.startswith("self."):  # set in __init__, read in another method
            return sorted(candidates, key=lambda b: b.end, reverse=True)
        return []

    def mutations_after(self, name: str, binding: ValueBinding, at: ast.AST) -> list[Mutation]:
        """Changes to the dict bound by `binding`, up to `at` when `at` is in the same scope."""
        same_scope = self.scopes.scope_of(at) is binding.scope
        limit = pos_of(at)
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
            return const_str(node.slice), None
        if isinstance(node, ast.Call) and node.args and self.qual(node.func) in _ENV_GET_CALLS:
            default = node.args[1] if len(node.args) > 1 else keyword_arg(node, "default")
            return const_str(node.args[0]), default
        return None
