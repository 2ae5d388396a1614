"""Following an expression back to where its value comes from: a literal, a Slurm or other
environment variable, the CPU count, a command-line option (and what the job passes for it),
a call, a name the scan cannot follow. `**kwargs` dicts are read through their literals,
merges and mutations.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from tuneadvisor.trainscript.argparse_options import collect_options, launch_origin, option_default
from tuneadvisor.trainscript.node_index import (
    Mutation,
    NodeIndex,
    ValueBinding,
    const_str,
    convert_value,
    is_number,
    last_part,
)
from tuneadvisor.trainscript.pyast import dotted_name
from tuneadvisor.trainscript.resolve_names import (
    Elsewhere,
    class_attribute,
    held_attribute,
    module_value,
    parameter_value,
)
from tuneadvisor.trainscript.scans.results import (
    ARGPARSE,
    CALL,
    CPU_COUNT,
    DEFAULT,
    DEVICE_COUNT,
    ENV,
    LITERAL,
    SLURM_ENV,
    UNKNOWN,
    VARIABLE,
    ArgOption,
    Origin,
    Scalar,
)

# When an expression mixes sources (min(8, os.cpu_count())), the first of these names it.
_SOURCE_RANK = {
    SLURM_ENV: 0,
    ARGPARSE: 1,
    CPU_COUNT: 2,
    ENV: 3,
    DEVICE_COUNT: 4,
    CALL: 5,
    VARIABLE: 6,
    UNKNOWN: 7,
    DEFAULT: 8,
    LITERAL: 9,
}


MAX_DEPTH = 12  # how many assignments/expressions deep a value is followed
_MAX_RESOLVES = 20_000  # a budget that keeps pathological files fast
_CPU_COUNT_CALLS = frozenset(
    {
        "os.cpu_count",
        "os.process_cpu_count",
        "multiprocessing.cpu_count",
        "torch.multiprocessing.cpu_count",
        "psutil.cpu_count",
    }
)
_ARITHMETIC: Mapping[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
}
_CONVERSIONS: Mapping[str, Callable[[Any], Scalar]] = {
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
}


@dataclass(frozen=True)
class Entry:
    value: ast.expr
    conditional: bool
    origin: Origin | None = None  # already resolved in the module that holds the dict


@dataclass
class KwMap:
    """What a `**kwargs` dict holds; `opaque` when some of its keys cannot be known."""

    entries: dict[str, Entry] = field(default_factory=dict)
    opaque: bool = False

    def merge(self, other: KwMap | None, conditional: bool) -> None:
        if other is None:
            self.opaque = True
            return
        for key, entry in other.entries.items():
            self.entries[key] = Entry(entry.value, entry.conditional or conditional)
        self.opaque = self.opaque or other.opaque


class Resolver:
    """Follows an expression back to where its value comes from."""

    def __init__(
        self,
        index: NodeIndex,
        launch_args: Mapping[str, str] | None,
        elsewhere: Elsewhere | None = None,
    ) -> None:
        self.index = index
        self.launch_args = launch_args
        self._cache: dict[int, Origin] = {}
        self._budget = _MAX_RESOLVES
        self._rules: tuple[Callable[[ast.expr, int], Origin | None], ...] = (
            self._constant,
            self._environment,
            self._counts,
            self._conversion,
            self._min_max,
            self._arithmetic,
            self._if_exp,
            self._subscript,
            self._mapping_get,
            self._reference,
            self._call,
        )
        self.options: dict[str, ArgOption] = {}
        self.elsewhere = elsewhere or Elsewhere()
        self.options = collect_options(index, self.resolve)
        # Options a local module's parser defines (`from config import get_args`): the
        # script reads them as `args.workers` all the same.
        for dest, option in self.elsewhere.options.items():
            self.options.setdefault(dest, option)
        self._cache.clear()  # values resolved before the options were known

    def resolve(self, node: ast.expr, depth: int = 0) -> Origin:
        cached = self._cache.get(id(node))
        if cached is not None:
            return cached
        self._budget -= 1
        origin = None
        if depth <= MAX_DEPTH and self._budget > 0:
            origin = next((o for rule in self._rules if (o := rule(node, depth))), None)
        if origin is None:
            origin = Origin(UNKNOWN, self.index.text(node), node.lineno)
        self._cache[id(node)] = origin
        return origin

    def follow(self, node: ast.expr, depth: int = 0) -> ast.expr:
        """The expression a name was last assigned (through `x if c else y`'s first branch)."""
        if depth > MAX_DEPTH:
            return node
        if isinstance(node, ast.IfExp):
            return self.follow(node.body, depth + 1)
        name = dotted_name(node)
        bindings = self.index.lookup(name, node) if name is not None else []
        return self.follow(bindings[0].value, depth + 1) if bindings else node

    # ---- the rules, tried in order

    def _constant(self, node: ast.expr, depth: int) -> Origin | None:
        if isinstance(node, ast.Constant):
            value = node.value
            if value is None or isinstance(value, int | float | str):  # bool is an int
                return Origin(LITERAL, self.index.text(node), node.lineno, value=value)
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and isinstance(node.operand.value, int | float)
            and not isinstance(node.operand.value, bool)
        ):
            return Origin(LITERAL, self.index.text(node), node.lineno, value=-node.operand.value)
        return None

    def _environment(self, node: ast.expr, depth: int) -> Origin | None:
        read = self.index.env_read(node)
        if read is None:
            return None
        name, default = read
        source = SLURM_ENV if name is not None and name.startswith("SLURM_") else ENV
        fallback = self.resolve(default, depth + 1).value if default is not None else None
        text = self.index.text(node)
        return Origin(source, text, node.lineno, env=name, env_default=fallback)

    def _counts(self, node: ast.expr, depth: int) -> Origin | None:
        if not isinstance(node, ast.Call):
            return None
        qual = self.index.qual(node.func) or ""
        text = self.index.text(node)
        if qual in _CPU_COUNT_CALLS:
            return Origin(CPU_COUNT, text, node.lineno, cpu_call=qual)
        if (
            qual == "len"
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Call)
            and last_part(self.index.qual(node.args[0].func)) == "sched_getaffinity"
        ):
            return Origin(CPU_COUNT, text, node.lineno, cpu_call="os.sched_getaffinity")
        if qual.endswith("cuda.device_count") or qual == "torch.accelerator.device_count":
            return Origin(DEVICE_COUNT, text, node.lineno, call=qual)
        return None

    def _conversion(self, node: ast.expr, depth: int) -> Origin | None:
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _CONVERSIONS
            and len(node.args) == 1
            and not node.keywords
        ):
            return None
        convert = _CONVERSIONS[node.func.id]
        inner = self.resolve(node.args[0], depth + 1)
        return replace(
            inner,
            expr=self.index.text(node),
            value=convert_value(inner.value, convert),
            env_default=convert_value(inner.env_default, convert),
        )

    def _min_max(self, node: ast.expr, depth: int) -> Origin | None:
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("min", "max")
            and len(node.args) >= 2
            and not node.keywords
            and not any(isinstance(arg, ast.Starred) for arg in node.args)
        ):
            return None
        parts = [self.resolve(arg, depth + 1) for arg in node.args]
        numbers = [part.value for part in parts if is_number(part.value)]
        pick = min if node.func.id == "min" else max
        value = pick(cast(list[float], numbers)) if len(numbers) == len(parts) else None
        return self._combine(node, parts, value)

    def _arithmetic(self, node: ast.expr, depth: int) -> Origin | None:
        if not isinstance(node, ast.BinOp) or type(node.op) not in _ARITHMETIC:
            return None
        left = self.resolve(node.left, depth + 1)
        right = self.resolve(node.right, depth + 1)
        value: Scalar = None
        if is_number(left.value) and is_number(right.value):
            try:
                value = _ARITHMETIC[type(node.op)](left.value, right.value)
            except (ZeroDivisionError, OverflowError):
                value = None
        return self._combine(node, [left, right], value)

    def _combine(self, node: ast.expr, parts: list[Origin], value: Scalar) -> Origin:
        """One origin for an expression of several: literal only when all parts are."""
        conditional = any(part.conditional for part in parts)
        text = self.index.text(node)
        if all(part.source == LITERAL for part in parts):
            return Origin(LITERAL, text, parts[0].line, value=value, conditional=conditional)
        lead = min(
            (part for part in parts if part.source != LITERAL),
            key=lambda part: _SOURCE_RANK[part.source],
        )
        return replace(lead, expr=text, value=value, derived=True, conditional=conditional)

    def _if_exp(self, node: ast.expr, depth: int) -> Origin | None:
        # `1 if use_cuda else 0`: the first branch is the one a GPU job takes, by convention.
        if not isinstance(node, ast.IfExp):
            return None
        chosen = self.resolve(node.body, depth + 1)
        if chosen.source == LITERAL and chosen.value is None:
            chosen = self.resolve(node.orelse, depth + 1)
        return replace(chosen, conditional=True)

    def _subscript(self, node: ast.expr, depth: int) -> Origin | None:
        if not isinstance(node, ast.Subscript) or not isinstance(node.ctx, ast.Load):
            return None
        key = const_str(node.slice)
        mapping = self.mapping(node.value, depth + 1) if key is not None else None
        if mapping is None or key is None or key not in mapping.entries:
            return None
        return self.entry(mapping.entries[key], depth)

    def _mapping_get(self, node: ast.expr, depth: int) -> Origin | None:
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
        ):
            return None
        key = const_str(node.args[0])
        mapping = self.mapping(node.func.value, depth + 1) if key is not None else None
        if mapping is None or key is None:
            return None
        if key in mapping.entries:
            return self.entry(mapping.entries[key], depth)
        if not mapping.opaque and len(node.args) > 1:
            return self.resolve(node.args[1], depth + 1)
        return None

    def entry(self, entry: Entry, depth: int) -> Origin:
        """What one `**kwargs` entry holds (conditional when the entry is)."""
        origin = entry.origin or self.resolve(entry.value, depth + 1)
        return replace(origin, conditional=origin.conditional or entry.conditional)

    def _reference(self, node: ast.expr, depth: int) -> Origin | None:
        name = dotted_name(node)
        if name is None:
            return None
        bindings = self.index.lookup(name, node)
        if bindings:
            return self._through_bindings(name, bindings, depth)
        option = self._option_for(node, name)
        if option is not None:
            return self.argparse(option, self.index.text(node))
        found = parameter_value(self.index, node, self.elsewhere.calls)
        found = found or class_attribute(self.index, node) or held_attribute(self.index, node)
        if found is not None:
            origin = self.resolve(found.node, depth + 1)
            return replace(origin, via=(found.via, *origin.via))
        value = module_value(self.index, node, self.elsewhere.values)
        if value is not None:  # its line is the other module's: none here
            return replace(value, expr=self.index.text(node), line=None, via=(name,))
        return Origin(VARIABLE, self.index.text(node), node.lineno)

    def _through_bindings(self, name: str, bindings: list[ValueBinding], depth: int) -> Origin:
        # `sampler = None` in an else branch must not hide `sampler = DistributedSampler(...)`
        # in the if branch: None means "not set", so a set value wins.
        first: Origin | None = None
        for binding in bindings:
            origin = self.resolve(binding.value, depth + 1)
            origin = replace(
                origin,
                via=(name, *origin.via),
                conditional=origin.conditional or binding.conditional,
            )
            if not (origin.source == LITERAL and origin.value is None):
                return origin
            first = first or origin
        assert first is not None
        return first

    def _option_for(self, node: ast.expr, name: str) -> ArgOption | None:
        """`args.workers` -> the option with dest `workers` (not `self.workers`, not `torch.x`)."""
        if not isinstance(node, ast.Attribute):
            return None
        root = name.split(".")[0]
        if root in self.index.imports or name == f"self.{node.attr}":
            return None
        return self.options.get(node.attr)

    def _call(self, node: ast.expr, depth: int) -> Origin | None:
        if not isinstance(node, ast.Call):
            return None
        qual = self.index.qual(node.func)
        return Origin(CALL, self.index.text(node), node.lineno, call=qual)

    # ---- argparse

    def argparse(self, option: ArgOption, text: str) -> Origin:
        """The option's value: what the launch line passes, else its default."""
        raw, negated = self._passed(option)
        passed = None if raw is None else launch_origin(raw, option, negated)
        value = passed.value if passed is not None else option_default(option)
        return Origin(
            ARGPARSE,
            text,
            option.line,
            value=value,
            option=option,
            passed=raw,
            passed_origin=passed,
        )

    def _passed(self, option: ArgOption) -> tuple[str | None, bool]:
        """The launch line's value for `option` and whether it is a `--no-...` form."""
        if self.launch_args is None:
            return None, False
        for flag in option.flags:
            if flag in self.launch_args:
                return self.launch_args[flag], False
            negative = "--no-" + flag[2:]
            if flag.startswith("--") and negative in self.launch_args:
                return self.launch_args[negative], True
        # argparse also takes any unambiguous prefix of a long option.
        for key, raw in self.launch_args.items():
            if not key.startswith("--") or len(key) < 3:
                continue
            owners = {o.dest for o in self.options.values() for f in o.flags if f.startswith(key)}
            if owners == {option.dest}:
                return raw, False
        return None, False

    # ---- **kwargs dicts

    def mapping(self, node: ast.expr, depth: int = 0) -> KwMap | None:
        """What a dict expression holds, or None when it cannot be read at all."""
        self._budget -= 1
        if depth > MAX_DEPTH or self._budget <= 0:
            return None
        if isinstance(node, ast.Dict):
            return self._dict_display(node, depth)
        if isinstance(node, ast.Call) and self.index.qual(node.func) == "dict":
            return self._dict_call(node, depth)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            result = KwMap()
            result.merge(self.mapping(node.left, depth + 1), conditional=False)
            result.merge(self.mapping(node.right, depth + 1), conditional=False)
            return result
        if isinstance(node, ast.IfExp):
            return self._conditional_mapping(node, depth)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            returned = self._returned_by(node.func.id)
            return self.mapping(returned, depth + 1) if returned is not None else None
        name = dotted_name(node)
        return self._named_mapping(name, node, depth) if name is not None else None

    def _returned_by(self, function: str) -> ast.expr | None:
        """What a module-level function of this file returns, when it has one return:
        `**loader_kwargs(args)` building the DataLoader settings in a helper."""
        for stmt in self.index.tree.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == function:
                returns = [
                    node
                    for node in ast.walk(stmt)
                    if isinstance(node, ast.Return)
                    and node.value is not None
                    and self.index.scopes.scope_of(node) is stmt
                ]
                return returns[0].value if len(returns) == 1 else None
        return None

    def _dict_display(self, node: ast.Dict, depth: int) -> KwMap:
        result = KwMap()
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:  # {**other}
                result.merge(self.mapping(value, depth + 1), conditional=False)
            elif (text := const_str(key)) is not None:
                result.entries[text] = Entry(value, False)
            else:
                result.opaque = True
        return result

    def _dict_call(self, node: ast.Call, depth: int) -> KwMap:
        result = KwMap()
        for arg in node.args:
            result.merge(self.mapping(arg, depth + 1), conditional=False)
        self._merge_keywords(result, node.keywords, False, depth)
        return result

    def _merge_keywords(
        self, result: KwMap, keywords: Sequence[ast.keyword], conditional: bool, depth: int
    ) -> None:
        for kw in keywords:
            if kw.arg is None:
                result.merge(self.mapping(kw.value, depth + 1), conditional)
            else:
                result.entries[kw.arg] = Entry(kw.value, conditional)

    def _conditional_mapping(self, node: ast.IfExp, depth: int) -> KwMap:
        # `{'num_workers': 1, 'pin_memory': True} if use_cuda else {}` (older mnist example)
        result = KwMap()
        result.merge(self.mapping(node.body, depth + 1), conditional=True)
        other = self.mapping(node.orelse, depth + 1)
        if other is None:
            result.opaque = True
            return result
        for key, entry in other.entries.items():
            result.entries.setdefault(key, Entry(entry.value, True))
        result.opaque = result.opaque or other.opaque
        return result

    def _named_mapping(self, name: str, node: ast.expr, depth: int) -> KwMap | None:
        bindings = self.index.lookup(name, node)
        if not bindings:
            return self._imported_mapping(name, node)
        binding = bindings[0]
        result = KwMap()
        result.merge(self.mapping(binding.value, depth + 1), conditional=binding.conditional)
        for mutation in self.index.mutations_after(name, binding, node):
            self._apply(result, mutation, depth)
        return result

    def _imported_mapping(self, name: str, node: ast.expr) -> KwMap | None:
        """`config.LOADER_KWARGS` (or `LOADER_KWARGS` from `from config import`): the dict a
        local module defines, unless this file changes it (then it is not followed)."""
        qual = self.index.qual(node)
        held = self.elsewhere.mappings.get(qual) if qual is not None else None
        if held is None or self.index.mutations.get(name):
            return None
        return KwMap({key: Entry(node, False, origin) for key, origin in held.items()})

    def _apply(self, result: KwMap, mutation: Mutation, depth: int) -> None:
        if mutation.delete and mutation.key is not None:
            result.entries.pop(mutation.key, None)
        elif mutation.key is not None and mutation.value is not None:
            result.entries[mutation.key] = Entry(mutation.value, mutation.conditional)
        else:  # d.update(other, key=value)
            if mutation.value is not None:
                result.merge(self.mapping(mutation.value, depth + 1), mutation.conditional)
            self._merge_keywords(result, mutation.keywords, mutation.conditional, depth)
