"""AMP (autocast, GradScaler, deprecated spellings, dtype) and the other runtime settings a
training script makes: cudnn.benchmark, torch.set_num_threads, OMP_NUM_THREADS."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tuneadvisor.trainscript.node_index import (
    NodeIndex,
    argument,
    const_str,
    keyword_arg,
    last_part,
)
from tuneadvisor.trainscript.resolve import Resolver
from tuneadvisor.trainscript.scans.results import AmpScan, AmpUse, Origin

_DTYPES = {"torch.bfloat16": "bf16", "torch.float16": "fp16", "torch.half": "fp16"}
_DTYPE_STRINGS = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16"}
_DEPRECATED_AMP = ("torch.cuda.amp", "torch.cpu.amp")


def scan_amp(index: NodeIndex, resolver: Resolver) -> AmpScan:
    uses = [*_deprecated_imports(index)]
    for call in index.calls:
        qual = index.qual(call.func) or ""
        last = last_part(qual)
        if last not in ("autocast", "GradScaler"):
            continue
        deprecated = qual.startswith(_DEPRECATED_AMP)
        enabled_node = keyword_arg(call, "enabled")
        enabled = resolver.resolve(enabled_node).value if enabled_node is not None else None
        uses.append(
            AmpUse(
                line=call.lineno,
                name=qual,
                kind="autocast" if last == "autocast" else "grad_scaler",
                deprecated=deprecated,
                enabled=enabled if isinstance(enabled, bool) else None,
                dtype=_autocast_dtype(index, resolver, call, qual) if last == "autocast" else None,
            )
        )
    return AmpScan(uses=tuple(sorted(uses, key=lambda u: u.line)), dtype_lines=_dtype_lines(index))


def _deprecated_imports(index: NodeIndex) -> Iterator[AmpUse]:
    for node in index.import_nodes:
        if isinstance(node, ast.ImportFrom):
            modules = [f"{node.module}.{alias.name}" for alias in node.names if node.module]
        else:
            modules = [alias.name for alias in node.names]
        for module in modules:
            if module.startswith(_DEPRECATED_AMP):
                yield AmpUse(node.lineno, module, "import", True)
                break


def _autocast_dtype(index: NodeIndex, resolver: Resolver, call: ast.Call, qual: str) -> str | None:
    deprecated = qual.startswith(_DEPRECATED_AMP)
    node = keyword_arg(call, "dtype")
    if node is None and not deprecated and len(call.args) > 1:
        node = call.args[1]  # torch.autocast(device_type, dtype, ...)
    if node is not None:
        target = resolver.follow(node)
        return _DTYPES.get(index.qual(target) or "") or _DTYPE_STRINGS.get(const_str(target) or "")
    if deprecated:  # torch.cuda.amp.autocast defaults to fp16, torch.cpu.amp to bf16
        return "fp16" if qual.startswith("torch.cuda.") else "bf16"
    device = argument(call, "device_type", 0)
    value = resolver.resolve(device).value if device is not None else None
    return {"cuda": "fp16", "cpu": "bf16"}.get(value) if isinstance(value, str) else None


def _dtype_lines(index: NodeIndex) -> dict[str, tuple[int, ...]]:
    lines: dict[str, list[int]] = {}
    for node in index.nodes:
        if isinstance(node, ast.Attribute):
            dtype = _DTYPES.get(index.qual(node) or "")
            if dtype is not None:
                lines.setdefault(dtype, []).append(node.lineno)
    return {dtype: tuple(sorted(found)) for dtype, found in lines.items()}


# --- cudnn.benchmark, torch threads, OMP_NUM_THREADS -----------------------------------------


def scan_misc(
    index: NodeIndex, resolver: Resolver
) -> tuple[Origin | None, Origin | None, Origin | None]:
    """cudnn.benchmark, torch.set_num_threads and OMP_NUM_THREADS: the last setting wins."""
    cudnn: Origin | None = None
    threads: Origin | None = None
    omp: Origin | None = None
    for target, value, _stmt in index.assigns:
        if index.qual(target) == "torch.backends.cudnn.benchmark":
            cudnn = resolver.resolve(value)
        elif _is_omp_item(index, target):
            omp = resolver.resolve(value)
    for call in index.calls:
        qual = index.qual(call.func) or ""
        if qual.startswith("torch") and qual.endswith(".set_num_threads") and call.args:
            threads = resolver.resolve(call.args[0])
        elif (
            qual in ("os.environ.setdefault", "os.putenv")
            and len(call.args) == 2
            and const_str(call.args[0]) == "OMP_NUM_THREADS"
        ):
            omp = resolver.resolve(call.args[1])
    return cudnn, threads, omp


def _is_omp_item(index: NodeIndex, target: ast.expr) -> bool:
    return (
        isinstance(target, ast.Subscript)
        and index.qual(target.value) == "os.environ"
        and const_str(target.slice) == "OMP_NUM_THREADS"
    )
