"""Directives sbatch would refuse, fixed or removed before a tuned script is written: a
misspelled option (``--cpus-per-tsk=4``) becomes the option it is closest to, and what
cannot be read at all goes, each with a note. Without this, the plan's ``--cpus-per-task``
would be added next to the typo and sbatch would still refuse the script."""

from __future__ import annotations

import difflib

from tuneadvisor.slurm.jobscript.editing import render_value
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.options import OPTIONS, Arg, validate

_LONG_NAMES = sorted({name for option in OPTIONS for name in (option.name, *option.aliases)})


def _closest(spelled: str) -> str | None:
    """The long option a misspelling is meant to be (a typo, a letter left out)."""

    def ratio(name: str) -> float:
        return difflib.SequenceMatcher(None, spelled, name).ratio()

    ranked = sorted(_LONG_NAMES, key=ratio, reverse=True)[:2]
    best, second = ratio(ranked[0]), ratio(ranked[1])
    # Close, and clearly closer than the next one (--cpus-per-tsk: task, not gpu).
    return ranked[0] if best >= 0.85 and best - second >= 0.04 else None


def _fixed(text: str) -> str | None:
    """``--cpus-per-tsk=4`` -> ``--cpus-per-task=4`` where the value is one sbatch takes."""
    if not text.startswith("--"):
        return None
    spelled, equals, value = text[2:].partition("=")
    name = _closest(spelled)
    if name is None:
        return None
    option = next(o for o in OPTIONS if name in (o.name, *o.aliases))
    if option.arg is Arg.REQUIRED and not equals:
        return None  # its value is the next word, which sbatch also refused: remove both
    if equals and option.arg is Arg.NONE:
        return None
    if equals and validate(option.name, value):
        return None
    return (
        f"--{option.name}=" + render_value(value, None, at_start=False)
        if equals
        else (f"--{option.name}")
    )


def repair_directives(job: JobScript, keep: frozenset[str], notes: list[str]) -> JobScript:
    """``job`` without the directive arguments sbatch refuses; ``keep``: options the plan
    sets anyway (an invalid value of one is replaced by the plan, not removed)."""
    for index in reversed(job.unread_tokens()):  # from the end: earlier offsets stay right
        token = job.tokens[index]
        fixed = _fixed(token.value)
        if fixed is not None:
            job = job.with_text([(token.line, token.start, token.end, fixed)])
            notes.append(
                f"line {token.line}: {token.value} is no sbatch option: written as {fixed}"
            )
        else:
            job = job.without_tokens([index])
            notes.append(f"line {token.line}: {token.value} removed: sbatch refuses it")
    for directive in reversed(job.occurrences):
        if directive.component != 0 or directive.name in keep:
            continue
        error = validate(directive.name, directive.value)
        if error:
            job = job.without_occurrence(directive)
            notes.append(
                f"line {directive.line}: {directive.spelling} {directive.value} removed "
                f"({error}); sbatch's default applies"
            )
    return job
