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
from dataclasses import dataclass
from typing import Any

from simpleeval import SimpleEval

from tuneadvisor.slurm.units import render_memory
from tuneadvisor.trainscript.pyast import dotted_name


class ExpressionError(ValueError):
    """An expression that does not parse or names something unknown."""


def round_up(value: float, step: float) -> float:
    """The smallest multiple of ``step`` not below ``value`` (memory to whole GiB, say)."""
    if step <= 0:
        raise ValueError("round_up step must be positive")
    return math.ceil(value / step) * step


def clamp(value: float, low: float, high: float) -> float:
    return max(low, min(value, high))


def mem_text(mib: float) -> str:
    """MiB as sbatch reads it, rounded up to whole MiB: 2048 -> "2G", 1536 -> "1536M"."""
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
    "round": round,
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


@dataclass(frozen=True)
class Expression:
    text: str
    rewritten: str  # what simpleeval evaluates
    facts: frozenset[str]  # fact names it reads

    def evaluate(self, facts: Mapping[str, object], params: Mapping[str, object]) -> object:
        names: dict[str, object] = dict(params)
        names.update({mangle(name): facts[name] for name in self.facts})
        evaluator = SimpleEval(names=names, functions=dict(FUNCTIONS))
        return evaluator.eval(self.rewritten)


def compile_expression(
    text: str, facts: frozenset[str], params: frozenset[str] = frozenset()
) -> Expression:
    """Parse ``text``, check every name is a known fact, a param or an allowed function."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("expression must be a non-empty string")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"does not parse: {exc.msg} in {text!r}") from None
    rewriter = _FactRewriter(facts, params)
    new_tree = rewriter.visit(tree)
    if rewriter.unknown:
        raise ExpressionError(f"unknown name {rewriter.unknown[0]!r} in {text!r}")
    return Expression(text=text, rewritten=ast.unparse(new_tree), facts=frozenset(rewriter.used))
