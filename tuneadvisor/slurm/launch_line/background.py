"""Launches started in the background (``python train.py ... &``) that nothing waits for.

The batch script is the job: when bash reaches its end, Slurm ends the job and kills what
it started, so a training started with ``&`` and no ``wait`` after it runs for the moment
bash needs to read the rest of the script. Read conservatively: anything after the launch
that keeps bash busy counts as waiting (``wait``, with or without pids; ``sleep``, as in a
``while kill -0 $PID; do sleep 60; done`` loop; ``tail -f``/``--pid``; ``fg``; a launch in
the foreground), wherever it is (a ``wait`` in a branch or a function is taken at its word).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.launch_line.commands import Found, analyse
from tuneadvisor.slurm.launch_line.lexing import delimited_commands, lex, logical_lines
from tuneadvisor.slurm.launch_line.model import LaunchLine

__all__ = ["unwaited_launches"]

# Commands that keep bash from reaching the script's end while a background job runs.
_BLOCKERS = frozenset({"wait", "sleep", "tail", "fg"})
_PREFIXES = frozenset({"then", "do", "else", "{", "!", "time", "command", "builtin"})


@dataclass(frozen=True)
class _Command:
    line: int  # first physical line of its logical line
    words: tuple[str, ...]  # unquoted, redirections left out
    background: bool  # followed by a single `&`


def _commands(job: JobScript) -> Iterator[_Command]:
    """The body's simple commands in order, each with whether ``&`` ends it."""
    if job.first_command_line is None:
        return
    body = [(line.number, line.text) for line in job.lines[job.first_command_line - 1 :]]
    for logical in logical_lines(body):
        for _, words, after in delimited_commands(lex(logical.text)):
            yield _Command(logical.first, tuple(words), after == "&")


def _program(words: Sequence[str]) -> str:
    rest = list(words)
    while rest and rest[0] in _PREFIXES:
        rest = rest[1:]
    return os.path.basename(rest[0]) if rest else ""


def _runs(command: _Command, launch: LaunchLine) -> bool:
    """The command on the launch's line that runs it (not an `echo` or `cd` beside it)."""
    found = analyse(list(command.words), Found())
    if found is not None:
        return found.script is not None or found.module is not None
    # `srun ./launch.sh ARGS &`: the launch read through the job's own script
    name = launch.via.name if launch.via is not None else None
    return name is not None and any(os.path.basename(word) == name for word in command.words)


def unwaited_launches(job: JobScript, launches: Sequence[LaunchLine]) -> list[LaunchLine]:
    """The launches started with ``&`` that nothing after them waits for, in script order."""
    commands = list(_commands(job))
    by_line = {launch.line: launch for launch in launches}
    runs = [c.line in by_line and _runs(c, by_line[c.line]) for c in commands]
    # blocks_from[i]: the i-th command or one after it keeps bash busy (one pass, from the end)
    blocks_from = [False] * (len(commands) + 1)
    for i in range(len(commands) - 1, -1, -1):
        command = commands[i]
        blocks = not command.background and (runs[i] or _program(command.words) in _BLOCKERS)
        blocks_from[i] = blocks_from[i + 1] or blocks
    first_on_line: dict[int, int] = {}  # a launch line -> its command that runs the launch
    for i, command in enumerate(commands):
        if runs[i]:
            first_on_line.setdefault(command.line, i)
    unwaited: list[LaunchLine] = []
    for launch in launches:
        at = first_on_line.get(launch.line)
        if at is not None and commands[at].background and not blocks_from[at + 1]:
            unwaited.append(launch)
    return unwaited
