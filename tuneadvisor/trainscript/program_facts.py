"""Facts of the training program as a whole: the script and the local modules it imports,
read together (`script.unknown_option.*`, `script.single_gpu`). The session reads the
modules; this only looks at their parses."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import PurePosixPath

from tuneadvisor.trainscript.cli_parser import read_parser
from tuneadvisor.trainscript.launch_options import unknown_options
from tuneadvisor.trainscript.node_index import NodeIndex
from tuneadvisor.trainscript.parsed import ParsedScript
from tuneadvisor.trainscript.resolve import Resolver
from tuneadvisor.trainscript.resolve_names import Elsewhere
from tuneadvisor.trainscript.scans.devices import device_use
from tuneadvisor.trainscript.scans.results import ArgOption, Origin


def program_facts(
    modules: Sequence[ParsedScript], launch_words: Iterable[str] | None
) -> dict[str, object]:
    """``modules``: the training script first, then its local modules. ``launch_words``: the
    options the job's launch line passes to the script (None without a launch line)."""
    facts: dict[str, object] = {}
    if not modules or modules[0].tree is None:
        return facts
    if launch_words is not None:
        unknown = unknown_options(launch_words, read_parser(modules))
        facts["script.unknown_option.count"] = len(unknown)
        if unknown:
            facts["script.unknown_options"] = "; ".join(u.text for u in unknown)
    use = device_use(modules)
    facts["script.single_gpu"] = use.single and use.line is not None
    if use.single and use.line is not None:
        facts["script.single_gpu.line"] = use.line
    return facts


def module_dotted(name: str) -> str:
    """``pkg/data.py`` -> ``pkg.data``; ``pkg/__init__.py`` -> ``pkg``."""
    parts = PurePosixPath(name).with_suffix("").parts
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


# What one file offers the others: its options, its values, its dicts' keys.
_Offer = tuple[dict[str, ArgOption], dict[str, Origin], dict[str, dict[str, Origin]]]


class ProgramIndex:
    """What each file of the program offers the others (its argparse options and its
    module-level values), each file read once however many files ask."""

    def __init__(self, modules: Sequence[ParsedScript], names: Sequence[str]) -> None:
        self.modules = tuple(modules)
        self.names = tuple(names)
        self._offers: dict[int, _Offer] = {}

    def _offer(self, position: int) -> _Offer:
        if position not in self._offers:
            parsed = self.modules[position]
            options: dict[str, ArgOption] = {}
            values: dict[str, Origin] = {}
            mappings: dict[str, dict[str, Origin]] = {}
            if parsed.tree is not None:
                index = NodeIndex(parsed)
                resolver = Resolver(index, None)
                options = dict(resolver.options)
                prefix = module_dotted(self.names[position])
                for name, value in _module_assignments(parsed.tree):
                    values[f"{prefix}.{name}"] = resolver.resolve(value)
                    held = _module_dict(index, resolver, name, value)
                    if held is not None:
                        mappings[f"{prefix}.{name}"] = held
                    else:
                        mappings.pop(f"{prefix}.{name}", None)
            self._offers[position] = (options, values, mappings)
        return self._offers[position]

    def elsewhere(self, reader: int = 0) -> Elsewhere:
        """What the other files say for the file at ``reader`` (0: the script): the options
        their parsers define, their module-level values, and, for a module the script
        imports, the script's calls of its functions."""
        options: dict[str, ArgOption] = {}
        values: dict[str, Origin] = {}
        mappings: dict[str, dict[str, Origin]] = {}
        for position in range(len(self.modules)):
            if position != reader:
                offered_options, offered_values, offered_mappings = self._offer(position)
                for dest, option in offered_options.items():
                    options.setdefault(dest, option)
                values.update(offered_values)
                mappings.update(offered_mappings)
        calls: tuple[ast.Call, ...] = ()
        first = self.modules[0].tree if self.modules else None
        if reader != 0 and first is not None:
            calls = tuple(n for n in ast.walk(first) if isinstance(n, ast.Call))
        return Elsewhere(options=options, values=values, calls=calls, mappings=mappings)


def _module_dict(
    index: NodeIndex, resolver: Resolver, name: str, value: ast.expr
) -> dict[str, Origin] | None:
    """``LOADER_KWARGS = dict(num_workers=8)``: each key's value, resolved in this module,
    when the name is bound once, unconditionally, and never changed here; its line is this
    module's, none in the file that reads it (a patch there would change the wrong line)."""
    bindings = index.bindings.get(name, [])
    if len(bindings) != 1 or bindings[0].conditional or index.mutations.get(name):
        return None
    mapping = resolver.mapping(value)
    if mapping is None or mapping.opaque:
        return None
    return {
        key: replace(resolver.entry(entry, 0), line=None, via=(name,))
        for key, entry in mapping.entries.items()
    }


def _module_assignments(tree: ast.Module) -> list[tuple[str, ast.expr]]:
    """Unconditional module-level ``NAME = value``, in order (a later one wins)."""
    return [
        (stmt.targets[0].id, stmt.value)
        for stmt in tree.body
        if isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
    ]


def elsewhere_for(
    modules: Sequence[ParsedScript], names: Sequence[str], reader: int = 0
) -> Elsewhere:
    """`ProgramIndex(modules, names).elsewhere(reader)`, for one file."""
    return ProgramIndex(modules, names).elsewhere(reader)


_WHY_UNRESOLVED = {
    "call": "it is what {expr} returns, which the scan does not follow",
    "variable": (
        "{expr} is a name the scan cannot follow to one value (set in another file, "
        "passed in by a caller, or set on several paths)"
    ),
    "unknown": "{expr} is an expression the scan cannot evaluate",
    "env": "it reads {env}, and the job sets no value for it that tuneadvisor sees",
    "argparse": "the launch line passes {passed}, which is only known when the job runs",
}


def unresolved_workers(facts: Mapping[str, object], script: str) -> str | None:
    """The note for a training DataLoader whose worker count the scan could not resolve:
    said, with why, so that the worker rules' silence is not read as "nothing to say"."""
    if "script.num_workers" in facts or "script.dataloader.line" not in facts:
        return None
    source = facts.get("script.num_workers.source")
    template = _WHY_UNRESOLVED.get(source) if isinstance(source, str) else None
    if template is None:
        return None
    expr = facts.get("script.num_workers.expr", "?")
    where = facts.get("script.dataloader.file", script)
    line = facts.get("script.num_workers.line")
    at = f" (line {line}: {expr})" if line is not None else f" ({expr})"
    why = template.format(
        expr=f"`{expr}`",
        env=facts.get("script.num_workers.env", "a variable"),
        passed=f"`{facts.get('script.num_workers.passed', '?')}`",
    )
    return (
        f"{where}: num_workers of the training DataLoader{at} could not be resolved: {why}; "
        "the rules on worker counts do not speak on it"
    )
