"""Find the training commands in a job script: the script, its arguments and its launchers.

Recognised, alone or nested (``srun kernprof ... python X.py``): ``python``/``python3``
with interpreter options, ``python -m torch.distributed.run|launch``, ``torchrun``,
``accelerate launch``, ``deepspeed``, ``kernprof``, ``python -m cProfile``, ``srun`` and
``mpirun``/``mpiexec`` with their options, ``apptainer``/``singularity exec IMAGE``,
``conda run``, ``uv run``, ``env``/``time``/``exec``/``nohup`` prefixes, ``bash -c 'STRING'``
(the string read as commands), ``torchrun --no-python PROGRAM``, ``tuneadvisor watch ... --``,
a leading ``$WRAPPER``/``"${wrapper[@]}"`` word,
``VAR=value`` assignments before the command, ``\\`` line continuations, several commands
on a line (``;``, ``&&``, ``|``) and redirections; site wrappers (``apptainer_wrapper exec``)
and container runtimes; ``lightning run model``/``fabric run``; the job's own shell script
(``srun ./launch.sh ARGS``, ``bash run.sh``), read with ``"$@"`` standing for ARGS when it is
on disk beside the job script or in its working directory. Of several launches, ``choose``
says which one trains.

Only variables the script itself set before the line to a value known without running
anything are expanded (``SCRIPT=train.py`` then ``python $SCRIPT``, see ``variables``):
``--num-workers ${SLURM_CPUS_PER_TASK}`` stays as written, so the advisor can see where a
value comes from. Words are split by a small shell lexer (quotes,
``$(...)``, comments, operators) and unquoted with :func:`shlex.split`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from tuneadvisor.errors import InputError
from tuneadvisor.files import MAX_JOB_SCRIPT, is_regular_file, read_bytes_input
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.launch_line.choose import choose_launch
from tuneadvisor.slurm.launch_line.commands import ASSIGNMENT, Found, analyse, with_arguments
from tuneadvisor.slurm.launch_line.lexing import (
    Logical,
    commands_after,
    lex,
    logical_lines,
)
from tuneadvisor.slurm.launch_line.model import Launcher, LaunchLine
from tuneadvisor.slurm.launch_line.variables import MAX_VALUE_CHARS, expand_word, references

__all__ = ["Unfollowed", "find_launches", "unfollowed_launch"]

_SUBMIT_DIR = re.compile(r'"?\$\{?SLURM_SUBMIT_DIR\}?"?')


# Scripts that run scripts: followed this deep at most, and no more of them per job than
# MAX_WRAPPER_READS in all (a wrapper that calls another 200 times would otherwise be read
# 200 times per call above it: calls^depth). Each is read and parsed once per job.
_MAX_WRAPPERS = 3
MAX_WRAPPER_READS = 32


@dataclass
class _Wrappers:
    """The job's own shell scripts as one job's reading finds them: each parsed once (by
    its resolved path), and how many times one was followed, all of them counted."""

    parsed: dict[Path, JobScript | None] = field(default_factory=dict)
    followed: int = 0

    def script(self, path: Path) -> JobScript | None:
        key = path.resolve()
        if key not in self.parsed:
            try:  # bounded as the job script itself is
                text = read_bytes_input(path, "wrapper script", MAX_JOB_SCRIPT)
            except InputError:  # unreadable here: a hand-off that cannot be followed
                self.parsed[key] = None
            else:
                self.parsed[key] = JobScript.parse(text, path)
        return self.parsed[key]


@dataclass
class _Context:
    """What the lines before a command tell: exports, variables and the working directory."""

    job_dir: Path | None
    cwd: Path | None
    exported: dict[str, str] = field(default_factory=dict)
    variables: dict[str, str] = field(default_factory=dict)  # what is unknown as written
    depth: int = 0  # inside if/for/while/case or a function: assignments may not run
    maybe: bool = False  # the command being tracked runs only perhaps (after && || |)
    arguments: tuple[str, ...] | None = None  # "$@" of a script the job runs; None: the job's
    wrappers: tuple[Path, ...] = ()  # the scripts followed to get here, resolved
    reads: _Wrappers = field(default_factory=_Wrappers)  # shared by the whole job
    too_long: set[str] = field(default_factory=set)  # variables forgotten for their size

    def expand(self, raw: str) -> list[str] | None:
        return expand_word(raw, self.variables)


_OPENS = {"if", "for", "while", "until", "case", "select", "{"}
_CLOSES = {"fi", "done", "esac", "}"}
_MAYBE = {"&&", "||", "|", "|&", "("}


def _commands(logical: Logical, context: _Context) -> Iterator[list[str]]:
    """The commands of a logical line, keeping count of the blocks they are in."""
    for before, words in commands_after(lex(logical.text), context.expand):
        context.maybe = before in _MAYBE
        yield words
        context.depth += (words[0] in _OPENS) - (words[0] in _CLOSES)
        context.depth = max(context.depth, 0)


def _resolve(script: str, context: _Context) -> Path | None:
    """The script on disk: from the working directory the job would have there, else from
    the job script's directory. Scripts named through variables are not resolved."""
    if "$" in script or "`" in script:
        return None
    path = Path(os.path.expanduser(script))
    # sbatch starts in the directory it was run from: here, that is most likely the current
    # one, or the job script's parent (`sbatch slurm/job.sbatch` from the project).
    parent = context.job_dir.parent if context.job_dir is not None else None
    bases = [b for b in (context.cwd, context.job_dir, Path.cwd(), parent) if b is not None]
    candidates = [path] if path.is_absolute() else [base / path for base in bases]
    return next((c for c in candidates if is_regular_file(c)), None)


