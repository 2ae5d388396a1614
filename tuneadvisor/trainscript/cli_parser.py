"""The command-line parser a training script builds with argparse, as far as its source shows
it: the option strings it defines, and whether it is closed (every option it accepts is in
those strings) or open (``parse_known_args``, parents, subcommands, options added by code
the scan cannot read). Only a closed parser lets the advisor say an option is unknown.

The parser may be built in a local module the script imports (``from config import
get_args``): the options of every module read are pooled, as argparse would pool them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

from tuneadvisor.trainscript.node_index import const_str, keyword_arg
from tuneadvisor.trainscript.parsed import ParsedScript
from tuneadvisor.trainscript.pyast import dotted_name, final_name

# Calls on a parser that leave its options as they are (or only add ones the scan reads).
_PARSER_METHODS = frozenset(
    {
        "add_argument",
        "add_argument_group",
        "add_mutually_exclusive_group",
        "set_defaults",
        "parse_args",
        "print_help",
        "print_usage",
        "error",
        "format_help",
        "get_default",
    }
)


# Libraries that add options argparse's add_argument calls do not show (dataclass fields,
# config files, nested keys), or read the command line themselves.
_OTHER_PARSERS = frozenset(
    {
        "jsonargparse",
        "simple_parsing",
        "tap",
        "hydra",
        "omegaconf",
        "absl",
        "fire",
        "click",
        "typer",
        "docopt",
    }
)
_OTHER_PARSER_CLASSES = frozenset({"HfArgumentParser", "LightningCLI"})


@dataclass(frozen=True)
class CliParser:
    """What the modules read say about the script's argparse parser."""

    flags: frozenset[str] = frozenset()  # every option string added
    parses: bool = False  # parse_args() reads the command line
    # Why an option absent from `flags` may still be accepted; None when none is known.
    open_reason: str | None = None
    allow_abbrev: bool = True  # argparse accepts unique prefixes of long options

    @property
    def closed(self) -> bool:
        return self.parses and self.open_reason is None and bool(self.flags)


def read_parser(modules: Iterable[ParsedScript]) -> CliParser:
    """The parser as the script and the local modules it imports build it together."""
    flags: set[str] = set()
    parses = False
    reasons: list[str] = []
    allow_abbrev = True
    trees = [parsed.tree for parsed in modules if parsed.tree is not None]
    defined = {
        node.name
        for tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    for tree in trees:
        names = _parser_names(tree)
        for node in ast.walk(tree):
            if _is_sys_argv(node):
                reasons.append("the script reads or changes sys.argv itself")
            other = _other_parser(node)
            if other is not None:
                reasons.append(f"the program also uses {other}, whose options the scan cannot read")
            if not isinstance(node, ast.Call):
                continue
            callee = dotted_name(node.func) or ""
            method = final_name(node.func) or ""
            if method == "ArgumentParser":
                allow_abbrev = allow_abbrev and _allows_abbrev(node)
                reasons += _constructor_opens(node)
            elif method == "add_argument":
                added = [const_str(arg) for arg in node.args]
                if any(a is None for a in added) or not node.args:
                    reasons.append("an add_argument call has option strings the scan cannot read")
                flags.update(a for a in added if a is not None and a.startswith("-"))
            elif method == "parse_args":
                if node.args or keyword_arg(node, "args") is not None:
                    reasons.append("parse_args is given its own list, not the command line")
                else:
                    parses = True
            elif method in ("parse_known_args", "parse_known_intermixed_args"):
                reasons.append(f"the script calls {method}, which accepts unknown options")
            elif method == "add_subparsers":
                reasons.append("the parser has subcommands")
            elif _handed_away(node, method, names, defined):
                reasons.append(f"the parser is handed to {callee}(), which may add options")
    return CliParser(
        frozenset(flags), parses, reasons[0] if reasons else None, allow_abbrev=allow_abbrev
    )


def _other_parser(node: ast.AST) -> str | None:
    """An import of a command-line library other than argparse, or a parser class of one
    (``from transformers import HfArgumentParser``, ``transformers.HfArgumentParser``)."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        modules = [a.name for a in node.names]
        if isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
        found = [m for m in modules if m.split(".")[0] in _OTHER_PARSERS]
        found += [a.name for a in node.names if a.name in _OTHER_PARSER_CLASSES]
        return found[0] if found else None
    if isinstance(node, ast.Attribute) and node.attr in _OTHER_PARSER_CLASSES:
        return node.attr
    return None


def _parser_names(tree: ast.AST) -> set[str]:
    """Names bound to a parser or an argument group (``parser = argparse.ArgumentParser()``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            made = final_name(node.value.func)
            if made in ("ArgumentParser", "add_argument_group", "add_mutually_exclusive_group"):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _handed_away(call: ast.Call, method: str, names: set[str], defined: set[str]) -> bool:
    """The parser given to a function the program does not define (a library's
    ``add_config_arguments(parser)``): options may be added that the scan cannot read."""
    return method not in _PARSER_METHODS and method not in defined and _passes_parser(call, names)


def _passes_parser(call: ast.Call, names: set[str]) -> bool:
    values = [*call.args, *(kw.value for kw in call.keywords)]
    return any(isinstance(v, ast.Name) and v.id in names for v in values)


def _allows_abbrev(call: ast.Call) -> bool:
    value = keyword_arg(call, "allow_abbrev")
    return not (isinstance(value, ast.Constant) and value.value is False)


def _constructor_opens(call: ast.Call) -> list[str]:
    reasons = []
    if keyword_arg(call, "parents") is not None:
        reasons.append("the parser takes options from parent parsers")
    if keyword_arg(call, "fromfile_prefix_chars") is not None:
        reasons.append("the parser reads options from files")
    prefix = keyword_arg(call, "prefix_chars")
    if prefix is not None and const_str(prefix) != "-":
        reasons.append("the parser's options start with other characters than -")
    if any(kw.arg is None for kw in call.keywords):
        reasons.append("the parser is built from **kwargs")
    return reasons


def _is_sys_argv(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and dotted_name(node) == "sys.argv"
