"""The scope index of a training script, built once per parse (``ParsedScript.scopes``).

Two views of the same scopes, each built on first use so that a caller pays for its own only:

- ``statements``: every statement in source order with its numbered scope and the few nodes it
  evaluates itself; line kinds flow the roles of names over it.
- ``parents`` and ``scope_of``: the enclosing node and scope of any node; the script scan looks
  values up by position with it.

In both, a function sees its enclosing functions' names and the module's, never a class
body's.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from functools import cached_property

SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


class ScopeIndex:
    """Scopes of one module: the statement view for line kinds, the node view for the scan."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree

    @cached_property
    def statements(self) -> Statements:
        return Statements(self.tree)

    @cached_property
    def nodes(self) -> list[ast.AST]:
        """Every node, in ``ast.walk`` order."""
        return list(ast.walk(self.tree))

    @cached_property
    def parents(self) -> dict[ast.AST, ast.AST]:
        parents: dict[ast.AST, ast.AST] = {}
        for node in self.nodes:
            for child in ast.iter_child_nodes(node):
                parents[child] = node
        return parents

    def scope_of(self, node: ast.AST) -> ast.AST:
        """The module, function, lambda or class whose body holds ``node``."""
        parents = self.parents
        parent = parents.get(node)
        while parent is not None and not isinstance(parent, SCOPES):
            parent = parents.get(parent)
        return parent if parent is not None else self.tree

    def scope_chain(self, scope: ast.AST) -> Iterator[ast.AST]:
        """``scope``, then the scopes its names are looked up in, out to the module."""
        yield scope
        while not isinstance(scope, ast.Module):
            scope = self.scope_of(scope)
            if not isinstance(scope, ast.ClassDef):  # class bodies are not visible to methods
                yield scope

    def function_name(self, node: ast.AST) -> str | None:
        scope = self.scope_of(node)
        while isinstance(scope, ast.Lambda | ast.ClassDef):
            scope = self.scope_of(scope)
        return scope.name if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) else None

    def conditional(self, node: ast.AST) -> bool:
        """Inside an `if` (or an except handler, a match case) of its own scope."""
        parent = self.parents.get(node)
        while parent is not None and not isinstance(parent, SCOPES):
            if isinstance(parent, ast.If) and not is_main_guard(parent):
                return True
            if isinstance(parent, ast.IfExp | ast.ExceptHandler | ast.match_case):
                return True
            parent = self.parents.get(parent)
        return False


def is_parameter(scope: ast.AST, name: str) -> bool:
    if not isinstance(scope, FUNCTIONS):
        return False
    args = scope.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return any(arg is not None and arg.arg == name for arg in every)


def is_main_guard(node: ast.If) -> bool:
    """`if __name__ == "__main__":` wraps whole scripts; it makes nothing conditional."""
    test = node.test
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
    )


# --- the statement view -----------------------------------------------------------------


class Statements:
    """Every statement of a module, each with the scope its plain names live in.

    Scopes are numbered (0: the module) for line kinds' role tables, which are lists.
    """

    def __init__(self, tree: ast.Module | None = None) -> None:
        self.items: list[tuple[ast.stmt, int]] = []
        self.nodes: list[list[ast.AST]] = []  # per item: what statement_nodes found
        self.parent: list[int] = []  # scope -> scope names are looked up in next (-1: none)
        self.is_class: list[bool] = []
        self.function_scope: dict[int, int] = {}  # id(def node) -> its scope
        self._new_scope(-1, False)  # the module's: 0
        if tree is not None:
            self.add(tree.body)

    def add(self, body: Sequence[ast.stmt]) -> None:
        """Top-level statements after those added before (a large file comes in groups)."""
        # Source order, so that most bindings flow in the first round.
        stack: list[tuple[Iterator[ast.stmt], int]] = [(iter(body), 0)]
        while stack:
            statements, scope = stack[-1]
            stmt = next(statements, None)
            if stmt is None:
                stack.pop()
                continue
            self.items.append((stmt, scope))
            self.nodes.append(statement_nodes(stmt))
            if type(stmt) in SIMPLE_STATEMENTS:
                continue  # nothing nested (most statements)
            children = [(iter(nested), inner) for nested, inner in self._children(stmt, scope)]
            stack.extend(reversed(children))

    def drop_statements(self) -> None:
        """Forget the statements (a group's, done with), keeping the scopes and their numbers."""
        self.items, self.nodes, self.function_scope = [], [], {}

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


# Statements with no statement nested in them (no body, orelse, finalbody, handlers, cases):
# looked up by their exact class (a subclass, if any, takes the general way).
SIMPLE_STATEMENTS = frozenset(
    cls
    for cls in ast.stmt.__subclasses__()
    if not {"body", "orelse", "finalbody", "handlers", "cases"} & set(cls._fields)
)


def header_exprs(stmt: ast.stmt) -> list[ast.expr] | None:
    """The expressions of a compound statement's header; None for a simple statement."""
    if type(stmt) in SIMPLE_STATEMENTS:
        return None
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
# Fields never walked: scalars, contexts and operators (no node below them, none interesting)
_SCALAR_FIELDS = frozenset(
    {"ctx", "type_comment", "kind", "id", "attr", "arg", "name", "module", "level", "conversion",
     "op", "ops"}
)  # fmt: skip
# type -> (interesting?, child fields); None for things that are not nodes (str, int).
_NODE_TYPES: dict[type, tuple[bool, tuple[str, ...]] | None] = {}
# Leaves seen as a single child are not pushed at all (half the nodes of an expression).
_LEAF_TYPES = frozenset({ast.Name, ast.Constant})


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


def _percent_format(node: ast.BinOp) -> bool:
    """``"%.3f" % x``: the only BinOp a pass looks at (arithmetic is most of them)."""
    return isinstance(node.op, ast.Mod) and isinstance(node.left, (ast.Constant, ast.JoinedStr))


def statement_nodes(stmt: ast.stmt) -> list[ast.AST]:
    """The interesting nodes a statement evaluates itself (not those of nested bodies).

    A hand-written walk: ``ast.walk`` visits every ``Load()`` and costs twice as much.
    """
    header = header_exprs(stmt)
    stack: list[object] = [stmt] if header is None else list(header)
    found: list[ast.AST] = []
    types = _NODE_TYPES
    leaves = _LEAF_TYPES
    while stack:
        node = stack.pop()
        cls = type(node)
        info = types.get(cls)
        if info is None:
            info = _node_type(cls)
            if info is None:  # not a node (a name in a `global` statement)
                continue
        interesting, fields = info
        if interesting and (cls is not ast.BinOp or _percent_format(node)):  # type: ignore[arg-type]
            found.append(node)  # type: ignore[arg-type]  # info says it is a node
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                stack.extend(value)
            elif value is not None and type(value) not in leaves:
                stack.append(value)
    return found
