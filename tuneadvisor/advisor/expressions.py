"""Rule expressions: parsed once with Python's own parser, evaluated by simpleeval.

Fact names are dotted (``gpu.util.mean``), which Python reads as attribute access. Each
expression's AST is rewritten so a known dotted name becomes one plain name; simpleeval
then evaluates it with no attribute access, no builtins but the listed functions, and no
``eval``. Rewriting also tells us which facts an expression needs before anything runs.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from keyword import iskeyword
from typing import Any

from simpleeval import DEFAULT_OPERATORS, SimpleEval

from tuneadvisor.records import record
from tuneadvisor.trainscript.pyast import dotted_name


class ExpressionError(ValueError):
    """An expression that does not parse or names something unknown."""


# What a rule expression may be, checked when the rule is loaded, so that `rules check`
# passing means evaluating it cannot blow up: a rule pack may come from anyone.
MAX_TEXT = 2000  # characters of one expression
MAX_NODES = 400  # nodes of its syntax tree
MAX_DEPTH = 30  # nesting of its syntax tree (`not not ...`, nested `if`s, long sums)
MAX_STRING = 1000  # characters of a string a constant or an operation may make
MAX_MAGNITUDE_DIGITS = 300  # decimal digits of a number ** may make (floats reach 1e308)

# Arithmetic, comparisons, and/or/not, `x if c else y`, calls of FUNCTIONS; no bit
# operations (`1 << 10**9`), no f-strings (a width of 10^9), no subscripts or containers.
_ALLOWED_NODES = (
    ast.Expression, ast.Constant, ast.Name, ast.Load, ast.Attribute, ast.BinOp, ast.UnaryOp,
    ast.BoolOp, ast.Compare, ast.IfExp, ast.Call, ast.keyword,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.USub, ast.UAdd, ast.Not, ast.And, ast.Or,
    ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn,
)  # fmt: skip


def _check_shape(text: str) -> ast.Expression:
    """Parse ``text`` within the bounds above; ExpressionError says which is passed."""
    return _checked_nodes(text)[0]


def _checked_nodes(text: str) -> tuple[ast.Expression, list[ast.AST]]:
    """``_check_shape``'s tree and every node of it (a cached rule's check walks them again:
    one walk, by the nodes' own fields, instead of ast.walk's generators, which cost most of
    reading the rule cache)."""
    if len(text) > MAX_TEXT:
        raise ExpressionError(f"longer than {MAX_TEXT} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"does not parse: {exc.msg} in {text!r}") from None
    except (RecursionError, MemoryError):
        raise ExpressionError(f"nested more than {MAX_DEPTH} levels deep") from None
    nodes: list[ast.AST] = []
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        nodes.append(node)
        if len(nodes) > MAX_NODES:
            raise ExpressionError(f"more than {MAX_NODES} parts: split it or use a param")
        if depth > MAX_DEPTH:
            raise ExpressionError(f"nested more than {MAX_DEPTH} levels deep")
        if not isinstance(node, _ALLOWED_NODES):
            raise ExpressionError(f"{type(node).__name__} is not allowed in a rule expression")
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, int | float | str | bool | type(None)):
                raise ExpressionError(f"the constant {node.value!r} is not allowed")
            if isinstance(node.value, str) and len(node.value) > MAX_STRING:
                raise ExpressionError(f"a string longer than {MAX_STRING} characters")
        for name in node._fields:  # as ast.iter_child_nodes, in the same order
            child = getattr(node, name, None)
            if isinstance(child, ast.AST):
                stack.append((child, depth + 1))
            elif isinstance(child, list):
                stack += [(item, depth + 1) for item in child if isinstance(item, ast.AST)]
    return tree, nodes


# The operators simpleeval applies, bounded at run time too: facts come from the inputs
# (a partition named "%2147483000s" is a string fact), so no operand is trusted.


def _number(*values: object) -> bool:
    return all(isinstance(v, int | float) for v in values)


def _too_big(what: str) -> OverflowError:
    return OverflowError(f"{what} would be too large")


def _add(a: Any, b: Any) -> Any:
    if isinstance(a, str) and isinstance(b, str):
        if len(a) + len(b) > MAX_STRING:
            raise _too_big("a string")
        return a + b
    if not _number(a, b):
        raise TypeError(f"cannot add {type(a).__name__} and {type(b).__name__}")
    return a + b


def _mult(a: Any, b: Any) -> Any:
    if not _number(a, b):  # `"x" * 10**9` would allocate a gigabyte
        raise TypeError(f"cannot multiply {type(a).__name__} by {type(b).__name__}")
    return a * b


def _mod(a: Any, b: Any) -> Any:
    if not _number(a, b):  # `"%2147483000s" % x` formats two gigabytes
        raise TypeError(f"% takes numbers, not {type(a).__name__} and {type(b).__name__}")
    return a % b


def _pow(a: Any, b: Any) -> Any:
    if not _number(a, b):
        raise TypeError("** takes numbers")
    if abs(a) > 1 and abs(b) * math.log10(abs(a)) > MAX_MAGNITUDE_DIGITS:
        raise _too_big(f"{a} ** {b}")  # `4000000 ** 4000000` would run for minutes
    result = a**b
    if isinstance(result, complex):  # (-8) ** 0.5
        raise ValueError(f"{a} ** {b} is no real number")
    return result


def _round(value: float, ndigits: int | None = None) -> float:
    """``round``, with ``ndigits`` bounded (``round(5, -10**9)`` computes 10**10**9)."""
    if ndigits is None:
        return round(value)
    if not isinstance(ndigits, int) or abs(ndigits) > 30:
        raise ValueError("round: ndigits must be a whole number within -30..30")
    return round(value, ndigits)


OPERATORS: Mapping[type, Callable[..., Any]] = {
    **DEFAULT_OPERATORS,
    ast.Add: _add,
    ast.Mult: _mult,
    ast.Mod: _mod,
    ast.Pow: _pow,
}


def round_up(value: float, step: float) -> float:
    """The smallest multiple of ``step`` not below ``value`` (memory to whole GiB, say)."""
    if step <= 0:
        raise ValueError("round_up step must be positive")
    return math.ceil(value / step) * step


def clamp(value: float, low: float, high: float) -> float:
    return max(low, min(value, high))


def mem_text(mib: float) -> str:
    """MiB as sbatch reads it, rounded up to whole MiB: 2048 -> "2G", 1536 -> "1536M"."""
    from tuneadvisor.slurm.units import render_memory  # a rule pack loads without the slurm units

    return render_memory(math.ceil(mib))


def time_text(seconds: float) -> str:
    """Seconds as sbatch reads --time: "D-HH:MM:SS" past a day, else "HH:MM:SS"."""
    total = math.ceil(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    hms = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{hms}" if days else hms


FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "round": _round,
    "int": int,
    "float": float,
    "ceil": math.ceil,
    "floor": math.floor,
    "round_up": round_up,
    "clamp": clamp,
    "mem_text": mem_text,
    "time_text": time_text,
}


def mangle(fact: str) -> str:
    return "f__" + fact.replace(".", "__")


class _FactRewriter(ast.NodeTransformer):
    def __init__(self, facts: frozenset[str], params: frozenset[str]) -> None:
        self.facts = facts
        self.params = params
        self.used: set[str] = set()
        self.unknown: list[str] = []

    def _name(self, node: ast.expr, dotted: str) -> ast.expr:
        if dotted in self.facts:
            self.used.add(dotted)
            return ast.copy_location(ast.Name(id=mangle(dotted), ctx=ast.Load()), node)
        if dotted in self.params or dotted in FUNCTIONS or dotted in ("True", "False", "None"):
            return node
        self.unknown.append(dotted)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        dotted = dotted_name(node)
        if dotted is None:
            self.unknown.append(ast.unparse(node))
            return node
        return self._name(node, dotted)

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self._name(node, node.id)

    def visit_Call(self, node: ast.Call) -> ast.expr:
        # A called name must be one of FUNCTIONS; its arguments are ordinary expressions.
        if not (isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS):
            self.unknown.append(ast.unparse(node.func) + "()")
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        return node


@record
class Expression:
    """A rule expression as written, its rewrite for simpleeval and the facts it reads."""

    text: str
    rewritten: str  # what simpleeval evaluates
    facts: frozenset[str]  # fact names it reads

    def evaluate(self, facts: Mapping[str, object], params: Mapping[str, object]) -> object:
        names: dict[str, object] = dict(params)
        names.update({mangle(name): facts[name] for name in self.facts})
        evaluator = SimpleEval(operators=dict(OPERATORS), names=names, functions=dict(FUNCTIONS))
        return evaluator.eval(self.rewritten)


def compile_expression(
    text: str, facts: frozenset[str], params: frozenset[str] = frozenset()
) -> Expression:
    """Parse ``text``, check every name is a known fact, a param or an allowed function."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("expression must be a non-empty string")
    tree = _check_shape(text)
    rewriter = _FactRewriter(facts, params)
    new_tree = rewriter.visit(tree)
    if rewriter.unknown:
        raise ExpressionError(f"unknown name {rewriter.unknown[0]!r} in {text!r}")
    return Expression(text=text, rewritten=ast.unparse(new_tree), facts=frozenset(rewriter.used))


