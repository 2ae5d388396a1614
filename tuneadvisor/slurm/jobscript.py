"""A lossless job-script model that reads ``#SBATCH`` lines exactly as sbatch 22.05 does.

What sbatch does (src/sbatch/opt.c ``_opt_batch_script`` and ``_get_argument``; checked
against the sbatch 22.05.8 binary):

- Lines are split on ``\\n`` only. A line starting with ``#SBATCH`` (or the deprecated
  ``#SLURM``), exactly and in column 1, holds directives; ``##SBATCH``, ``# SBATCH`` and
  `` #SBATCH`` are comments. Reading stops at the first line whose first non-blank character
  is not ``#``: later ``#SBATCH`` lines are ignored.
- After the magic word the line is cut into arguments like a tiny shell: blanks separate,
  ``'`` and ``"`` group (and are removed), a backslash takes the next character literally,
  an unquoted ``#`` starts a comment (even inside a word), an empty argument (``""``) ends
  the line, an unmatched quote or an argument starting with ``:`` is fatal. A word
  ``hetjob``/``packjob`` ends the line; first on its line it starts the next component of
  a heterogeneous job.
- All arguments of all directive lines form one argv, read by getopt_long in order: a value
  may be attached (``--mem=8G``, ``-c4``) or be the next argument, even on the next line;
  long names may be abbreviated; the last value wins; a word that is not an option stops
  sbatch with "Invalid directive found in batch script".
- sbatch refuses scripts that are empty, lack a ``#!`` first line, contain ``\\r\\n`` or a
  NUL byte.

The model keeps every byte: ``render()`` of an unmodified script returns its input. Problems
are collected instead of stopping at the first one, and parsing goes on past them, so
``directives()`` is what sbatch would apply were the bad parts removed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from tuneadvisor.slurm.options import (
    C_SPACE,
    Arg,
    JobRequest,
    SbatchOption,
    find_option,
    match_long,
    parse_count,
    parse_mail_type,
    parse_nodes,
    short_option,
    validate,
)
from tuneadvisor.slurm.units import GresItem, gpu_count, parse_gpus, parse_gres

__all__ = [
    "CONFLICTING_DIRECTIVES",
    "DEPRECATED_PREFIX",
    "DIRECTIVE_AFTER_COMMAND",
    "DOS_LINE_BREAKS",
    "EMPTY_SCRIPT",
    "HETJOB_COMPONENTS",
    "IGNORED_DIRECTIVE",
    "INVALID_DIRECTIVE",
    "NOT_A_BATCH_SCRIPT",
    "NULL_CHARACTER",
    "Directive",
    "JobScript",
    "Line",
    "Problem",
    "Token",
]

# Problem ids (finding ids where the advisor reports them; never rename).
INVALID_DIRECTIVE = "invalid-directive"
DOS_LINE_BREAKS = "dos-line-breaks"
NOT_A_BATCH_SCRIPT = "not-a-batch-script"
EMPTY_SCRIPT = "empty-script"
NULL_CHARACTER = "null-character"
CONFLICTING_DIRECTIVES = "conflicting-directives"
DIRECTIVE_AFTER_COMMAND = "directive-after-command"
IGNORED_DIRECTIVE = "ignored-directive"
DEPRECATED_PREFIX = "deprecated-prefix"
HETJOB_COMPONENTS = "hetjob-components"

_T = TypeVar("_T")
_MAGIC = ("#SBATCH", "#SLURM")
_HETJOB_WORD = re.compile(r"(?i)(?:het|pack)job(?=[ \t\n\v\f\r]|$)")
# Look like a directive but sbatch skips them; `##SBATCH` and `# SBATCH` are deliberate.
_NEAR_MISS = re.compile(r"[ \t]+#SBATCH|#(?!SBATCH)(?i:sbatch)")
_MEMORY_OPTIONS = ("mem", "mem-per-cpu", "mem-per-gpu")
# sbatch ORs every --mail-type it reads instead of keeping the last.
_ADDING_UP = frozenset({"mail-type"})
# Two names for one setting: the later one replaces the other.
_SAME_SETTING = {"requeue": "no-requeue", "no-requeue": "requeue"}

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


@dataclass(frozen=True)
class Line:
    number: int  # 1-based
    text: str  # without its line break
    ending: str  # "\n", "\r\n", or "" for a last line without one


@dataclass(frozen=True)
class Token:
    """One argument of a directive line, as sbatch's ``_get_argument`` cuts it."""

    line: int
    start: int  # offsets of the raw text in the line's text
    end: int
    value: str  # quotes and backslashes removed: what getopt sees
    offsets: tuple[int, ...]  # for each character of value, its offset in the line's text
    component: int = 0  # heterogeneous-job component


