"""Small helpers over Python's own AST, shared by line kinds, the script scan and rules."""

from __future__ import annotations

import ast


def dotted_name(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of attribute accesses on a plain name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def final_name(expr: ast.expr) -> str | None:
    """``c`` of ``a.b.c`` or of a plain name ``c``; None for anything else."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


def annotated_types(annotation: ast.expr, depth: int = 0) -> list[ast.expr]:
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
            *annotated_types(annotation.left, depth + 1),
            *annotated_types(annotation.right, depth + 1),
        ]
    if isinstance(annotation, ast.Subscript):
        if final_name(annotation.value) not in ("Optional", "Union", "Annotated"):
            return annotated_types(annotation.value, depth + 1)
        inner = annotation.slice
        parts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        return [t for part in parts for t in annotated_types(part, depth + 1)]
    return [annotation]
