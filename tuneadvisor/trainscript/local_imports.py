"""The modules a training script imports, as the relative paths they would have beside it.

A DataLoader is often built in a helper module next to the training script (`from
dataset_utils import load_cifar100`). Which of these paths exist, and reading them, is the
session's business; this only says where to look, in the order the script imports them.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from tuneadvisor.trainscript.parsed import ParsedScript

if TYPE_CHECKING:
    from tuneadvisor.trainscript.scan import ScriptScan


# Where a script's imports are looked for, at most: two paths per imported name, so the
# first 1,000 names (a real script imports a few dozen); the rest are not followed.
MAX_IMPORT_PATHS = 2000
# A helper module read, at most: one written by hand is a few KiB; its analysis costs about
# 150 times its size in memory, and up to 20 are read beside the script.
MAX_MODULE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class LoaderModule:
    """The local module that builds the training DataLoader."""

    path: str  # as read
    name: str  # relative to the training script's folder, as a patch names it
    text: str
    scan: ScriptScan
    facts: Mapping[str, object]


def _candidates(dotted: str) -> list[PurePosixPath]:
    """`a.b` -> `a/b.py`, `a/b/__init__.py`."""
    parts = [part for part in dotted.split(".") if part]
    if not parts:
        return []
    base = PurePosixPath(*parts)
    return [base.with_name(base.name + ".py"), base / "__init__.py"]


def local_module_paths(
    parsed: ParsedScript, package: PurePosixPath | None = None
) -> list[PurePosixPath]:
    """Relative paths of the modules the script imports (at any nesting: a function's own
    `import` counts), each once, in source order. `from pkg import mod` names both
    `pkg/mod.py` (a module) and `pkg/__init__.py` (the package that defines `mod`); relative
    imports of one level (`from .data import x`) read as siblings: in ``package``, the folder
    of the importing module (`pkg/data.py` importing `.transforms` is `pkg/transforms.py`).
    At most ``MAX_IMPORT_PATHS`` paths, the first ones."""
    if parsed.tree is None:
        return []
    imports = [
        node for node in ast.walk(parsed.tree) if isinstance(node, ast.Import | ast.ImportFrom)
    ]
    imports.sort(key=lambda node: (node.lineno, node.col_offset))
    dotted: list[tuple[str, PurePosixPath]] = []
    top = PurePosixPath()
    package = package if package is not None else top
    for node in imports:
        if isinstance(node, ast.Import):
            dotted += [(alias.name, top) for alias in node.names]
            continue
        if node.level > 1:  # `from ..x import y` leaves the script's folder
            continue
        base = package if node.level == 1 else top
        module = node.module or ""
        prefix = f"{module}." if module else ""
        dotted += [(prefix + alias.name, base) for alias in node.names if alias.name != "*"]
        if module:
            dotted.append((module, base))
    paths: dict[PurePosixPath, None] = {}  # ordered, and a set: 10,000 imports stay linear
    for name, base in dotted:
        for path in _candidates(name):
            paths.setdefault(base / path, None)
            if len(paths) >= MAX_IMPORT_PATHS:
                return list(paths)
    return list(paths)
