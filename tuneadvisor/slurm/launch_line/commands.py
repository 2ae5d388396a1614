"""Walk one simple command down to the training script, recording what wraps it
(launchers, ``VAR=value`` assignments, ``bash -c`` strings, prefixes like ``env``/``time``)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from tuneadvisor.slurm.launch_line.launchers import (
    ACCELERATE,
    CONTAINER_WRAPPER,
    LIGHTNING,
    PYTHON_MODULES,
    RUNNERS,
    SUBCOMMANDS,
    WRAPPERS,
    Spec,
    split_options,
)
from tuneadvisor.slurm.launch_line.lexing import commands, lex, logical_lines
from tuneadvisor.slurm.launch_line.model import Launcher

ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)
_PYTHON = re.compile(r"python[0-9.]*")
_PREFIXES = {"then", "do", "else", "{", "!", "time", "exec", "nohup", "command", "builtin"}
_SHELLS = {"bash", "sh", "dash", "zsh", "ksh"}
_WRAPPER_VERBS = {"exec", "run"}
_EXPANSION = re.compile(r'"?\$(?:\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*)"?')  # a parameter, whole


@dataclass
class Found:
    env: dict[str, str] = field(default_factory=dict)
    launchers: list[Launcher] = field(default_factory=list)
    shell_string: bool = False  # inside ``bash -c '...'``
    python: str | None = None
    script: str | None = None
    module: str | None = None
    args: tuple[str, ...] = ()
    stopped_at: str | None = None  # the program the walk could not see into
    stopped_args: tuple[str, ...] = ()  # the words given to it


@dataclass(frozen=True)
class _Walk:
    """The words the walk goes on with (what a prefix or a launcher runs)."""

    words: list[str]


_Step = Found | None | _Walk


def analyse(words: list[str], found: Found) -> Found | None:
    """Walk one simple command down to the training script, recording what wraps it. A loop,
    one step per wrapper: a launch line of 2,000 prefixes (``env env ...``, ``srun srun
    ...``) is as deep as one."""
    step: _Step = _Walk(words)
    while isinstance(step, _Walk):
        step = _step(step.words, found)
    return step


def _step(words: list[str], found: Found) -> _Step:
    """One word of the walk: the program it names, and what it runs."""
    while words and ASSIGNMENT.fullmatch(words[0]):
        key, value = words[0].split("=", 1)
        found.env[key] = value
        words = words[1:]
    if not words:
        return None
    program, rest = os.path.basename(words[0]), words[1:]
    if _EXPANSION.fullmatch(words[0]):
        # `"${watch[@]}" srun ...`, `$PROFILER python x.py`: a wrapper the script set up.
        return _Walk(rest)
    if program in _SHELLS and "-c" in rest[:-1]:
        at = rest.index("-c")
        return _shell_string(rest[at + 1], rest[at + 3 :], found)  # after the string: $0 ARGS
    if program in _SHELLS and rest and not rest[0].startswith("-"):
        # `bash run.sh ARGS`: the walk stops at the script, as at `./run.sh ARGS`
        found.stopped_at, found.stopped_args = rest[0], tuple(rest[1:])
        return None
    if program == "tuneadvisor" and rest[:1] == ["watch"] and "--" in rest:
        return _Walk(rest[rest.index("--") + 1 :])  # watch -- COMMAND
    if program in _PREFIXES:
        return _Walk(_skip_flags(rest) if program == "time" else rest)
    if program == "env":
        return _Walk(_skip_env_options(rest))
    if program in WRAPPERS:
        options, command = split_options(rest, WRAPPERS[program])
        found.launchers.append(Launcher(program, tuple(options)))
        return _Walk(command)
    if program in RUNNERS:
        return _runner(program, RUNNERS[program], rest, found)
    if (program, rest[0] if rest else "") in SUBCOMMANDS:
        return _subcommand(f"{program} {rest[0]}", SUBCOMMANDS[program, rest[0]], rest[1:], found)
    if program == "accelerate" and rest[:1] == ["launch"]:
        return _runner("accelerate launch", ACCELERATE, rest[1:], found)
    if program == "lightning" and rest[:2] == ["run", "model"]:
        return _runner("lightning run model", LIGHTNING, rest[2:], found)
    if program == "fabric" and rest[:1] == ["run"]:
        words = rest[2:] if rest[1:2] == ["model"] else rest[1:]
        return _runner("fabric run", LIGHTNING, words, found)
    if _site_wrapper(program):
        verb = rest[:1] if rest[:1] and rest[0] in _WRAPPER_VERBS else []
        name = " ".join([program, *verb])
        return _subcommand(name, CONTAINER_WRAPPER, rest[len(verb) :], found)
    if _PYTHON.fullmatch(program):
        found.python = words[0]
        return _python(rest, found)
    found.stopped_at, found.stopped_args = words[0], tuple(words[1:])
    return None


def _shell_string(command: str, positional: list[str], found: Found) -> Found | None:
    """``bash -c 'exec kernprof -l -o "$RANK.lprof" x.py "$@"' sh --lr 1``: the string's
    commands, read like the script's own (the first that runs training counts), with
    ``"$@"`` and ``$1``... standing for the words after the string's ``$0``."""
    if len(command) > 1 and command[0] == command[-1] and command[0] in "'\"":
        command = command[1:-1]  # still quoted when it holds a $(...)
    # the string's own `\<newline>` continuations (kept by single quotes) join its lines
    lines = list(enumerate(command.split("\n"), start=1))
    for logical in logical_lines(lines):
        for words in commands(lex(logical.text)):
            inner = Found(dict(found.env), list(found.launchers), shell_string=True)
            result = analyse(with_arguments(words, positional), inner)
            if result is not None:
                return result
    return None


