"""Directives sbatch would refuse or ignore, fixed or removed before a tuned script is
written, each with a note:

- a misspelt option (``--cpus-per-tsk=4``) becomes the option it is closest to, unless that
  option is set already or conflicts with one that is (``--memm=16G`` next to ``--mem=8G``)
  or it asks for resources the plan does not size (``--ntaskss=64``): then the typo goes.
  sbatch refused the script, so the measured run never had that request; reviving it would
  change the allocation behind the advice's back;
- a misspelt ``#SBATCH`` (``#SBACTH --time=1:00:00``) is written ``#SBATCH`` where that is
  unambiguous and revives nothing the same way; else it stays as it is, said;
- a value sbatch refuses (``--time=01:00:00x``) is written as the one valid value a letter
  away, else kept (sbatch's default is no repair of a typo), said; the plan's own options
  (``--mem=8GG`` where the plan sizes memory) get the plan's value;
- what cannot be read at all goes.

Without this, the plan's ``--cpus-per-task`` would be added next to the typo and sbatch
would still refuse the script."""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from tuneadvisor.slurm.jobscript.editing import render_value
from tuneadvisor.slurm.jobscript.misspelt import misspelt_magic
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.jobscript.syntax import IGNORED_DIRECTIVE, Directive
from tuneadvisor.slurm.options import (
    OPTIONS,
    RESOURCE_OPTIONS,
    Arg,
    conflicting_with,
    find_option,
    validate,
)

_LONG_NAMES = sorted({name for option in OPTIONS for name in (option.name, *option.aliases)})


_CLOSE = 0.85  # how alike a misspelling and its option are, at least
_APART = 0.04  # how much closer to it than to the next option


def _closest(spelled: str) -> str | None:
    """The long option a misspelling is meant to be (a typo, a letter left out)."""
    matcher = difflib.SequenceMatcher(None, spelled, "")
    ratios: dict[str, float] = {}
    for name in _LONG_NAMES:
        matcher.set_seq2(name)
        # An option whose upper bounds are below CLOSE - APART can be neither the best nor
        # the one next to it that matters: thousands of tokens skip the exact ratio.
        if matcher.real_quick_ratio() >= _CLOSE - _APART <= matcher.quick_ratio():
            ratios[name] = matcher.ratio()
    ranked = sorted(ratios, key=ratios.__getitem__, reverse=True)[:2]
    best = ratios[ranked[0]] if ranked else 0.0
    second = ratios[ranked[1]] if len(ranked) > 1 else 0.0
    # Close, and clearly closer than the next one (--cpus-per-tsk: task, not gpu).
    return ranked[0] if best >= _CLOSE and best - second >= _APART else None


def _fixed(text: str) -> tuple[str, str] | None:
    """``--cpus-per-tsk=4`` -> (``cpus-per-task``, ``--cpus-per-task=4``) where the value is
    one sbatch takes."""
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
    written = f"--{option.name}=" + render_value(value, None, at_start=False) if equals else ""
    return option.name, written or f"--{option.name}"


def _why_not(
    job: JobScript, name: str, keep: frozenset[str], revived: Mapping[str, int] | None = None
) -> str | None:
    """Why a directive sbatch never read may not be revived as ``--name``; None: it may.
    ``revived``: options this repair revives already (name -> line), set as much as the
    script's own."""
    for other in sorted({name} | conflicting_with(name)):
        current = job.directive(other)
        line = current.line if current is not None else (revived or {}).get(other)
        if line is not None:
            what = "is set already" if other == name else "conflicts with it"
            return f"--{other} (line {line}) {what}"
    if name in RESOURCE_OPTIONS and name not in keep:
        return (
            f"--{name} asks for resources the advice did not size (sbatch never ran this "
            "request); add it back yourself if you mean it"
        )
    return None


def repair_directives(job: JobScript, keep: frozenset[str], notes: list[str]) -> JobScript:
    """``job`` without the directive arguments sbatch refuses; ``keep``: options the plan
    sets anyway (an invalid value of one is replaced by the plan, not removed)."""
    job = _magic_repaired(job, keep, notes)
    # Decided token by token, from the end as before, then written in one edit and one
    # parse: thousands of refused tokens would otherwise re-parse the script thousands of
    # times.
    revived: dict[str, int] = {}
    spans: list[tuple[int, int, int, str]] = []
    removed: list[int] = []
    for index in reversed(job.unread_tokens()):
        token = job.tokens[index]
        fixed = _fixed(token.value)
        why = _why_not(job, fixed[0], keep, revived) if fixed is not None else None
        if fixed is not None and why is None:
            spans.append((token.line, token.start, token.end, fixed[1]))
            revived[fixed[0]] = token.line
            notes.append(
                f"line {token.line}: {token.value} is no sbatch option: written as {fixed[1]}"
            )
        elif fixed is not None:
            removed.append(index)
            notes.append(
                f"line {token.line}: {token.value} removed (sbatch refuses it); not "
                f"written as {fixed[1]}: {why}"
            )
        else:
            removed.append(index)
            notes.append(f"line {token.line}: {token.value} removed: sbatch refuses it")
    job = job.edited(spans=spans, tokens=removed)
    return _values_repaired(job, keep, notes)


