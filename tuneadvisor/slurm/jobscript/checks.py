"""sbatch's checks of a job script: the header it reads, the whole file (empty, no ``#!``,
CRLF, NUL), directives after the first command, near misses, and combinations it refuses."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TypeVar

from tuneadvisor.slurm.jobscript.misspelt import misspelt_magic
from tuneadvisor.slurm.jobscript.syntax import (
    CONFLICTING_DIRECTIVES,
    DEPRECATED_PREFIX,
    DIRECTIVE_AFTER_COMMAND,
    DOS_LINE_BREAKS,
    EMPTY_SCRIPT,
    HETJOB_COMPONENTS,
    IGNORED_DIRECTIVE,
    INVALID_DIRECTIVE,
    MAGIC,
    NOT_A_BATCH_SCRIPT,
    NULL_CHARACTER,
    Directive,
    Line,
    Problem,
    Token,
    is_command,
    scan_directive,
)
from tuneadvisor.slurm.options import (
    C_SPACE,
    CONFLICTING_OPTIONS,
    MEMORY_OPTIONS,
    match_long,
    parse_count,
    parse_nodes,
    short_option,
)
from tuneadvisor.slurm.units import GresItem, gpu_count, parse_gpus, parse_gres

_T = TypeVar("_T")
# Look like a directive but sbatch skips them; `##SBATCH` and `# SBATCH` are deliberate.
_NEAR_MISS = re.compile(r"[ \t]+#SBATCH|#(?!SBATCH)(?i:sbatch)")

# sbatch's own words.
_DOS_MESSAGE = (
    "Batch script contains DOS line breaks (\\r\\n) instead of expected UNIX line breaks (\\n)."
)
_NUL_MESSAGE = "The Slurm controller does not allow scripts that contain a NULL character '\\0'."
_SHEBANG_MESSAGE = (
    "This does not look like a batch script. The first line must start with #! followed by"
    " the path to an interpreter. For instance: #!/bin/sh"
)
_SLURM_PREFIX_MESSAGE = (
    "Change from #SLURM to #SBATCH in your script and verify the options are valid in sbatch"
)


def file_problems(text: str, lines: tuple[Line, ...]) -> list[Problem]:
    """sbatch's checks of the script as a whole, with its messages."""
    problems: list[Problem] = []
    if not text:
        problems.append(Problem(EMPTY_SCRIPT, None, None, "Batch script is empty!", True))
    elif not text.strip(C_SPACE):
        message = "Batch script contains only whitespace!"
        problems.append(Problem(EMPTY_SCRIPT, None, None, message, True))
    elif not text.startswith("#!"):
        problems.append(Problem(NOT_A_BATCH_SCRIPT, 1, None, _SHEBANG_MESSAGE, True))
    crlf = next((line.number for line in lines if line.ending == "\r\n"), None)
    if crlf is not None:
        problems.append(Problem(DOS_LINE_BREAKS, crlf, None, _DOS_MESSAGE, True))
    nul = next((line.number for line in lines if "\0" in line.text), None)
    if nul is not None:
        problems.append(Problem(NULL_CHARACTER, nul, None, _NUL_MESSAGE, True))
    return problems


def _first_option_name(text: str, line: int) -> str | None:
    scan = scan_directive(text, 0, line)
    if not scan.tokens or not scan.tokens[0].value.startswith("-"):
        return None
    value = scan.tokens[0].value
    if value.startswith("--"):
        option = match_long(value[2:].partition("=")[0]).option
    else:
        option = short_option(value[1:2])
    return option.name if option else None


def after_command_problems(lines: Iterable[Line]) -> list[Problem]:
    problems: list[Problem] = []
    for line in lines:
        magic = next((m for m in MAGIC if line.text.startswith(m)), None)
        if magic is None:
            continue
        option = _first_option_name(line.text[len(magic) :], line.number)
        message = f"{magic} line after the first command is ignored by sbatch: {line.text.strip()}"
        problems.append(Problem(DIRECTIVE_AFTER_COMMAND, line.number, option, message, False))
    return problems


def conflicts(directives: list[Directive], components: int) -> list[Problem]:
    """Combinations sbatch refuses before submitting, per hetjob component. Memory options
    carry over from one component to the next (sbatch 22.05.8 refuses ``--mem`` then
    ``hetjob`` then ``--mem-per-cpu``); the others were seen not to."""
    problems: list[Problem] = []
    memory: dict[str, Directive] = {}
    for component in range(components):
        own = {d.name: d for d in directives if d.component == component}
        memory.update((name, d) for name, d in own.items() if name in MEMORY_OPTIONS)
        problems += _conflicts_in({**own, **memory})
    return list({(p.line, p.message): p for p in problems}.values())


def _conflicts_in(last: dict[str, Directive]) -> list[Problem]:
    problems: list[Problem] = []
    for group, message in CONFLICTING_OPTIONS:
        found = [last[name] for name in sorted(group) if name in last]
        if len(found) > 1:
            latest = max(found, key=lambda d: d.token)  # sbatch names the one read last
            problem = Problem(CONFLICTING_DIRECTIVES, latest.line, latest.name, message, True)
            problems.append(problem)
    return problems + _gpu_conflicts(last)