_POSITIONAL = re.compile(r"\$\{?([1-9])\}?")


def with_arguments(words: list[str], values: list[str] | tuple[str, ...]) -> list[str]:
    """``"$@"``, ``$*`` and ``$1``... of a script or string replaced by its arguments."""
    out: list[str] = []
    for word in words:
        if word in ("$@", "$*", "${@}", "${*}"):
            out.extend(values)
        elif (number := _POSITIONAL.fullmatch(word)) is not None:
            index = int(number.group(1)) - 1
            out.extend(values[index : index + 1])
        else:
            out.append(word)
    return out


def _subcommand(name: str, spec: Spec, words: list[str], found: Found) -> _Step:
    """``apptainer exec [options] IMAGE command``, ``conda run [options] command``..."""
    options, command = split_options(words, spec)
    found.launchers.append(Launcher(name, tuple(options)))
    return _Walk(command)


def _skip_flags(words: list[str]) -> list[str]:
    while words and words[0].startswith("-"):
        words = words[1:]
    return words


def _skip_env_options(words: list[str]) -> list[str]:
    """``env [-i] [-u NAME] [VAR=value]... command``: the assignments stay for analyse."""
    while words and words[0].startswith("-"):
        words = words[2:] if words[0] in ("-u", "--unset", "-C", "--chdir") else words[1:]
    return words


def _runner(name: str, spec: Spec, words: list[str], found: Found) -> _Step:
    options, rest = split_options(words, spec)
    found.launchers.append(Launcher(name, tuple(options)))
    if not rest:
        return None
    if any(option in spec.module_flags for option in options):
        found.module, found.args = rest[0], tuple(rest[1:])
        return found
    if any(option in ("--no-python", "--no_python") for option in options):
        return _Walk(rest)  # `torchrun --no-python bash -c '...'`: a program
    if _PYTHON.fullmatch(os.path.basename(rest[0])) and rest[1:]:
        return _Walk(rest)  # e.g. `deepspeed --no_python python x.py`
    found.script, found.args = rest[0], tuple(rest[1:])
    return found


def _python(words: list[str], found: Found) -> _Step:
    """Interpreter options, then ``-m module``, ``-c code`` or the script."""
    while words and words[0].startswith("-") and words[0] != "-":
        word, words = words[0], words[1:]
        if word == "--":
            break
        if word.startswith("--"):
            if word in ("--version", "--help"):
                return None
            continue
        for position, letter in enumerate(word[1:], start=1):
            attached = word[position + 1 :]
            if letter == "c":
                return None
            if letter in "mWX":
                value = attached or (words[0] if words else "")
                words = words if attached else words[1:]
                if letter == "m":
                    return _python_module(value, words, found)
                break
    if not words:
        return None
    found.script, found.args = words[0], tuple(words[1:])
    return found


def _python_module(module: str, words: list[str], found: Found) -> _Step:
    if module in PYTHON_MODULES:
        name, spec = PYTHON_MODULES[module]
        return _runner(name, spec, words, found)
    if not module:
        return None
    found.module, found.args = module, tuple(words)
    return found


def _site_wrapper(program: str) -> bool:
    """`apptainer_wrapper exec CMD` (CSC, LUMI...): a program named NAME_wrapper or
    NAME-wrapper, on one line (what ``.+[_-]wrapper`` took, without its backtracking)."""
    return (
        len(program) > len("_wrapper")
        and program.endswith(("_wrapper", "-wrapper"))
        and "\n" not in program
    )
