"""Commands a job script builds at run time (``eval "$cmd"``, ``$LAUNCHER args``): nothing
here runs the script, so what they start is not known. The report says so instead of
reading the job as one that starts nothing."""

from __future__ import annotations

from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.launch_line.lexing import commands_after, lex, logical_lines

__all__ = ["runtime_commands"]

_SHOWN = 80  # characters of a command quoted in the report


def runtime_commands(job: JobScript) -> list[tuple[int, str]]:
    """(line, command) of each command run through ``eval`` or named by a variable."""
    if job.first_command_line is None:
        return []
    body = [(line.number, line.text) for line in job.lines[job.first_command_line - 1 :]]
    found: list[tuple[int, str]] = []
    for logical in logical_lines(body):
        for before, words in commands_after(lex(logical.text)):
            if before == "(":  # `arr=($nodes)` or a subshell's first word: an array's words
                continue
            first = next((w for w in words if "=" not in w or w.startswith("$")), None)
            if first is None:
                continue
            if first == "eval" or (first.startswith("$") and not first.startswith("$(")):
                text = logical.text.strip()
                shown = text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."
                found.append((logical.first, shown))
                break
    return found