def _gpu_conflicts(last: dict[str, Directive]) -> list[Problem]:
    """The job-spec checks sbatch's GRES code makes on --gpus and --gpus-per-task (the
    common ones; the controller makes more)."""
    per_node_name = "gpus-per-node" if "gpus-per-node" in last else "gres"
    per_node = _typed_value(last.get(per_node_name), _gpus_of(per_node_name))
    found = [
        *_total_gpu_conflicts(last, per_node),
        *_per_task_gpu_conflicts(last, per_node),
    ]
    return [
        Problem(CONFLICTING_DIRECTIVES, last[name].line, name, message, True)
        for name, message in found
    ]


def _total_gpu_conflicts(
    last: dict[str, Directive], per_node: tuple[GresItem, ...] | None
) -> Iterator[tuple[str, str]]:
    gpus = _typed_value(last.get("gpus"), parse_gpus)
    if gpus is None:
        return
    nodes = _typed_value(last.get("nodes"), parse_nodes)
    if nodes is not None and gpu_count(gpus) < nodes.minimum:
        yield "gpus", "Failed to validate job spec, --gpus < -N"
    if not per_node or not gpu_count(per_node):
        return
    total, each = gpu_count(gpus), gpu_count(per_node)
    if len({item.type is None for item in gpus + per_node}) > 1:
        yield "gpus", "Invalid GRES specification (with and without type identification)"
    elif total < each:
        yield "gpus", "Failed to ensure --gpus >= --gres=gpu/--gpus-per-node >= --gpus-per-socket"
    elif total % each:
        yield (
            "gpus",
            "Failed to validate job spec, --gpus is not multiple of --gres=gpu/--gpus-per-node",
        )


def _per_task_gpu_conflicts(
    last: dict[str, Directive], per_node: tuple[GresItem, ...] | None
) -> Iterator[tuple[str, str]]:
    per_task = _typed_value(last.get("gpus-per-task"), parse_gpus)
    if per_task is None:
        return
    if not _counts_tasks(last):
        yield (
            "gpus-per-task",
            "Failed to validate job spec. --gpus-per-task used without either --gpus"
            " or -n/--ntasks is not allowed.",
        )
    if not per_node or not gpu_count(per_node) or not gpu_count(per_task):
        return
    each, task = gpu_count(per_node), gpu_count(per_task)
    tasks = _typed_value(last.get("ntasks-per-node"), parse_count)
    if each % task:
        yield (
            "gpus-per-task",
            "Failed to validate job spec, --gres=gpu/--gpus-per-node not multiple of"
            " --gpus-per-task.",
        )
    elif tasks is not None and each // task != tasks:
        yield (
            "gpus-per-task",
            "Failed to validate job spec. Based on --gres=gpu/--gpus-per-node and"
            " --gpus-per-task requested number of tasks per node differ from"
            " --ntasks-per-node.",
        )


def _counts_tasks(last: dict[str, Directive]) -> bool:
    """sbatch takes a task count for --gpus-per-task from --gpus, --ntasks, --ntasks-per-node
    or a fixed --nodes (not a range): checked with sbatch --test-only on Slurm 22.05.8."""
    if any(name in last for name in ("gpus", "ntasks", "ntasks-per-node")):
        return True
    nodes = _typed_value(last.get("nodes"), parse_nodes)
    return nodes is not None and nodes.maximum == nodes.minimum


def _gpus_of(name: str) -> Callable[[str], tuple[GresItem, ...]]:
    """GPU items of a --gres (other resources left out) or a --gpus-per-node value."""
    if name == "gres":
        return lambda value: tuple(item for item in parse_gres(value) if item.name == "gpu")
    return parse_gpus


def _typed_value(directive: Directive | None, parse: Callable[[str], _T]) -> _T | None:
    if directive is None:
        return None
    try:
        return parse(directive.value)
    except ValueError:
        return None


@dataclass
class Header:
    """The directive lines sbatch reads, cut into arguments."""

    tokens: list[Token] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    first_command: int | None = None
    components: int = 1
    separators: list[int] = field(default_factory=list)  # lines of "#SBATCH hetjob"


def _near_miss(line: Line) -> Problem | None:
    if not _NEAR_MISS.match(line.text) and misspelt_magic(line.text) is None:
        return None
    message = f"sbatch ignores this line (not '#SBATCH' in column 1): {line.text.strip()}"
    return Problem(IGNORED_DIRECTIVE, line.number, None, message, False)


def read_header(lines: tuple[Line, ...]) -> Header:
    header = Header()
    for line in lines:
        magic = next((m for m in MAGIC if line.text.startswith(m)), None)
        if magic is None:
            if is_command(line.text):
                header.first_command = line.number
                return header
            near_miss = _near_miss(line)
            if near_miss:
                header.problems.append(near_miss)
            continue
        if magic == "#SLURM" and not any(p.id == DEPRECATED_PREFIX for p in header.problems):
            problem = Problem(DEPRECATED_PREFIX, line.number, None, _SLURM_PREFIX_MESSAGE, False)
            header.problems.append(problem)
        scan = scan_directive(line.text, len(magic), line.number)
        if scan.separator:
            header.components += 1
            header.separators.append(line.number)
        component = header.components - 1
        header.tokens.extend(replace(token, component=component) for token in scan.tokens)
        if scan.error:
            message = f"line {line.number}: {scan.error}"
            header.problems.append(Problem(INVALID_DIRECTIVE, line.number, None, message, True))
    return header


def hetjob_problem(separators: list[int]) -> Iterator[Problem]:
    if separators:
        message = (
            f"heterogeneous job with {len(separators) + 1} components: only the first"
            " component's directives are read here"
        )
        yield Problem(HETJOB_COMPONENTS, separators[0], None, message, False)
