"""The DataLoaders of a training script: each construction and its settings, which one is
the training loader, and the loops over loaders (a step loop's body runs once per step)."""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import TypeAlias

from tuneadvisor.trainscript.names import LOOP_WRAPPERS, is_eval_name, is_loader_name, is_train_name
from tuneadvisor.trainscript.node_index import NodeIndex, const_str, last_part, pos_of, walk_body
from tuneadvisor.trainscript.pyast import dotted_name
from tuneadvisor.trainscript.resolve import MAX_DEPTH, Entry, Resolver
from tuneadvisor.trainscript.scans.results import (
    DEFAULT,
    LOADER_PARAMS,
    UNKNOWN,
    ArgumentsEnd,
    DataLoaderScan,
    LoaderLoop,
    Origin,
    Scalar,
)

Loop: TypeAlias = ast.For | ast.AsyncFor
# torch.utils.data.DataLoader's defaults and positional order (prefetch_factor and
# persistent_workers are keyword-only).
_LOADER_DEFAULTS: Mapping[str, Scalar] = {
    "num_workers": 0,
    "pin_memory": False,
    "persistent_workers": False,
    "prefetch_factor": None,
    "batch_size": 1,
    "sampler": None,
}
_LOADER_POSITIONAL = (
    "dataset",
    "batch_size",
    "shuffle",
    "sampler",
    "batch_sampler",
    "num_workers",
    "collate_fn",
    "pin_memory",
    "drop_last",
    "timeout",
    "worker_init_fn",
    "multiprocessing_context",
    "generator",
)


def find_loaders(index: NodeIndex, resolver: Resolver) -> list[DataLoaderScan]:
    loaders = []
    for call in index.calls:
        if last_part(index.qual(call.func)) != "DataLoader":
            continue
        loaders.append(
            DataLoaderScan(
                line=call.lineno,
                end_line=call.end_lineno or call.lineno,
                name=_loader_name(index, call),
                function=index.scopes.function_name(call),
                params=loader_params(resolver, call),
                arguments_end=arguments_end(index, call),
            )
        )
    return loaders


def arguments_end(index: NodeIndex, call: ast.Call) -> ArgumentsEnd | None:
    """The call's last argument, where a patch adds a keyword after it."""
    arguments: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    if not arguments:
        return None
    last = max(arguments, key=lambda node: (node.end_lineno or 0, node.end_col_offset or 0))
    if last.end_lineno is None or last.end_col_offset is None:
        return None
    before = (
        index.lines[last.lineno - 1][: last.col_offset] if last.lineno <= len(index.lines) else b""
    )
    own_line = last.lineno > call.lineno and not before.strip()
    return ArgumentsEnd(
        last.lineno, last.end_lineno, last.col_offset, last.end_col_offset, own_line
    )


def _loader_name(index: NodeIndex, call: ast.Call) -> str | None:
    """The name a DataLoader is assigned to, or its key in a dict display."""
    node: ast.AST = call
    element: int | None = None
    parent = index.scopes.parents.get(node)
    while parent is not None and not isinstance(parent, ast.stmt):
        if isinstance(parent, ast.Dict):
            for key, value in zip(parent.keys, parent.values, strict=True):
                if value is node and (text := const_str(key)) is not None:
                    return text
        if isinstance(parent, ast.Tuple):
            element = next((i for i, e in enumerate(parent.elts) if e is node), None)
        node, parent = parent, index.scopes.parents.get(parent)
    target: ast.expr | None = None
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
        target = parent.targets[0]
    elif isinstance(parent, ast.AnnAssign):
        target = parent.target
    if isinstance(target, ast.Tuple) and element is not None and element < len(target.elts):
        target = target.elts[element]
    return dotted_name(target) if target is not None else None