def _bare_name(text: str) -> bool:
    """``text`` parses as one Name of itself: an ASCII identifier (the parser would not
    normalise it) that is no keyword."""
    return text.isascii() and text.isidentifier() and not iskeyword(text)


def checked_expression(
    text: str, rewritten: str, facts: frozenset[str], known: frozenset[str], params: frozenset[str]
) -> Expression:
    """An Expression as compile_expression made it, read back from a cache: checked again
    (the bounds of the shape, every name a fact of ``facts`` within ``known``, a param or an
    allowed function, nothing else called), so a cache file can hold no more than a rule file
    could. ExpressionError when it is not so."""
    if not facts <= known or len(text) > MAX_TEXT or not text.strip():
        raise ExpressionError("not an expression compile_expression makes")
    names = {mangle(fact) for fact in facts} | params | FUNCTIONS.keys() | {"True", "False", "None"}
    if _bare_name(rewritten) and rewritten in names:
        # what the walk below would find: Expression(Name(rewritten, Load)); half the pack's
        # expressions are one fact, and this is most of reading the cached pack back
        return Expression(text=text, rewritten=rewritten, facts=facts)
    for node in _checked_nodes(rewritten)[1]:
        if isinstance(node, ast.Attribute):  # rewriting left only plain names
            raise ExpressionError("an attribute in a rewritten expression")
        if isinstance(node, ast.Name) and node.id not in names:
            raise ExpressionError(f"unknown name {node.id!r}")
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS
        ):
            raise ExpressionError("a call of something that is not an allowed function")
    return Expression(text=text, rewritten=rewritten, facts=facts)