@dataclass(frozen=True)
class Directive:
    """One option sbatch reads from the script, where it is written and its value."""

    name: str  # canonical long name ("cpus-per-task")
    value: str  # as sbatch receives it; "" when given without a value
    line: int  # line of the option itself
    spelling: str  # as written: "--cpus-per-task", "--cpus-per-t", "-c"
    component: int
    token: int  # index of the option's token in JobScript.tokens
    letter: int | None = None  # short options: index of the letter in the token's value
    value_at: int | None = None  # attached value: where it starts in the token's value
    value_token: int | None = None  # value given as the next argument: its token index

    @property
    def has_value(self) -> bool:
        return self.value_at is not None or self.value_token is not None


@dataclass(frozen=True)
class Problem:
    id: str  # INVALID_DIRECTIVE, DOS_LINE_BREAKS, ...
    line: int | None  # 1-based; None for the whole file
    option: str | None  # canonical long name when one is concerned
    message: str
    fatal: bool  # sbatch refuses the script


# ----------------------------------------------------------------------------- lines


def _split_lines(text: str) -> tuple[Line, ...]:
    lines: list[Line] = []
    parts = text.split("\n")
    for index, part in enumerate(parts):
        if index == len(parts) - 1:
            if part:
                lines.append(Line(index + 1, part, ""))
        elif part.endswith("\r"):
            lines.append(Line(index + 1, part[:-1], "\r\n"))
        else:
            lines.append(Line(index + 1, part, "\n"))
    return tuple(lines)


def _is_command(text: str) -> bool:
    stripped = text.lstrip(C_SPACE)
    return bool(stripped) and not stripped.startswith("#")


@dataclass
class _LineScan:
    tokens: list[Token] = field(default_factory=list)
    separator: bool = False  # the line starts the next hetjob component
    error: str | None = None  # fatal for sbatch: unmatched quote, leading ':'


def _read_argument(
    text: str, pos: int, line: int, rest: int
) -> tuple[Token | None, int, str | None]:
    """One argument from ``pos`` (after blanks; ``rest`` is where the blanks began, which
    sbatch's messages quote from): ``_get_argument``'s state machine."""
    start, quote, escape = pos, "", False
    chars: list[str] = []
    offsets: list[int] = []
    while pos < len(text) and (quote or text[pos] not in C_SPACE):
        char = text[pos]
        if escape:
            escape = False
        elif char == "\\":
            escape, pos = True, pos + 1
            continue
        elif quote:
            if char == quote:
                quote, pos = "", pos + 1
                continue
        elif char in "\"'":
            quote, pos = char, pos + 1
            continue
        elif char == "#":
            break
        chars.append(char)
        offsets.append(pos)
        pos += 1
    error = f"Unmatched `{quote}` in [{text[rest:]}]" if quote else None
    if not chars:
        return None, pos, error
    return Token(line, start, pos, "".join(chars), tuple(offsets)), pos, error