def _values_repaired(job: JobScript, keep: frozenset[str], notes: list[str]) -> JobScript:
    """Values sbatch refuses: the plan's options are replaced by the plan; the others are
    written as the one valid value a letter away (``01:00:00x`` -> ``01:00:00``; not a
    resource's, which the advice did not size), else kept as they are: removing one would
    let sbatch's default apply where the script asked for something."""
    gone: list[Directive] = []
    values: list[tuple[Directive, str]] = []
    for directive in reversed(job.occurrences):  # decided here, written in one edit below
        error = validate(directive.name, directive.value)
        if directive.component != 0 or not error:
            continue
        where = f"line {directive.line}: {directive.spelling} {directive.value}"
        effective = job.directive(directive.name)
        if effective is None or effective.token != directive.token:
            gone.append(directive)  # a later one sets it: nothing is lost
            notes.append(f"{where} removed ({error}); a later {directive.spelling} sets it")
            continue
        if directive.name in keep:
            continue  # the plan writes its value there
        # A resource's value is not guessed: the advice never sized that request.
        unsized = directive.name in RESOURCE_OPTIONS
        value = None if unsized else _closest_value(directive.name, directive.value)
        if value is not None:
            values.append((directive, value))
            notes.append(f"{where} written as {value} ({error})")
        else:
            notes.append(
                f"{where} kept: sbatch refuses it ({error}); write the value you meant "
                "(removed, sbatch's default would apply instead)"
            )
    return job.edited(occurrences=gone, values=values)


def _closest_value(name: str, value: str) -> str | None:
    """The one value sbatch takes that is ``value`` without a key pressed twice (``8GG``) or
    a stray last character (``01:00:00x``); None when there is none or more than one. A
    letter inside (``1O:00``: 1:00 or 10:00?) is no typo to guess at."""
    found = {
        value[:i] + value[i + 1 :]
        for i in range(len(value))
        if (i == len(value) - 1 or value[i] == value[i + 1])
        and not validate(name, value[:i] + value[i + 1 :])
    }
    return found.pop() if len(found) == 1 else None


def _magic_repaired(job: JobScript, keep: frozenset[str], notes: list[str]) -> JobScript:
    """Header lines like a misspelt ``#SBATCH``: written ``#SBATCH`` when unambiguous and
    every option they hold may be revived; else kept, with a note saying why."""
    lines = [p.line for p in job.problems if p.id == IGNORED_DIRECTIVE and p.line]
    for number in lines:
        text = job.lines[number - 1].text
        typo = misspelt_magic(text)
        if typo is None or not typo.fixable:
            notes.append(
                f"line {number}: {text.strip()} kept: sbatch ignores it (not '#SBATCH' in "
                "column 1); make it #SBATCH if you mean it, ##SBATCH to keep it off"
            )
            continue
        revived = job.with_text([(number, typo.start, typo.end, "#SBATCH")])
        why = _revival_problem(job, revived, number, keep)
        if why is not None:
            notes.append(f"line {number}: {text.strip()} kept as a comment to sbatch: {why}")
            continue
        job = revived
        notes.append(f"line {number}: {typo.written} is no #SBATCH: written as #SBATCH")
    return job


def _revival_problem(
    job: JobScript, revived: JobScript, number: int, keep: frozenset[str]
) -> str | None:
    """Why a revived directive line may not stay: sbatch would refuse something new, or one
    of its options may not be revived (see _why_not)."""
    on_line = [d for d in revived.occurrences if d.line == number and d.component == 0]
    for directive in on_line:
        option = find_option(directive.name)
        why = _why_not(job, option.name if option else directive.name, keep)
        if why is not None:
            return why
    fatal = len([p for p in revived.problems if p.fatal])
    unread = len(revived.unread_tokens())
    if not on_line or fatal > len([p for p in job.problems if p.fatal]):
        return "as #SBATCH, sbatch would refuse it"
    if unread > len(job.unread_tokens()):
        return "as #SBATCH, sbatch would refuse it"
    return None
