"""Find the training command in a job script: the script, its arguments and its launchers.

Recognised, alone or nested (``srun kernprof ... python X.py``): ``python``/``python3``
with interpreter options, ``python -m torch.distributed.run|launch``, ``torchrun``,
``accelerate launch``, ``deepspeed``, ``kernprof``, ``python -m cProfile``, ``srun`` and
``mpirun``/``mpiexec`` with their options, ``apptainer``/``singularity exec IMAGE``,
``conda run``, ``uv run``, ``env``/``time``/``exec``/``nohup`` prefixes, ``bash -c 'STRING'``
(the string read as commands), ``torchrun --no-python PROGRAM``, ``tuneadvisor watch ... --``,
a leading ``$WRAPPER``/``"${wrapper[@]}"`` word,
``VAR=value`` assignments before the command, ``\\`` line continuations, several commands
on a line (``;``, ``&&``, ``|``) and redirections.

Nothing is expanded: ``--num-workers ${SLURM_CPUS_PER_TASK}`` stays as written, so the
advisor can see where a value comes from. Words are split by a small shell lexer (quotes,
``$(...)``, comments, operators) and unquoted with :func:`shlex.split`.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tuneadvisor.slurm.jobscript import JobScript
from tuneadvisor.slurm.options import OPTIONS, Arg

__all__ = ["LaunchLine", "Launcher", "find_launch", "find_launches", "option_values"]

_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)
_PYTHON = re.compile(r"python[0-9.]*")
_NUMBER = re.compile(r"-[0-9.]")
_REDIRECT = re.compile(r"[0-9]*(?:>>|>&|<&|<>|&>>|&>|>\||>|<)")
_OPERATORS = ("&&", "||", ";;", ";", "|&", "|", "&", "(", ")")
_PREFIXES = {"then", "do", "else", "{", "!", "time", "exec", "nohup", "command", "builtin"}
_SHELLS = {"bash", "sh", "dash", "zsh", "ksh"}
_EXPANSION = re.compile(r'"?\$(?:\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*)"?')  # a parameter, whole
_SUBMIT_DIR = re.compile(r'"?\$\{?SLURM_SUBMIT_DIR\}?"?')


@dataclass(frozen=True)
class Launcher:
    """A program that starts the training script (``srun``, ``torchrun``, ``kernprof``...)."""

    name: str  # "srun", "torchrun", "python -m torch.distributed.run", "accelerate launch"
    words: tuple[str, ...]  # its options as written (unquoted, variables kept)

    @property
    def options(self) -> dict[str, str]:
        return option_values(self.words)


@dataclass(frozen=True)
class LaunchLine:
    line: int  # first physical line of the command
    end_line: int  # last physical line (after ``\\`` continuations)
    text: str  # the logical line, continuations joined
    env: Mapping[str, str]  # VAR=value before the command (and after ``env``)
    exported: Mapping[str, str]  # ``export VAR=value`` earlier in the script
    launchers: tuple[Launcher, ...]  # outermost first
    python: str | None  # the interpreter as written, when there is one
    script: str | None  # the training script as written; None for ``python -m module``
    module: str | None  # ``python -m package.train``
    args: tuple[str, ...]  # the training script's arguments
    script_path: Path | None  # the script on disk, when it exists
    shell_string: bool = False  # inside ``bash -c '...'``: words after the line reach bash

    @property
    def options(self) -> dict[str, str]:
        """The training script's options: ``{"--num-workers": "${SLURM_CPUS_PER_TASK}"}``."""
        return option_values(self.args)

    def launcher(self, name: str) -> Launcher | None:
        return next((launcher for launcher in self.launchers if launcher.name == name), None)