def _scan_directive(text: str, pos: int, line: int) -> _LineScan:
    scan = _LineScan()
    while True:
        rest = pos
        while pos < len(text) and text[pos] in C_SPACE:
            pos += 1
        if _HETJOB_WORD.match(text, pos):
            scan.separator = not scan.tokens
            return scan
        if pos < len(text) and text[pos] == ":":
            scan.error = f"Unexpected `:` in [{text[pos:]}]"
            return scan
        if pos >= len(text):
            return scan
        token, pos, scan.error = _read_argument(text, pos, line, rest)
        if token is None:  # "" or a comment: sbatch stops reading the line
            return scan
        scan.tokens.append(token)
        if scan.error:
            return scan


# ----------------------------------------------------------------------------- getopt


@dataclass
class _Getopt:
    """getopt_long over the arguments of one component, collecting problems on the way."""

    tokens: list[tuple[int, Token]]  # (index in JobScript.tokens, token)
    directives: list[Directive] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    position: int = 0

    def run(self) -> None:
        while self.position < len(self.tokens):
            index, token = self.tokens[self.position]
            self.position += 1
            if token.value == "--":
                self._end_of_options()
            elif token.value.startswith("--"):
                self._long(index, token)
            elif token.value.startswith("-") and token.value != "-":
                self._short(index, token)
            else:
                message = f"Invalid directive found in batch script: {token.value}"
                self._problem(token, None, message)

    def _end_of_options(self) -> None:
        """getopt stops at "--"; sbatch then refuses whatever follows. Reading goes on here
        so that the rest is still seen."""
        if self.position < len(self.tokens):
            token = self.tokens[self.position][1]
            self._problem(token, None, f"Invalid directive found in batch script: {token.value}")

    def _problem(self, token: Token, option: str | None, message: str) -> None:
        self.problems.append(Problem(INVALID_DIRECTIVE, token.line, option, message, True))

    def _next_value(self) -> tuple[int, Token] | None:
        if self.position >= len(self.tokens):
            return None
        self.position += 1
        return self.tokens[self.position - 1]

    def _long(self, index: int, token: Token) -> None:
        spelled, equals, _ = token.value[2:].partition("=")
        match = match_long(spelled, token.value)
        if match.option is None:
            self._problem(token, None, match.error or f"unrecognized option '{token.value}'")
            return
        option = match.option
        spelling = f"--{spelled}"
        value_at = 3 + len(spelled) if equals else None
        if option.arg is Arg.NONE and equals:
            self._problem(token, option.name, f"option '--{option.name}' doesn't allow an argument")
            return
        if option.arg is Arg.REQUIRED and not equals:
            self._separate_value(index, token, option, spelling, None)
            return
        self._record(index, token, option, spelling, None, value_at, None)

    def _short(self, index: int, token: Token) -> None:
        for letter in range(1, len(token.value)):
            option = short_option(token.value[letter])
            if option is None:
                self._problem(token, None, f"invalid option -- '{token.value[letter]}'")
                continue
            spelling = f"-{token.value[letter]}"
            rest = letter + 1 < len(token.value)
            if option.arg is Arg.NONE:
                self._record(index, token, option, spelling, letter, None, None)
                continue
            if option.arg is Arg.REQUIRED and not rest:
                self._separate_value(index, token, option, spelling, letter)
            else:
                value_at = letter + 1 if rest else None
                self._record(index, token, option, spelling, letter, value_at, None)
            return

    def _separate_value(
        self, index: int, token: Token, option: SbatchOption, spelling: str, letter: int | None
    ) -> None:
        taken = self._next_value()
        if taken is None:
            self._problem(token, option.name, f"option '{spelling}' requires an argument")
            self._record(index, token, option, spelling, letter, None, None, check=False)
            return
        self._record(index, token, option, spelling, letter, None, taken[0], value=taken[1].value)

    def _record(
        self,
        index: int,
        token: Token,
        option: SbatchOption,
        spelling: str,
        letter: int | None,
        value_at: int | None,
        value_token: int | None,
        *,
        value: str | None = None,
        check: bool = True,
    ) -> None:
        if value is None and value_at is not None:
            value = token.value[value_at:]
        directive = Directive(
            option.name,
            value or "",
            token.line,
            spelling,
            token.component,
            index,
            letter,
            value_at,
            value_token,
        )
        self.directives.append(directive)
        error = validate(option.name, value) if check else None
        if error:
            self._problem(token, option.name, error)


