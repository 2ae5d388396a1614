"""How long the run is, where the script's own options say: the steps it stops after and the
epochs it trains, each from its argparse option (what the job's launch line passes, else the
option's default). A value the launch line takes from a shell variable, or an option of
another meaning, stays unknown: the time to result is never guessed from it."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeGuard

from tuneadvisor.numbers import ascii_int
from tuneadvisor.trainscript.node_index import NodeIndex
from tuneadvisor.trainscript.resolve import Resolver
from tuneadvisor.trainscript.scans.results import LITERAL, ArgOption, Origin

# argparse dests (``--max-steps`` -> max_steps) that name the run's length in the scripts
# people write (Lightning's, Hugging Face's and the PyTorch examples' spellings)
STEP_DESTS = (
    "max_steps", "num_steps", "total_steps", "train_steps", "training_steps", "steps",
    "max_iters", "max_iter", "num_iters", "iters", "max_iterations", "num_iterations",
    "iterations", "n_steps", "n_iters",
)  # fmt: skip
EPOCH_DESTS = (
    "epochs", "num_epochs", "n_epochs", "max_epochs", "num_train_epochs", "train_epochs",
    "nepochs", "total_epochs",
)  # fmt: skip


@dataclass(frozen=True)
class Length:
    """One of the run's length figures: the value and how it was read (for the reader)."""

    value: int
    how: str  # "--max-steps 120 on the launch line", "--epochs's default 14 (line 280)"


def run_length(resolver: Resolver) -> dict[str, Length]:
    """``{"max_steps": ..., "epochs": ...}``, each where the script's options say it (the
    epochs, else, where the epoch loop counts a literal range)."""
    out: dict[str, Length] = {}
    for key, dests in (("max_steps", STEP_DESTS), ("epochs", EPOCH_DESTS)):
        found = _first(resolver.options, dests)
        if found is not None:
            origin = resolver.argparse(found, found.flags[-1])
            length = _length(found, origin)
            if length is not None:
                out[key] = length
    if "epochs" not in out and (loop := _epoch_loop(resolver.index)) is not None:
        out["epochs"] = loop
    return out


def _epoch_loop(index: NodeIndex) -> Length | None:
    """``for epoch in range(10):`` (or ``range(1, 11)``): the first loop over a range of
    whole-number literals whose variable is an epoch's."""
    for node in index.nodes:
        if not (
            isinstance(node, ast.For)
            and isinstance(node.target, ast.Name)
            and "epoch" in node.target.id.lower()
            and isinstance(node.iter, ast.Call)
            and index.qual(node.iter.func) == "range"
            and not node.iter.keywords
            and 1 <= len(node.iter.args) <= 3
        ):
            continue
        bounds = [
            a.value for a in node.iter.args if isinstance(a, ast.Constant) and _whole(a.value)
        ]
        if len(bounds) != len(node.iter.args):
            continue
        if len(bounds) == 3 and bounds[2] == 0:
            continue
        count = len(range(*bounds))
        if count > 0:
            return Length(count, f"for {node.target.id} in {index.text(node.iter)} (line "
                                 f"{node.lineno})")  # fmt: skip
    return None


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**9


def _first(options: Mapping[str, ArgOption], dests: tuple[str, ...]) -> ArgOption | None:
    for dest in dests:
        option = options.get(dest)
        if option is not None and option.action in (None, "store"):
            return option
    return None


def _length(option: ArgOption, origin: Origin) -> Length | None:
    value = origin.value
    literal = origin.passed_origin is None or origin.passed_origin.source == LITERAL
    if isinstance(value, str) and literal:  # type=positive_int and such: not converted
        value = ascii_int(value.strip("\"'"))
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        return None  # None (no cap), a float, a shell variable: not known
    flag = max(option.flags, key=len)
    if origin.passed is not None:
        return Length(value, f"{flag} {origin.passed} on the launch line")
    return Length(value, f"{flag}'s default {value} (line {option.line})")