def _track(words: list[str], context: _Context) -> None:
    """Follow ``cd DIR`` and ``export VAR=value`` so later commands are read in context."""
    if words[0] == "cd":
        target = words[1] if len(words) > 1 else ""
        if _SUBMIT_DIR.fullmatch(target):
            context.cwd = context.job_dir
        elif target and "$" not in target and "~" not in target and target != "-":
            base = context.cwd or context.job_dir or Path()
            context.cwd = base / target
        else:
            context.cwd = None  # somewhere we cannot know
    elif words[0] == "export":
        for word in words[1:]:
            assignment = ASSIGNMENT.fullmatch(word)
            if assignment:
                if len(assignment.group(2)) <= MAX_VALUE_CHARS:
                    context.exported[assignment.group(1)] = assignment.group(2)
                else:  # too long to be followed: what it holds is unknown here
                    context.exported.pop(assignment.group(1), None)
                _remember(assignment.group(1), assignment.group(2), context)
    elif all(ASSIGNMENT.fullmatch(word) for word in words):  # `SCRIPT=train.py`
        for word in words:
            name, _, value = word.partition("=")
            _remember(name, value, context)


def _remember(name: str, value: str, context: _Context) -> None:
    """A variable set by the script, its value expanded already: what is known read, what
    only running would tell (``$(hostname -i)``, ``$SLURM_NNODES``) as written. Set in a
    block or after ``&&``, it may or may not be: unknown from here on. A value longer than
    ``MAX_VALUE_CHARS`` (one that doubles itself line after line) is forgotten too, and so
    is one built from such a variable (``A=$A$A`` once ``A`` is forgotten)."""
    if len(value) > MAX_VALUE_CHARS or (context.too_long and references(value) & context.too_long):
        context.too_long.add(name)
        context.variables.pop(name, None)
    elif context.depth or context.maybe:
        context.variables.pop(name, None)
    else:
        context.variables[name] = value


def _start_dir(job: JobScript, job_dir: Path | None, chdir: str | None) -> Path | None:
    chdir = chdir if chdir is not None else job.directives().get("chdir")
    if not chdir or "%" in chdir:
        return job_dir
    path = Path(os.path.expanduser(chdir))
    if path.is_absolute():
        return path
    return (job_dir / path) if job_dir else path