# ----------------------------------------------------------------------------- whole file


def _file_problems(text: str, lines: tuple[Line, ...]) -> list[Problem]:
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
    scan = _scan_directive(text, 0, line)
    if not scan.tokens or not scan.tokens[0].value.startswith("-"):
        return None
    value = scan.tokens[0].value
    if value.startswith("--"):
        option = match_long(value[2:].partition("=")[0]).option
    else:
        option = short_option(value[1:2])
    return option.name if option else None


def _after_command_problems(lines: Iterable[Line]) -> list[Problem]:
    problems: list[Problem] = []
    for line in lines:
        magic = next((m for m in _MAGIC if line.text.startswith(m)), None)
        if magic is None:
            continue
        option = _first_option_name(line.text[len(magic) :], line.number)
        message = f"{magic} line after the first command is ignored by sbatch: {line.text.strip()}"
        problems.append(Problem(DIRECTIVE_AFTER_COMMAND, line.number, option, message, False))
    return problems


def _conflicts(directives: list[Directive], components: int) -> list[Problem]:
    """Combinations sbatch refuses before submitting, per hetjob component. Memory options
    carry over from one component to the next (sbatch 22.05.8 refuses ``--mem`` then
    ``hetjob`` then ``--mem-per-cpu``); the others were seen not to."""
    problems: list[Problem] = []
    memory: dict[str, Directive] = {}
    for component in range(components):
        own = {d.name: d for d in directives if d.component == component}
        memory.update((name, d) for name, d in own.items() if name in _MEMORY_OPTIONS)
        problems += _conflicts_in({**own, **memory})
    return list({(p.line, p.message): p for p in problems}.values())


def _conflicts_in(last: dict[str, Directive]) -> list[Problem]:
    problems: list[Problem] = []
    memory = [last[name] for name in _MEMORY_OPTIONS if name in last]
    if len(memory) > 1:
        latest = max(memory, key=lambda d: d.token)
        message = "--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."
        problems.append(Problem(CONFLICTING_DIRECTIVES, latest.line, latest.name, message, True))
    if "cpus-per-task" in last and "cpus-per-gpu" in last:
        latest = max(last["cpus-per-task"], last["cpus-per-gpu"], key=lambda d: d.token)
        message = "--cpus-per-gpu is mutually exclusive with --cpus-per-task"
        problems.append(Problem(CONFLICTING_DIRECTIVES, latest.line, latest.name, message, True))
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
    if "gpus" not in last and "ntasks" not in last:
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
class _Header:
    """The directive lines sbatch reads, cut into arguments."""

    tokens: list[Token] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    first_command: int | None = None
    components: int = 1
    separators: list[int] = field(default_factory=list)  # lines of "#SBATCH hetjob"


def _near_miss(line: Line) -> Problem | None:
    if not _NEAR_MISS.match(line.text):
        return None
    message = f"sbatch ignores this line (not '#SBATCH' in column 1): {line.text.strip()}"
    return Problem(IGNORED_DIRECTIVE, line.number, None, message, False)


def _read_header(lines: tuple[Line, ...]) -> _Header:
    header = _Header()
    for line in lines:
        magic = next((m for m in _MAGIC if line.text.startswith(m)), None)
        if magic is None:
            if _is_command(line.text):
                header.first_command = line.number
                return header
            near_miss = _near_miss(line)
            if near_miss:
                header.problems.append(near_miss)
            continue
        if magic == "#SLURM" and not any(p.id == DEPRECATED_PREFIX for p in header.problems):
            problem = Problem(DEPRECATED_PREFIX, line.number, None, _SLURM_PREFIX_MESSAGE, False)
            header.problems.append(problem)
        scan = _scan_directive(line.text, len(magic), line.number)
        if scan.separator:
            header.components += 1
            header.separators.append(line.number)
        component = header.components - 1
        header.tokens.extend(replace(token, component=component) for token in scan.tokens)
        if scan.error:
            message = f"line {line.number}: {scan.error}"
            header.problems.append(Problem(INVALID_DIRECTIVE, line.number, None, message, True))
    return header