def option_values(words: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``--key=value``, ``--key value`` and ``-k value`` -> {key: value}; "" for flags."""
    values: dict[str, str] = {}
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if not _is_option(word):
            continue
        if word.startswith("--") and "=" in word:
            key, _, value = word.partition("=")
            values[key] = value
        elif index < len(words) and not _is_option(words[index]):
            values[word] = words[index]
            index += 1
        else:
            values[word] = ""
    return values


def _is_option(word: str) -> bool:
    return word.startswith("-") and word not in ("-", "--") and not _NUMBER.match(word)


# ----------------------------------------------------------------------------- lexing


@dataclass(frozen=True)
class _Logical:
    first: int
    last: int
    text: str


def _logical_lines(lines: list[tuple[int, str]]) -> Iterator[_Logical]:
    """Join ``\\``-continued lines (an odd number of trailing backslashes)."""
    pending: list[str] = []
    first = 0
    for number, text in lines:
        if not pending:
            first = number
        trailing = len(text) - len(text.rstrip("\\"))
        if trailing % 2:
            pending.append(text[:-1])
            continue
        pending.append(text)
        yield _Logical(first, number, "".join(pending))
        pending = []
    if pending:
        yield _Logical(first, lines[-1][0], "".join(pending))


def _skip_group(text: str, pos: int, opening: str, closing: str) -> int:
    """Past the end of ``$(...)`` or ``${...}`` starting at ``pos`` (nesting counted)."""
    depth = 0
    while pos < len(text):
        char = text[pos]
        if char == "\\":
            pos += 2
            continue
        if char in "'\"":
            end = text.find(char, pos + 1)
            pos = len(text) if end < 0 else end + 1
            continue
        depth += (char == opening) - (char == closing)
        pos += 1
        if depth == 0:
            return pos
    return pos


def _word_end(text: str, pos: int) -> int:
    """Where a shell word starting at ``pos`` ends (quotes and substitutions kept whole)."""
    while pos < len(text) and text[pos] not in " \t\n;&|()<>":
        char = text[pos]
        if char == "\\":
            pos += 2
        elif char == "'":
            end = text.find("'", pos + 1)
            pos = len(text) if end < 0 else end + 1
        elif char == '"':
            pos = _double_quoted_end(text, pos)
        elif text.startswith(("$(", "${"), pos):
            opening, closing = ("(", ")") if text[pos + 1] == "(" else ("{", "}")
            pos = _skip_group(text, pos + 1, opening, closing)
        elif char == "`":
            end = text.find("`", pos + 1)
            pos = len(text) if end < 0 else end + 1
        else:
            pos += 1
    return pos


def _double_quoted_end(text: str, pos: int) -> int:
    pos += 1
    while pos < len(text) and text[pos] != '"':
        if text[pos] == "\\":
            pos += 1
        elif text.startswith("$(", pos):
            pos = _skip_group(text, pos + 1, "(", ")") - 1
        pos += 1
    return pos + 1


def _lex(text: str) -> list[str]:
    """Raw shell words and operators of one logical line; a comment ends it."""
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos] in " \t":
            pos += 1
            continue
        if text[pos] == "#":
            break
        redirect = _REDIRECT.match(text, pos)  # before operators: "&>" is not "&"
        if redirect:
            tokens.append(redirect.group())
            pos = redirect.end()
            continue
        operator = next((op for op in _OPERATORS if text.startswith(op, pos)), None)
        if operator:
            tokens.append(operator)
            pos += len(operator)
            continue
        end = _word_end(text, pos)
        tokens.append(text[pos:end])
        pos = end
    return tokens


def _unquote(raw: str) -> str:
    """A word without its quotes, variables and substitutions kept as written."""
    if "$(" in raw or "`" in raw:
        return raw[1:-1] if len(raw) > 1 and raw[0] == raw[-1] == '"' else raw
    try:
        parts = shlex.split(raw)
    except ValueError:  # an unmatched quote: keep the text
        return raw
    if len(parts) == 1:
        return parts[0]
    return raw if parts else ""  # several parts: blanks inside ${...}; keep it whole


def _commands(tokens: list[str]) -> Iterator[list[str]]:
    """Simple commands: words between operators, without redirections and their targets."""
    words: list[str] = []
    target = False  # the next word is a redirection's file
    for token in tokens:
        if token in _OPERATORS:
            if words:
                yield words
            words, target = [], False
        elif _REDIRECT.fullmatch(token):
            target = True
        elif target:
            target = False
        else:
            words.append(_unquote(token))
    if words:
        yield words


# ----------------------------------------------------------------------------- launchers


def _long_names(arg: Arg) -> frozenset[str]:
    return frozenset(f"--{name}" for o in OPTIONS if o.arg is arg for name in (o.name, *o.aliases))


_SRUN_LONG_VALUES = _long_names(Arg.REQUIRED) | {
    f"--{name}"
    for name in (
        "cpu-bind",
        "mpi",
        "accel-bind",
        "epilog",
        "prolog",
        "task-epilog",
        "task-prolog",
        "jobid",
        "slurmd-debug",
        "het-group",
        "tres-per-task",
        "wait",
        "multi-prog-file",
    )
}
_MPI_TWO_VALUES = {"-mca", "--mca", "-gmca", "--gmca", "-genv", "-env", "--env"}
_MPI_VALUES = {
    "-n",
    "-np",
    "-c",
    "-N",
    "-H",
    "-host",
    "--host",
    "-hostfile",
    "--hostfile",
    "-machinefile",
    "--machinefile",
    "-f",
    "-x",
    "--map-by",
    "-map-by",
    "--bind-to",
    "-bind-to",
    "--rank-by",
    "-rank-by",
    "-ppn",
    "-npernode",
    "--npernode",
    "-wdir",
    "--wdir",
    "-genvlist",
    "-bootstrap",
}
_TORCHRUN_FLAGS = {"--standalone", "--no-python", "--no_python", "--run-path", "--run_path"}
_TORCHRUN_FLAGS |= {"-m", "--module"}
_ACCELERATE_FLAGS = {
    "--cpu",
    "--multi_gpu",
    "--multi-gpu",
    "--tpu",
    "--ipex",
    "--use_deepspeed",
    "--use-deepspeed",
    "--use_fsdp",
    "--use-fsdp",
    "--use_megatron_lm",
    "--use-megatron-lm",
    "--use_xpu",
    "--use-xpu",
    "-m",
    "--module",
    "--no_python",
    "--no-python",
    "--debug",
    "-q",
    "--quiet",
    "--same_network",
    "--same-network",
}
_DEEPSPEED_FLAGS = {
    "--no_python",
    "--no_local_rank",
    "--module",
    "--force_multi",
    "--elastic_training",
    "--bind_cores_to_rank",
    "--no_ssh_check",
    "--no_ssh",
}
_KERNPROF_VALUES = {"--outfile", "--setup", "--unit", "--output-interval", "--prof-mod"}
_CONTAINER_VALUES = {
    *("-B", "--bind", "--mount", "--env", "--env-file", "-H", "--home", "-W", "--workdir"),
    *("--pwd", "-o", "--overlay", "-S", "--scratch", "--security", "--network"),
    *("--network-args", "--hostname", "--dns", "--apply-cgroups", "--fusemount"),
}
_CONDA_VALUES = {"-n", "--name", "-p", "--prefix", "--cwd"}
_UV_VALUES = {"--with", "--with-requirements", "--python", "-p", "--project", "--directory"}
_UV_VALUES |= {"--env-file", "--group", "--extra", "--package", "--index", "--index-url"}


@dataclass(frozen=True)
class _Spec:
    """How a launcher's options read: which take a value (one or two words)."""

    value_letters: str = ""  # short options that take a value (``-n 2``, ``-n2``)
    long_values: Callable[[str], bool] = lambda word: False
    two_values: frozenset[str] = frozenset()
    module_flags: frozenset[str] = frozenset()  # the target is a module, not a file


_SRUN = _Spec("ABCDGJLMNSTWbcdeimnopqstwx", lambda w: w in _SRUN_LONG_VALUES)
_MPI = _Spec("", lambda w: w in _MPI_VALUES, frozenset(_MPI_TWO_VALUES))
_TORCHRUN = _Spec(
    "rt",
    lambda w: w.startswith("--") and w not in _TORCHRUN_FLAGS,
    module_flags=frozenset({"-m", "--module"}),
)
_ACCELERATE = _Spec(
    "",
    lambda w: w.startswith("--") and w not in _ACCELERATE_FLAGS,
    module_flags=frozenset({"-m", "--module"}),
)
_DEEPSPEED = _Spec(
    "",
    lambda w: w.startswith("--") and w not in _DEEPSPEED_FLAGS,
    module_flags=frozenset({"--module"}),
)
_KERNPROF = _Spec("osuip", lambda w: w in _KERNPROF_VALUES, module_flags=frozenset({"-m"}))
_CPROFILE = _Spec("os", lambda w: w in ("--outfile", "--sort"), module_flags=frozenset({"-m"}))
_CONTAINER = _Spec("", lambda w: w in _CONTAINER_VALUES)
_CONDA = _Spec("", lambda w: w in _CONDA_VALUES)
_UV = _Spec("", lambda w: w in _UV_VALUES)

# Programs that take options and then a command to run.
_WRAPPERS: dict[str, _Spec] = {"srun": _SRUN, "mpirun": _MPI, "mpiexec": _MPI, "orterun": _MPI}
# Programs whose subcommand takes options and then a command (containers: then an image).
_SUBCOMMANDS: dict[tuple[str, str], _Spec] = {
    ("apptainer", "exec"): _CONTAINER,
    ("singularity", "exec"): _CONTAINER,
    ("conda", "run"): _CONDA,
    ("mamba", "run"): _CONDA,
    ("micromamba", "run"): _CONDA,
    ("uv", "run"): _UV,
}
# Programs that take options and then the training script.
_RUNNERS: dict[str, _Spec] = {"torchrun": _TORCHRUN, "deepspeed": _DEEPSPEED, "kernprof": _KERNPROF}
_PYTHON_MODULES: dict[str, tuple[str, _Spec]] = {
    "torch.distributed.run": ("python -m torch.distributed.run", _TORCHRUN),
    "torch.distributed.launch": ("python -m torch.distributed.launch", _TORCHRUN),
    "accelerate.commands.launch": ("accelerate launch", _ACCELERATE),
    "kernprof": ("kernprof", _KERNPROF),
    "cProfile": ("python -m cProfile", _CPROFILE),
    "profile": ("python -m profile", _CPROFILE),
    "deepspeed.launcher.runner": ("deepspeed", _DEEPSPEED),
}


def _split_options(words: list[str], spec: _Spec) -> tuple[list[str], list[str]]:
    """A launcher's option words, and the words after them."""
    index = 0
    while index < len(words) and words[index].startswith("-") and words[index] != "-":
        word = words[index]
        index += 1
        if word == "--":
            break
        if word.startswith("--") and "=" in word:
            continue
        if word in spec.two_values:
            index += 2
        elif spec.long_values(word) or _short_takes_next(word, spec):
            index += 1
    return words[: min(index, len(words))], words[min(index, len(words)) :]


def _short_takes_next(word: str, spec: _Spec) -> bool:
    """``-n`` (value next) versus ``-n2``/``-lv`` (value attached, or flags only)."""
    if word.startswith("--") or len(word) < 2:
        return False
    for position, letter in enumerate(word[1:], start=1):
        if letter in spec.value_letters:
            return position == len(word) - 1
    return False


# ----------------------------------------------------------------------------- commands


@dataclass
class _Context:
    """What the lines before a command tell: exports and the working directory."""

    job_dir: Path | None
    cwd: Path | None
    exported: dict[str, str] = field(default_factory=dict)


@dataclass
class _Found:
    env: dict[str, str] = field(default_factory=dict)
    launchers: list[Launcher] = field(default_factory=list)
    shell_string: bool = False  # inside ``bash -c '...'``
    python: str | None = None
    script: str | None = None
    module: str | None = None
    args: tuple[str, ...] = ()


def _analyse(words: list[str], found: _Found) -> _Found | None:
    """Walk one simple command down to the training script, recording what wraps it."""
    while words and _ASSIGNMENT.fullmatch(words[0]):
        key, value = words[0].split("=", 1)
        found.env[key] = value
        words = words[1:]
    if not words:
        return None
    program, rest = os.path.basename(words[0]), words[1:]
    if _EXPANSION.fullmatch(words[0]):
        # `"${watch[@]}" srun ...`, `$PROFILER python x.py`: a wrapper the script set up.
        return _analyse(rest, found)
    if program in _SHELLS and "-c" in rest[:-1]:
        at = rest.index("-c")
        return _shell_string(rest[at + 1], rest[at + 3 :], found)  # after the string: $0 ARGS
    if program == "tuneadvisor" and rest[:1] == ["watch"] and "--" in rest:
        return _analyse(rest[rest.index("--") + 1 :], found)  # watch -- COMMAND
    if program in _PREFIXES:
        return _analyse(_skip_flags(rest) if program == "time" else rest, found)
    if program == "env":
        return _analyse(_skip_env_options(rest), found)
    if program in _WRAPPERS:
        options, command = _split_options(rest, _WRAPPERS[program])
        found.launchers.append(Launcher(program, tuple(options)))
        return _analyse(command, found)
    if program in _RUNNERS:
        return _runner(program, _RUNNERS[program], rest, found)
    if (program, rest[0] if rest else "") in _SUBCOMMANDS:
        return _subcommand(f"{program} {rest[0]}", _SUBCOMMANDS[program, rest[0]], rest[1:], found)
    if program == "accelerate" and rest[:1] == ["launch"]:
        return _runner("accelerate launch", _ACCELERATE, rest[1:], found)
    if _PYTHON.fullmatch(program):
        found.python = words[0]
        return _python(rest, found)
    return None


def _shell_string(command: str, positional: list[str], found: _Found) -> _Found | None:
    """``bash -c 'exec kernprof -l -o "$RANK.lprof" x.py "$@"' sh --lr 1``: the string's
    commands, read like the script's own (the first that runs training counts), with
    ``"$@"`` and ``$1``... standing for the words after the string's ``$0``."""
    if len(command) > 1 and command[0] == command[-1] and command[0] in "'\"":
        command = command[1:-1]  # still quoted when it holds a $(...)
    for words in _commands(_lex(command)):
        inner = _Found(dict(found.env), list(found.launchers), shell_string=True)
        result = _analyse(_positional(words, positional), inner)
        if result is not None:
            return result
    return None


_POSITIONAL = re.compile(r"\$\{?([1-9])\}?")


def _positional(words: list[str], values: list[str]) -> list[str]:
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


def _subcommand(name: str, spec: _Spec, words: list[str], found: _Found) -> _Found | None:
    """``apptainer exec [options] IMAGE command``, ``conda run [options] command``..."""
    options, command = _split_options(words, spec)
    if name.endswith(" exec"):  # a container image comes before the command
        options, command = options + command[:1], command[1:]
    found.launchers.append(Launcher(name, tuple(options)))
    return _analyse(command, found)


def _skip_flags(words: list[str]) -> list[str]:
    while words and words[0].startswith("-"):
        words = words[1:]
    return words


def _skip_env_options(words: list[str]) -> list[str]:
    """``env [-i] [-u NAME] [VAR=value]... command``: the assignments stay for _analyse."""
    while words and words[0].startswith("-"):
        words = words[2:] if words[0] in ("-u", "--unset", "-C", "--chdir") else words[1:]
    return words


def _runner(name: str, spec: _Spec, words: list[str], found: _Found) -> _Found | None:
    options, rest = _split_options(words, spec)
    found.launchers.append(Launcher(name, tuple(options)))
    if not rest:
        return None
    if any(option in spec.module_flags for option in options):
        found.module, found.args = rest[0], tuple(rest[1:])
        return found
    if any(option in ("--no-python", "--no_python") for option in options):
        return _analyse(rest, found)  # `torchrun --no-python bash -c '...'`: a program
    if _PYTHON.fullmatch(os.path.basename(rest[0])) and rest[1:]:
        return _analyse(rest, found)  # e.g. `deepspeed --no_python python x.py`
    found.script, found.args = rest[0], tuple(rest[1:])
    return found


def _python(words: list[str], found: _Found) -> _Found | None:
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


def _python_module(module: str, words: list[str], found: _Found) -> _Found | None:
    if module in _PYTHON_MODULES:
        name, spec = _PYTHON_MODULES[module]
        return _runner(name, spec, words, found)
    if not module:
        return None
    found.module, found.args = module, tuple(words)
    return found


# ----------------------------------------------------------------------------- the search


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
    return next((c for c in candidates if c.is_file()), None)


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
            assignment = _ASSIGNMENT.fullmatch(word)
            if assignment:
                context.exported[assignment.group(1)] = assignment.group(2)


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
    the script's ``--chdir``."""
    script = job if isinstance(job, JobScript) else JobScript.parse(job, path)
    where = Path(path) if path is not None else script.path
    job_dir = where.resolve().parent if where is not None else None
    context = _Context(job_dir, _start_dir(script, job_dir, chdir))
    if script.first_command_line is None:
        return []
    body = [(line.number, line.text) for line in script.lines[script.first_command_line - 1 :]]
    found: list[LaunchLine] = []
    for logical in _logical_lines(body):
        for words in _commands(_lex(logical.text)):
            launch = _launch(words, logical, context)
            if launch is not None:
                found.append(launch)
            else:
                _track(words, context)
    return found


def find_launch(
    job: JobScript | str | bytes,
    path: str | os.PathLike[str] | None = None,
    *,
    chdir: str | None = None,
) -> LaunchLine | None:
    """The first training command of the job script, or None when there is none."""
    launches = find_launches(job, path, chdir=chdir)
    return launches[0] if launches else None


def _launch(words: list[str], logical: _Logical, context: _Context) -> LaunchLine | None:
    result = _analyse(words, _Found())
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