def find_launches(
    job: JobScript | str | bytes,
    path: str | os.PathLike[str] | None = None,
    *,
    chdir: str | None = None,
) -> list[LaunchLine]:
    """Every command in the job script's body that runs Python training code, in order.
    ``path`` (default: the JobScript's own) locates relative scripts; ``chdir`` overrides
    the script's ``--chdir``. A command that runs a shell script of the job's own
    (``srun ./launch.sh ARGS``) is read through it when that script is here."""
    script = job if isinstance(job, JobScript) else JobScript.parse(job, path)
    where = Path(path) if path is not None else script.path
    job_dir = where.resolve().parent if where is not None else None
    return _launches(script, _Context(job_dir, _start_dir(script, job_dir, chdir)))


def _body(script: JobScript) -> list[tuple[int, str]]:
    if script.first_command_line is None:
        return []
    return [(line.number, line.text) for line in script.lines[script.first_command_line - 1 :]]


def _launches(script: JobScript, context: _Context) -> list[LaunchLine]:
    found: list[LaunchLine] = []
    for logical in logical_lines(_body(script)):
        for words in _commands(logical, context):
            if context.arguments is not None:
                words = with_arguments(words, context.arguments)
            launch = _launch(words, logical, context) or _through_script(words, logical, context)
            if launch is not None:
                found.append(launch)
            else:
                _track(words, context)
    return found


_SHELL_SUFFIXES = (".sh", ".bash")
# a shell's name as a word of the #! line: #!/bin/bash, #!/usr/bin/env sh
_SHELL_WORD = re.compile(r"\b(?:ba|da|k|z)?sh\b")
_FORWARDED = "\x00forwarded\x00"  # stands for a word the job adds after the script's name


def _through_script(words: list[str], logical: Logical, context: _Context) -> LaunchLine | None:
    """``srun ./launch.sh ARGS``: the training command of the job's own shell script, read
    with ``"$@"`` standing for ARGS, given as the job's line with the script among its
    launchers. None when the command runs no such script, or it has no launch."""
    outer = Found()
    if len(context.wrappers) >= _MAX_WRAPPERS or analyse(words, outer) is not None:
        return None
    program = outer.stopped_at
    wrapper = _shell_script(program, context) if program is not None else None
    if program is None or wrapper is None:
        return None
    # One already being read (a script that runs itself) is not read again; and past the
    # job's budget of scripts followed, none is.
    if wrapper.resolve() in context.wrappers or context.reads.followed >= MAX_WRAPPER_READS:
        return None
    context.reads.followed += 1
    script = context.reads.script(wrapper)
    if script is None:
        return None
    launch = choose_launch(_launches(script, _inner(context, wrapper, outer.stopped_args)))
    if launch is None:
        return None
    marked = (*outer.stopped_args, _FORWARDED)
    probe = choose_launch(_launches(script, _inner(context, wrapper, marked)))
    forwards = probe is not None and probe.args[-1:] == (_FORWARDED,)
    return replace(
        launch,
        line=logical.first,
        end_line=logical.last,
        text=logical.text,
        env={**outer.env, **launch.env},
        launchers=(*outer.launchers, Launcher(program, ()), *launch.launchers),
        shell_string=outer.shell_string or launch.shell_string,
        via=wrapper,
        forwards_words=forwards and launch.forwards_words,
    )


def _inner(context: _Context, wrapper: Path, arguments: tuple[str, ...]) -> _Context:
    """What a script the job runs starts with: the job's exported variables, the job's
    working directory, its own arguments."""
    known = {name: value for name, value in context.variables.items() if name in context.exported}
    return _Context(
        wrapper.parent,
        context.cwd,
        exported=dict(context.exported),
        variables=known,
        arguments=arguments,
        wrappers=(*context.wrappers, wrapper.resolve()),
        reads=context.reads,
    )


