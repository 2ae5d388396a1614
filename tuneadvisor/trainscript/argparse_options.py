"""argparse options of a training script, and what a job's launch line passes for them."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import replace

from tuneadvisor.trainscript.node_index import (
    NodeIndex,
    const_str,
    convert_value,
    keyword_arg,
    last_part,
)
from tuneadvisor.trainscript.pyast import dotted_name
from tuneadvisor.trainscript.scans.results import (
    CPU_COUNT,
    ENV,
    LITERAL,
    SLURM_ENV,
    UNKNOWN,
    ArgOption,
    Origin,
    Scalar,
)

# Follows an expression to its origin (`Resolver.resolve`): passed in, so that `resolve`
# imports this module and not the other way round.
Resolve = Callable[[ast.expr], Origin]

_SHELL_VAR = re.compile(r"\$\{?#?([A-Za-z_][A-Za-z0-9_]*)")
_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHELL_COMMAND = re.compile(r"\$\(|`")
_NPROC_COMMAND = re.compile(r"\$\(\s*nproc\s*\)|`\s*nproc\s*`")
_PLAIN_SHELL_VAR = re.compile(r"\$(?:[A-Za-z_]\w*|\{[A-Za-z_]\w*(?::-[^}]*)?\})")


def option_default(option: ArgOption) -> Scalar:
    if option.default is not None:
        value = option.default.value
        # argparse runs string defaults through type=, as it does values from the command line.
        if isinstance(value, str) and option.type_name is not None:
            return _typed_option_value(value, option)
        return value
    if option.action == "store_true":
        return False
    if option.action == "store_false":
        return True
    return None


def _typed_option_value(raw: str, option: ArgOption) -> Scalar:
    convert = {"int": int, "float": float}.get(option.type_name or "")
    if convert is not None:
        return convert_value(raw, convert)
    if option.type_name == "bool":
        return raw != ""  # argparse's type=bool: any non-empty string, even "False", is True
    return raw


def launch_origin(raw: str, option: ArgOption, negated: bool) -> Origin:
    """What a value on the job's launch line is: a number, or a shell variable."""
    if option.action in ("store_true", "store_false", "BooleanOptionalAction"):
        value = option.action != "store_false"
        return Origin(LITERAL, raw, None, value=not value if negated else value)
    bare = raw.strip("\"'")
    names = _shell_variables(bare)
    if names:
        source = SLURM_ENV if names[0].startswith("SLURM_") else ENV
        derived = _PLAIN_SHELL_VAR.fullmatch(bare) is None
        return Origin(source, raw, None, env=names[0], derived=derived)
    if _NPROC_COMMAND.fullmatch(bare):  # nproc counts the cores of the task's affinity mask
        return Origin(CPU_COUNT, raw, None, cpu_call="nproc")
    if _SHELL_COMMAND.search(bare):
        return Origin(UNKNOWN, raw, None)
    return Origin(LITERAL, raw, None, value=_typed_option_value(bare, option))


def _shell_variables(raw: str) -> list[str]:
    """Variables a shell word expands: `$X`, `${X:-1}`, and names inside `$((X - 1))`."""
    names = _SHELL_VAR.findall(raw)
    for expression in _arithmetic(raw):
        names += [name for name in _SHELL_NAME.findall(expression) if name not in names]
    return names


def _arithmetic(raw: str) -> list[str]:
    """What each ``$((...))`` holds, up to its first ``))`` on the same line (what the
    pattern ``\\$\\(\\((.*?)\\)\\)`` found), with str.find: each part of ``raw`` read once."""
    found: list[str] = []
    pos = 0
    while (start := raw.find("$((", pos)) >= 0:
        close = raw.find("))", start + 3)
        if close < 0:  # nor does any later one close
            break
        newline = raw.find("\n", start + 3, close)
        if newline >= 0:  # every "$((" before the line break runs into it
            pos = newline + 1
            continue
        found.append(raw[start + 3 : close])
        pos = close + 2
    return found


def collect_options(index: NodeIndex, resolve: Resolve) -> dict[str, ArgOption]:
    options: dict[str, ArgOption] = {}
    for call in index.calls:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "add_argument":
            option = _option(call, resolve)
            if option is not None:
                options.setdefault(option.dest, option)
    for call in index.calls:  # parser.set_defaults(workers=8) overrides default=
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "set_defaults":
            for kw in call.keywords:
                if kw.arg in options:
                    default = resolve(kw.value)
                    options[kw.arg] = replace(options[kw.arg], default=default)
    return options


def _option(call: ast.Call, resolve: Resolve) -> ArgOption | None:
    flags = tuple(text for arg in call.args if (text := const_str(arg)) is not None)
    if not flags:
        return None
    dest = const_str(keyword_arg(call, "dest")) or _dest(flags)
    default_node = keyword_arg(call, "default")
    type_node = keyword_arg(call, "type")
    action_node = keyword_arg(call, "action")
    action_name = last_part(dotted_name(action_node)) if action_node else None
    action = const_str(action_node) or action_name
    return ArgOption(
        flags=flags,
        dest=dest,
        line=call.lineno,
        default=resolve(default_node) if default_node is not None else None,
        type_name=last_part(dotted_name(type_node)) or None if type_node is not None else None,
        action=action or None,
    )


def _dest(flags: tuple[str, ...]) -> str:
    """argparse's rule: the first long option, else the first short one, dashes to underscores."""
    longs = [flag for flag in flags if flag.startswith("--")]
    chosen = longs[0] if longs else flags[0]
    return chosen.lstrip("-").replace("-", "_")