def pick_train_loader(loaders: list[DataLoaderScan], loops: list[LoaderLoop]) -> int | None:
    """The training DataLoader: named train*, else iterated by a training loop, else the first
    that is not named val/test, else the first."""
    if not loaders:
        return None
    names = [last_part(loader.name).lower() for loader in loaders]
    trained = {last_part(loop.name).lower() for loop in loops if loop.training and loop.name}
    choices = (
        (i for i, name in enumerate(names) if is_train_name(name)),
        (i for i, name in enumerate(names) if name and name in trained),
        (i for i, ld in enumerate(loaders) if is_train_name(ld.function or "")),
        (i for i, name in enumerate(names) if not is_eval_name(name)),
    )
    for candidates in choices:
        found = next(candidates, None)
        if found is not None:
            return found
    return 0


def loader_params(resolver: Resolver, call: ast.Call) -> dict[str, Origin]:
    given, opaque = _loader_arguments(resolver, call)
    params: dict[str, Origin] = {}
    for param in LOADER_PARAMS:
        entry = given.get(param)
        if entry is not None:
            params[param] = resolver.entry(entry, 0)
        elif opaque is not None:  # could be in *args / **kwargs the scan cannot read
            params[param] = Origin(UNKNOWN, opaque, call.lineno)
        else:
            params[param] = Origin(DEFAULT, "", call.lineno, value=_LOADER_DEFAULTS[param])
    return params


def _loader_arguments(resolver: Resolver, call: ast.Call) -> tuple[dict[str, Entry], str | None]:
    given: dict[str, Entry] = {}
    opaque: str | None = None
    for position, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            opaque = resolver.index.text(arg)
            break
        if position < len(_LOADER_POSITIONAL):
            given[_LOADER_POSITIONAL[position]] = Entry(arg, False)
    for kw in call.keywords:
        if kw.arg is not None:
            given[kw.arg] = Entry(kw.value, False)
            continue
        mapping = resolver.mapping(kw.value)
        if mapping is None or mapping.opaque:
            opaque = opaque or "**" + resolver.index.text(kw.value)
        for key, entry in (mapping.entries if mapping else {}).items():
            given.setdefault(key, entry)
    return given, opaque


def find_loops(index: NodeIndex, loaders: list[DataLoaderScan]) -> dict[Loop, LoaderLoop]:
    """Every `for ... in <DataLoader>` loop, keyed by its node."""
    loader_names = {last_part(loader.name).lower() for loader in loaders if loader.name}
    loops: dict[Loop, LoaderLoop] = {}
    nodes = [n for n in index.nodes if isinstance(n, ast.For | ast.AsyncFor)]
    for node in sorted(nodes, key=pos_of):
        iterable = _unwrap_iterable(index, node.iter)
        name = _iterable_name(iterable)
        direct = (
            isinstance(iterable, ast.Call) and last_part(index.qual(iterable.func)) == "DataLoader"
        )
        if not direct and not _looks_like_loader(last_part(name).lower(), loader_names):
            continue
        training = _calls_backward(node.body) or is_train_name(name or "")
        loops[node] = LoaderLoop(node.lineno, index.text(node.iter), name, training)
    return loops


def _unwrap_iterable(index: NodeIndex, node: ast.expr) -> ast.expr:
    """`enumerate(tqdm(loader))` -> `loader`; `pbar = tqdm(loader)`, `enumerate(pbar)` too."""
    for _ in range(MAX_DEPTH):
        if (
            isinstance(node, ast.Call)
            and node.args
            and last_part(index.qual(node.func)) in LOOP_WRAPPERS
            and not isinstance(node.args[0], ast.Starred)
        ):
            node = node.args[0]
            continue
        name = dotted_name(node)
        bindings = index.lookup(name, node) if name is not None else []
        value = bindings[0].value if bindings else None
        if not isinstance(value, ast.Call):
            break
        if last_part(index.qual(value.func)) not in LOOP_WRAPPERS:
            break
        node = value
    return node


def _iterable_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Subscript):  # dataloaders[phase]
        node = node.value
    if isinstance(node, ast.Call):  # self.train_dataloader(), get_loader(...)
        node = node.func
    return dotted_name(node)


def _looks_like_loader(name: str, loader_names: set[str]) -> bool:
    return bool(name) and (name in loader_names or is_loader_name(name))


def _calls_backward(body: Sequence[ast.stmt]) -> bool:
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "backward"
        for node in walk_body(body)
    )