# ----------------------------------------------------------------------------- editing


def _render_value(value: str, style: str | None, at_start: bool) -> str:
    """A value as _get_argument will read it back; ``style`` is the quote the old value
    used (kept), else quotes are added only when needed."""
    needs_quotes = (
        not value
        or any(c in C_SPACE or c in "\"'#\\" for c in value)
        or (at_start and (value.startswith(":") or bool(_HETJOB_WORD.match(value))))
    )
    if style is None and not needs_quotes:
        return value
    quote = style or '"'
    return quote + value.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote


def _quote_state(raw: str) -> str:
    """The quote still open after ``raw`` ("" when none), by _get_argument's rules."""
    quote, escape = "", False
    for char in raw:
        if escape:
            escape = False
        elif char == "\\":
            escape = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
    return quote


@dataclass
class _Edit:
    """Pending changes to a script's lines, applied all at once."""

    lines: list[Line]
    replace: dict[int, list[tuple[int, int, str]]] = field(default_factory=dict)
    delete: set[int] = field(default_factory=set)

    def span(self, line: int, start: int, end: int, text: str) -> None:
        self.replace.setdefault(line, []).append((start, end, text))

    def render(self) -> str:
        out: list[str] = []
        for line in self.lines:
            if line.number in self.delete:
                continue
            text = line.text
            for start, end, new in sorted(self.replace.get(line.number, []), reverse=True):
                text = text[:start] + new + text[end:]
            out.append(text + line.ending)
        return "".join(out)


