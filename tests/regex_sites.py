"""Every regular expression the package compiles or runs, found in its source (issue 34,
class 5): each ``re.compile/search/match/fullmatch/findall/finditer/sub/subn/split`` call,
its pattern evaluated in its module (constants and f-strings of module constants), and every
compiled pattern a module holds at its top level (in a tuple, a list, a dict or a frozen
dataclass too, as slurm/joblog/causes.py's CAUSES)."""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tuneadvisor"
CALLS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"}


@dataclass(frozen=True)
class Site:
    where: str  # path:line, or module.NAME for a compiled pattern found at the top level
    pattern: str | bytes | None  # None: not a constant this can evaluate
    flags: int
    anchored: bool  # re.match / re.fullmatch: tried from the start only


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    return ".".join(rel.parts).removesuffix(".__init__")


def _evaluate(node: ast.expr, namespace: dict[str, object]) -> object:
    try:
        # the package's own source, read to find its patterns: trusted code, not input
        return eval(compile(ast.Expression(node), "<pattern>", "eval"), dict(namespace))  # noqa: S307
    except Exception:  # noqa: BLE001 - an expression that is no constant is skipped
        return None


@functools.cache
def _methods() -> dict[str, set[str]]:
    """name -> the methods called on it anywhere in the package (``NAME.match(``...)."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for name, method in re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*)\.([a-z]+)\(", path.read_text()):
            found.setdefault(name, set()).add(method)
    return found


def only_matched(name: str) -> bool:
    """Every use of the compiled pattern ``name`` in the package is ``.match`` or
    ``.fullmatch``: it is tried from one place only, whatever its shape."""
    uses = _methods().get(name, set())
    return bool(uses) and uses <= {"match", "fullmatch"}


def call_sites() -> Iterator[Site]:
    for path in sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__main__.py"):
        tree = ast.parse(path.read_text(), str(path))
        namespace: dict[str, object] | None = None
        # re.compile(...) assigned to a module-level name: how that name is used
        assigned = {
            id(node.value): node.targets[0].id
            for node in tree.body
            if isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        }
        assigned.update(
            {
                id(node.value): node.target.id
                for node in tree.body
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
            }
        )
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "re"
                and node.func.attr in CALLS
                and node.args
            ):
                continue
            if namespace is None:
                namespace = vars(importlib.import_module(_module_name(path)))
            where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
            pattern = _evaluate(node.args[0], namespace)
            flag_node = next((k.value for k in node.keywords if k.arg == "flags"), None)
            position = {"sub": 3, "subn": 3, "split": 2}.get(node.func.attr, 1)
            if flag_node is None and len(node.args) > position:
                flag_node = node.args[position]
            flags = _evaluate(flag_node, namespace) if flag_node is not None else 0
            yield Site(
                where,
                pattern if isinstance(pattern, str | bytes) else None,
                int(flags) if isinstance(flags, int) else 0,
                node.func.attr in ("match", "fullmatch")
                or (node.func.attr == "compile" and only_matched(assigned.get(id(node), ""))),
            )


def _patterns_in(value: object, depth: int = 0) -> Iterator[re.Pattern[str] | re.Pattern[bytes]]:
    if isinstance(value, re.Pattern):
        yield value
    elif depth > 3:
        return
    elif isinstance(value, tuple | list | frozenset | set):
        for item in value:
            yield from _patterns_in(item, depth + 1)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _patterns_in(item, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            yield from _patterns_in(getattr(value, item.name), depth + 1)


def module_patterns() -> Iterator[Site]:
    for path in sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__main__.py"):
        name = _module_name(path)
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if getattr(value, "__module__", name) not in (name, None) and not isinstance(
                value, tuple | list | dict | re.Pattern
            ):
                continue
            for found in _patterns_in(value):
                yield Site(f"{name}.{attr}", found.pattern, found.flags, only_matched(attr))