def _shell_script(program: str, context: _Context) -> Path | None:
    """The job's own shell script a command runs (``./launch.sh``, ``bash run.sh``), on
    disk: a ``.sh``/``.bash`` file or one whose ``#!`` names a shell."""
    path = _resolve(program, context)
    if path is None:
        return None
    if path.suffix in _SHELL_SUFFIXES:
        return path
    try:
        with path.open("rb") as file:
            head = file.readline(256).decode("utf-8", "replace")
    except OSError:
        return None
    return path if _names_a_shell(head) else None


def _names_a_shell(head: str) -> bool:
    """The first line is a ``#!`` line with a shell's name as a word of it."""
    shebang = head.partition("\n")[0]
    return shebang.startswith("#!") and _SHELL_WORD.search(shebang, 2) is not None


# What a job runs through srun & co. besides training: no launch line to follow.
_UTILITIES = {
    *("hostname", "nvidia-smi", "rocm-smi", "echo", "printf", "sleep", "date", "true"),
    *("mkdir", "cp", "rsync", "rm", "mv", "ls", "cat", "tar", "which", "nproc", "lscpu"),
    *("pip", "pip3", "uname", "free", "df", "du", "ln", "touch", "module", "ml", "source"),
    *("ibstat", "ibv_devinfo", "ulimit", "pwd", "id", "whoami", "wait", "kill", "scontrol"),
}


@dataclass(frozen=True)
class Unfollowed:
    """A command that hands something to a launcher, in which no training script was found."""

    command: str  # the line as written
    reason: str  # why: what the launcher runs, and why that was not read


def unfollowed_launch(
    job: JobScript | str | bytes, path: str | os.PathLike[str] | None = None
) -> Unfollowed | None:
    """The first command that hands something to a launcher (``srun ./run.sh``,
    ``torchrun $(pick_script)``, ``accelerate launch`` with nothing after it) in which no
    training script could be found, and why, for a note that says so. None when there is
    none, or when the script has a launch line that was followed."""
    script = job if isinstance(job, JobScript) else JobScript.parse(job, path)
    where = Path(path) if path is not None else script.path
    job_dir = where.resolve().parent if where is not None else None
    context = _Context(job_dir, _start_dir(script, job_dir, None))
    first: Unfollowed | None = None
    for logical in logical_lines(_body(script)):
        for words in _commands(logical, context):
            found = Found()
            result = analyse(words, found)
            if result is not None and (result.script or result.module):
                return None
            if result is None and first is None and _hands_off(found):
                first = Unfollowed(logical.text.strip(), _why(found, context))
            _track(words, context)
    return first


def _why(found: Found, context: _Context) -> str:
    program = found.stopped_at
    if program is None:
        return f"{found.launchers[-1].name} is given no program to run"
    name = os.path.basename(program)
    if _shell_script(program, context) is not None:
        return f"{program}, the job's own shell script, starts no Python program seen here"
    if program.endswith(_SHELL_SUFFIXES) or "/" in program:
        return (
            f"{program} is the job's own script, and it is neither beside the job script "
            "nor in its working directory"
        )
    return f"{name} is no launcher tuneadvisor knows"


def _hands_off(found: Found) -> bool:
    """A launcher took the command, and what it runs is not a known utility."""
    if not found.launchers:
        return False
    stopped = os.path.basename(found.stopped_at or "")
    return stopped not in _UTILITIES


def _launch(words: list[str], logical: Logical, context: _Context) -> LaunchLine | None:
    result = analyse(words, Found())
    if result is None or (result.script is None and result.module is None):
        return None
    return LaunchLine(
        line=logical.first,
        end_line=logical.last,
        text=logical.text,
        env=dict(result.env),
        exported=dict(context.exported),
        launchers=tuple(result.launchers),
        python=result.python,
        script=result.script,
        module=result.module,
        args=result.args,
        script_path=_resolve(result.script, context) if result.script else None,
        shell_string=result.shell_string,
    )