def _deletion_spans(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans of deleted tokens on one line, merged when only blanks separate them and widened
    to the blanks before them (or after, at the start) so the rest stays tidy."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and not text[merged[-1][1] : start].strip(C_SPACE):
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    widened: list[tuple[int, int]] = []
    for start, end in merged:
        before = start
        while before > 0 and text[before - 1] in C_SPACE:
            before -= 1
        after = end
        while before == start and after < len(text) and text[after] in C_SPACE:
            after += 1
        widened.append((before, after))
    return widened


# ----------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class JobScript:
    """A parsed job script. Build it with :meth:`parse` or :meth:`read`."""

    text: str
    path: Path | None
    lines: tuple[Line, ...]
    tokens: tuple[Token, ...]  # arguments of the directive lines sbatch reads
    occurrences: tuple[Directive, ...]  # every option read, in sbatch's order
    problems: tuple[Problem, ...]
    first_command_line: int | None  # where sbatch stops reading directives
    components: int  # heterogeneous-job components (1 for an ordinary job)

    @classmethod
    def parse(cls, source: str | bytes, path: str | os.PathLike[str] | None = None) -> JobScript:
        """Parse a script; bytes that are not UTF-8 survive the round trip."""
        text = source.decode("utf-8", "surrogateescape") if isinstance(source, bytes) else source
        lines = _split_lines(text)
        header = _read_header(lines)
        tokens = tuple(header.tokens)
        directives, problems = _read_options(tokens, header.components)
        after = lines[header.first_command :] if header.first_command else ()
        problems = [
            *_file_problems(text, lines),
            *header.problems,
            *problems,
            *_conflicts(directives, header.components),
            *_hetjob_problem(header.separators),
            *_after_command_problems(after),
        ]
        problems.sort(key=lambda p: p.line or 0)
        return cls(
            text,
            None if path is None else Path(path),
            lines,
            tokens,
            tuple(directives),
            tuple(problems),
            header.first_command,
            header.components,
        )

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> JobScript:
        return cls.parse(Path(path).read_bytes(), path)

    # -- reading

    def render(self) -> bytes:
        """The script's bytes (identical to the input when nothing was edited)."""
        return self.text.encode("utf-8", "surrogateescape")

    def render_text(self) -> str:
        return self.text

    def directives(self) -> dict[str, str]:
        """Long option name -> value as sbatch applies them: directives before the first
        command, first hetjob component only, the last one wins (``--mail-type`` adds up,
        as in sbatch). Options given without a value (``--hold``, ``--exclusive``) map to
        ""."""
        return _effective([d for d in self.occurrences if d.component == 0])

    def directive(self, name: str) -> Directive | None:
        """The occurrence that takes effect for an option (by any of its names)."""
        option = find_option(name)
        if option is None:
            return None
        found = [d for d in self.occurrences if d.component == 0 and d.name == option.name]
        return found[-1] if found else None

    def request(self) -> JobRequest:
        return JobRequest.from_directives(self.directives())

    @property
    def refused(self) -> bool:
        """sbatch would refuse to submit this script."""
        return any(p.fatal for p in self.problems)

    @property
    def line_ending(self) -> str:
        """The file's line break: "\\r\\n" when most lines use it, else "\\n"."""
        crlf = sum(1 for line in self.lines if line.ending == "\r\n")
        lf = sum(1 for line in self.lines if line.ending == "\n")
        return "\r\n" if crlf > lf else "\n"

    # -- editing

    def with_directive(self, name: str, value: str | None = None) -> JobScript:
        """Set an option's effective value. The directive that takes effect is changed in
        place, keeping its spelling, quoting, comment and line break; when there is none, a
        ``#SBATCH --name=value`` line is added after the last directive (after the ``#!``
        line when there are none). ``value`` is None (or "") for options without one."""
        option = _known_option(name)
        value = _checked_value(option, value)
        current = self.directive(option.name)
        edit = _Edit(list(self.lines))
        if current is None:
            return self._with_line(option, value)
        changed = self._set_value(edit, current, value)
        if option.name in _ADDING_UP or option.name in _SAME_SETTING:
            changed |= self._remove(edit, self._others(option.name, current))
        return JobScript.parse(edit.render(), self.path) if changed else self

    def without_directive(self, name: str) -> JobScript:
        """Remove every occurrence of an option from the directives sbatch reads (a line
        left without arguments is removed with its comment)."""
        option = _known_option(name)
        found = [d for d in self.occurrences if d.component == 0 and d.name == option.name]
        edit = _Edit(list(self.lines))
        if not self._remove(edit, found):
            return self
        return JobScript.parse(edit.render(), self.path)

    def with_text(self, changes: Iterable[tuple[int, int, int, str]]) -> JobScript:
        """Replace spans of lines' text: ``(line, start, end, new)``, offsets in the line's
        text (without its line break). Every other byte stays as it was; the result is
        parsed again, so its directives and problems are up to date. Edits of the body
        (the launch line) go through here."""
        edit = _Edit(list(self.lines))
        for number, start, end, new in changes:
            edit.span(number, start, end, new)
        return JobScript.parse(edit.render(), self.path)

    # -- editing helpers

    def _others(self, name: str, current: Directive) -> list[Directive]:
        """Occurrences besides ``current`` that still count: earlier --mail-type (they add
        up) and the other spelling of a two-name setting (--requeue/--no-requeue)."""
        names = {name, _SAME_SETTING.get(name, "")}
        return [
            d
            for d in self.occurrences
            if d.component == 0 and d.name in names and d.token != current.token
        ]

    def _remove(self, edit: _Edit, found: list[Directive]) -> bool:
        by_token: dict[int, list[Directive]] = {}
        for directive in found:
            by_token.setdefault(directive.token, []).append(directive)
        gone: set[int] = set()
        for index, directives in by_token.items():
            gone |= self._remove_from_token(edit, index, directives)
        self._delete_tokens(edit, gone)
        return bool(found)

    def _line(self, number: int) -> Line:
        return self.lines[number - 1]

    def _raw(self, token: Token) -> str:
        return self._line(token.line).text[token.start : token.end]

    def _with_line(self, option: SbatchOption, value: str | None) -> JobScript:
        text = f"#SBATCH --{option.name}"
        if value is not None:
            text += "=" + _render_value(value, None, at_start=False)
        anchor = self._insert_after()
        ending = self.line_ending
        lines = list(self.lines)
        if anchor and lines[anchor - 1].ending == "":
            lines[anchor - 1] = Line(anchor, lines[anchor - 1].text, ending)
            new = Line(0, text, "")
        else:
            new = Line(0, text, ending)
        lines.insert(anchor, new)
        return JobScript.parse("".join(line.text + line.ending for line in lines), self.path)

    def _insert_after(self) -> int:
        """The line after which a new directive goes (0: at the very top): after the last
        directive, but never between an option and a value it takes from a later line,
        nor after an option still waiting for its value (either would take the new line)."""
        floor = 1 if self.text.startswith("#!") else 0
        ours = [t.line for t in self.tokens if t.component == 0]
        if not ours:
            return floor
        blocked: set[int] = set()
        for directive in self.occurrences:
            if directive.component != 0:
                continue
            if directive.value_token is not None:
                blocked.update(range(directive.line, self.tokens[directive.value_token].line))
            elif not directive.has_value and _known_option(directive.name).arg is Arg.REQUIRED:
                blocked.update(range(directive.line, max(ours) + 1))
        return next((n for n in range(max(ours), floor, -1) if n not in blocked), floor)

    def _set_value(self, edit: _Edit, current: Directive, value: str | None) -> bool:
        """Queue the change of one occurrence's value; False when nothing changes."""
        token = self.tokens[current.token]
        if value is None:
            if current.value_at is None:
                return False
            keep = current.value_at - (1 if current.letter is None else 0)  # drop "="
            self._rewrite(edit, token, keep, None)
            return True
        if value == "" and (current.letter is not None or current.value_token is not None):
            self._as_long_form(edit, current, value)
        elif current.value_token is not None:
            value_token = self.tokens[current.value_token]
            style = _style(self._raw(value_token))
            new = _render_value(value, style, at_start=True)
            edit.span(value_token.line, value_token.start, value_token.end, new)
        elif current.value_at is not None:
            self._rewrite(edit, token, current.value_at, value)
        else:  # an optional value that was not given: attach one
            joiner = "" if current.letter is not None else "="
            new = self._raw(token) + joiner + _render_value(value, None, at_start=False)
            edit.span(token.line, token.start, token.end, new)
        return True

    def _rewrite(self, edit: _Edit, token: Token, keep: int, tail: str | None) -> None:
        """Keep the first ``keep`` characters of a token's value as written and put
        ``tail`` (a value, rendered) after them; requote the token when a quote spans both."""
        line_text = self._line(token.line).text
        cut = token.offsets[keep - 1] + 1
        open_quote = _quote_state(line_text[token.start : cut])
        if open_quote and cut < token.end and line_text[cut] == open_quote:
            cut, open_quote = cut + 1, ""  # the quote closes right there
        if open_quote:
            whole = token.value[:keep] + (tail or "")
            new = _render_value(whole, open_quote, at_start=True)
        else:
            style = _style(line_text[cut : token.end])
            new = line_text[token.start : cut]
            if tail is not None:
                new += _render_value(tail, style, at_start=False)
        edit.span(token.line, token.start, token.end, new)

    def _as_long_form(self, edit: _Edit, current: Directive, value: str) -> None:
        """Values short forms cannot carry (an empty one) are written ``--name=value``."""
        token = self.tokens[current.token]
        long_form = f"--{current.name}=" + _render_value(value, None, at_start=False)
        if current.letter is not None and current.letter > 1:
            self._rewrite(edit, token, current.letter, None)
            edit.span(token.line, token.end, token.end, " " + long_form)
        else:
            edit.span(token.line, token.start, token.end, long_form)
        if current.value_token is not None:
            self._delete_tokens(edit, {current.value_token})

    def _remove_from_token(self, edit: _Edit, index: int, found: list[Directive]) -> set[int]:
        """Take the found options out of one token; returns the tokens to delete."""
        token = self.tokens[index]
        gone = {d.value_token for d in found if d.value_token is not None}
        if found[0].letter is None:  # a long option owns its whole token
            return gone | {index}
        removed = {d.letter for d in found}
        kept = [d for d in self.occurrences if d.token == index and d.letter not in removed]
        if not kept:
            return gone | {index}
        new_value = "-" + "".join(token.value[d.letter or 0] for d in kept)
        if kept[-1].value_at is not None:
            new_value += token.value[kept[-1].value_at :]
        if token.value.startswith(new_value):  # what is left is written as it was
            self._rewrite(edit, token, len(new_value), None)
        else:
            new = _render_value(new_value, None, at_start=True)
            edit.span(token.line, token.start, token.end, new)
        return gone

    def _delete_tokens(self, edit: _Edit, indices: set[int]) -> None:
        """Delete tokens; a directive line left with none of its arguments goes entirely."""
        by_line: dict[int, list[int]] = {}
        for index in indices:
            by_line.setdefault(self.tokens[index].line, []).append(index)
        for number, deleted in by_line.items():
            on_line = [i for i, t in enumerate(self.tokens) if t.line == number]
            if set(on_line) <= set(deleted):
                edit.delete.add(number)
                continue
            text = self._line(number).text
            spans = [(self.tokens[i].start, self.tokens[i].end) for i in deleted]
            for start, end in _deletion_spans(text, spans):
                edit.span(number, start, end, "")


def _effective(read: list[Directive]) -> dict[str, str]:
    effective: dict[str, str] = {}
    mail: list[str] = []
    for directive in read:
        effective.pop(_SAME_SETTING.get(directive.name, ""), None)
        effective[directive.name] = directive.value
        if directive.name == "mail-type":
            mail.append(directive.value)
    if len(mail) > 1:  # sbatch ORs the flags of every --mail-type; NONE adds nothing
        adding = [value for value in mail if _mail_flags(value) != frozenset()]
        effective["mail-type"] = ",".join(adding) if adding else mail[-1]
    return effective


def _mail_flags(value: str) -> frozenset[str] | None:
    try:
        return parse_mail_type(value)
    except ValueError:
        return None


def _style(raw: str) -> str | None:
    return raw[0] if raw[:1] in ('"', "'") else None


def _known_option(name: str) -> SbatchOption:
    option = find_option(name)
    if option is None:
        raise ValueError(f"unknown sbatch option: {name!r}")
    return option


def _checked_value(option: SbatchOption, value: str | None) -> str | None:
    """The value to write (None: no value), or ValueError when sbatch would refuse it."""
    if value is not None and any(c in value for c in "\n\r\0"):
        raise ValueError(f"--{option.name}: a directive value cannot hold a line break or NUL")
    if option.arg is not Arg.REQUIRED and not value:
        return None
    if option.arg is Arg.REQUIRED and value is None:
        raise ValueError(f"option '--{option.name}' requires an argument")
    error = validate(option.name, value)
    if error:
        raise ValueError(error)
    return value


def _read_options(
    tokens: tuple[Token, ...], components: int
) -> tuple[list[Directive], list[Problem]]:
    directives: list[Directive] = []
    problems: list[Problem] = []
    for component in range(components):
        ours = [(i, t) for i, t in enumerate(tokens) if t.component == component]
        getopt = _Getopt(ours)
        getopt.run()
        directives += getopt.directives
        problems += getopt.problems
    return directives, problems


def _hetjob_problem(separators: list[int]) -> Iterator[Problem]:
    if separators:
        message = (
            f"heterogeneous job with {len(separators) + 1} components: only the first"
            " component's directives are read here"
        )
        yield Problem(HETJOB_COMPONENTS, separators[0], None, message, False)
