"""Edit the launch line on the job-script model: set an option's value, say a flag, or
append words at the line's end.

The launch line is read with the lexer that found it (quotes, ``$(...)``, operators and
comments known; the string of ``bash -c '...'`` read as commands too), and only the bytes
of the words that change are replaced (:meth:`JobScript.with_text`): every other byte of
the script stays identical. An edit that cannot be made safely returns None, for the
caller to say so: a value that is a command substitution, words after the line's end that
would reach ``bash -c`` or a pipe instead of the training script, a line that runs the job's
own script which does not pass its words on (``"$@"``) to the training script.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.launch_line.lexing import (
    OPERATORS,
    REDIRECT,
    Logical,
    lex_spans,
    logical_lines,
)
from tuneadvisor.slurm.launch_line.model import LaunchLine, is_option

__all__ = ["append_words", "flag_words", "set_flag", "set_option", "shell_value"]

_QUOTES = ("'", '"')


@dataclass(frozen=True)
class _Word:
    """A word or operator of the launch line, and where its bytes are."""

    raw: str  # as written
    line: int | None  # physical line; None when the word spans a line continuation
    start: int  # offsets in that line's text
    end: int
    operator: bool  # an operator or a redirection, not a word

    def at(self, start: int, end: int, new: str) -> tuple[int, int, int, str] | None:
        """A change of part of the word (offsets within ``raw``)."""
        if self.line is None:
            return None
        return (self.line, self.start + start, self.start + end, new)


@dataclass(frozen=True)
class _Read:
    words: tuple[_Word, ...]  # the line's, then those inside ``-c`` strings
    last_line_plain: bool  # the last physical line has no operator, redirection or comment


def set_option(job: JobScript, launch: LaunchLine, option: str, value: str) -> JobScript | None:
    """``option value`` on the launch line: its value replaced where the option is written
    (``--name value`` or ``--name=value``), else appended to the line's end. ``value`` is
    written as given (a shell word). None when that is not safe."""
    if not launch.forwards_words:
        return None
    read = _read(job, launch)
    words = read.words
    for index, word in enumerate(words):
        if word.operator:
            continue
        if word.raw.startswith(option + "="):
            at = len(option) + 1
            return _replace(job, word, at, word.raw[at:], value)
        if word.raw != option:
            continue
        following = words[index + 1] if index + 1 < len(words) else None
        if following is None or following.operator or is_option(following.raw):
            continue  # given without a value here
        return _replace(job, following, 0, following.raw, value)
    return append_words(job, launch, f"{option} {value}")


def set_flag(
    job: JobScript, launch: LaunchLine, word: str, replaces: set[str] | frozenset[str]
) -> JobScript | None:
    """The flag ``word`` on the launch line: the job as it is when the line says it
    already, else the first of ``replaces`` (``--no-pin-memory``) replaced by it, else
    ``word`` appended. None when that is not safe."""
    if not launch.forwards_words:
        return None
    words = _read(job, launch).words
    if any(not w.operator and w.raw == word for w in words):
        return job
    for other in words:
        if not other.operator and other.raw in replaces:
            change = other.at(0, len(other.raw), word)
            return None if change is None else job.with_text([change])
    return append_words(job, launch, word)


def shell_value(value: object) -> str:
    """A count or a switch as a word of the launch line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def flag_words(action: str | None, option: str, value: bool) -> tuple[str, set[str]] | None:
    """The word that says ``value`` for a flag option of the training script's argparse
    (store_true and friends take no value: ``--pin-memory true`` would stop argparse), and
    the words it replaces. None when the option is no flag, or its action cannot say
    ``value``."""
    name = (action or "").rsplit(".", 1)[-1]
    negative = "--no-" + option[2:] if option.startswith("--") else option
    if name == "store_true":
        return (option, set()) if value else None
    if name == "store_false":
        return (option, set()) if not value else None
    if name == "BooleanOptionalAction":
        return (option, {negative}) if value else (negative, {option})
    return None


def append_words(job: JobScript, launch: LaunchLine, words: str) -> JobScript | None:
    """``words`` added at the end of the launch line; None when words there would not reach
    the training script: inside ``bash -c '...'`` they go to bash, after a pipe or a
    redirection to another program or a file, after a comment nowhere."""
    if launch.shell_string or not launch.forwards_words:
        return None
    if not _read(job, launch).last_line_plain:
        return None
    text = job.lines[launch.end_line - 1].text
    body = text.rstrip()
    return job.with_text([(launch.end_line, len(body), len(text), f" {words}")])


def _replace(job: JobScript, word: _Word, start: int, old: str, value: str) -> JobScript | None:
    if old.startswith("$("):
        return None  # `$((SLURM_CPUS_PER_TASK - 1))` is no value to replace
    change = word.at(start, len(word.raw), value)
    return None if change is None else job.with_text([change])


def _read(job: JobScript, launch: LaunchLine) -> _Read:
    physical = [(line.number, line.text) for line in job.lines[launch.line - 1 : launch.end_line]]
    logical = next(logical_lines(physical))
    spans, comment = lex_spans(logical.text)
    words = [_word(logical, 0, start, end) for start, end in spans]
    words += _inside_strings(logical, words)
    plain = comment is None and not any(
        w.operator for w in words[: len(spans)] if w.line == logical.last or w.line is None
    )
    return _Read(tuple(words), plain)


def _inside_strings(logical: Logical, words: list[_Word]) -> list[_Word]:
    """The words of the quoted strings given to ``-c`` (``bash -c '... --num-workers 1'``),
    read as commands, nested strings too."""
    found: list[_Word] = []
    for flag, string in itertools.pairwise(words):
        raw = string.raw
        quoted = len(raw) > 1 and raw[0] in _QUOTES and raw[-1] == raw[0]
        if flag.raw != "-c" or not quoted or string.line is None:
            continue
        base = _offset(logical, string) + 1
        spans, _ = lex_spans(raw[1:-1])
        inner = [_word(logical, base, start, end) for start, end in spans]
        found += inner + _inside_strings(logical, inner)
    return found


def _word(logical: Logical, base: int, start: int, end: int) -> _Word:
    """A word at ``base + start .. base + end`` of the logical line, placed on its
    physical line."""
    raw = logical.text[base + start : base + end]
    operator = raw in OPERATORS or REDIRECT.fullmatch(raw) is not None
    first, last = _part(logical, base + start), _part(logical, max(base + end - 1, base + start))
    if first != last:
        return _Word(raw, None, 0, 0, operator)
    offset = logical.starts[first] if logical.starts else 0
    return _Word(raw, logical.first + first, base + start - offset, base + end - offset, operator)


def _part(logical: Logical, position: int) -> int:
    """Which physical line of the logical line holds ``position``."""
    starts = logical.starts or (0,)
    return max(index for index, start in enumerate(starts) if start <= position)


def _offset(logical: Logical, word: _Word) -> int:
    """Where a word placed on a physical line starts in the logical line."""
    if word.line is None:
        raise ValueError("a word across a line continuation has no single place")
    return (logical.starts or (0,))[word.line - logical.first] + word.start
