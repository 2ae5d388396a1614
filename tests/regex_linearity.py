"""A structural rule for regular expressions run over input (issue 34, class 5): a pattern
that passes it cannot backtrack into quadratic or exponential time, whatever the text.

Python's ``re`` backtracks. A search costs, per place it starts from, what the pattern may
retry there; it stays linear in the text when:

- no repetition holds another repetition or a choice (``(a+)+``, ``(a|ab)*``: exponential),
- every unbounded repetition (``*``, ``+``, ``{n,}``) is of one character class that what
  follows it cannot start with (``\\s+--``: the run ends where it must, nothing to retry;
  ``.*X`` retries X at every character: quadratic), and, unless the pattern is anchored at
  the start of the text, that the pattern itself cannot start with (else a search starting
  at each character of one long run re-reads the run from each: ``\\d+x`` over "1111...",
  40,000 characters in 28 s), or that a lookbehind at its start refuses
  (``(?<![0-9])[0-9]+x``: no try starts inside the run; MULTILINE's ``^`` at the start is
  the lookbehind ``(?<![^\n])``: no try starts inside a line),
- a bounded repetition is short (at most ``MAX_BOUND``; an anchored pattern may repeat up to
  ``MAX_ANCHORED_BOUND``: it is tried from one place only, and so is a branch or group that
  begins with ``^``, as ``x|^(?=.{0,4096}?y)``, whatever the rest of the pattern).

Character sets are compared over a sample of code points (ASCII, Latin-1, a few thousand
more and every Unicode digit and space the readers meet), which is what the rule needs.
"""

from __future__ import annotations

import functools
import importlib
import re
from dataclasses import dataclass
from typing import Any

# the compiler's own parser: typeshed has no stubs for these private modules
C: Any = importlib.import_module("re._constants")
P: Any = importlib.import_module("re._parser")

MAX_BOUND = 256
MAX_ANCHORED_BOUND = 1 << 16
UNIVERSE = "".join(map(chr, range(0x3100))) + "０１９\uff0e\u3000\U0001d7ce"

REPEATS = {C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", C.MAX_REPEAT)}
ONE_CHAR = {C.LITERAL, C.NOT_LITERAL, C.IN, C.ANY, C.CATEGORY}
ZERO_WIDTH = {C.AT, C.ASSERT, C.ASSERT_NOT}

_CATEGORY = {
    C.CATEGORY_DIGIT: r"\d", C.CATEGORY_NOT_DIGIT: r"\D", C.CATEGORY_SPACE: r"\s",
    C.CATEGORY_NOT_SPACE: r"\S", C.CATEGORY_WORD: r"\w", C.CATEGORY_NOT_WORD: r"\W",
}  # fmt: skip


@functools.cache
def _category(name: object, flags: int) -> frozenset[str]:
    found = re.compile(_CATEGORY[name], flags & (re.ASCII | re.UNICODE))
    return frozenset(c for c in UNIVERSE if found.fullmatch(c))


def _cased(chars: frozenset[str], flags: int) -> frozenset[str]:
    if not flags & re.IGNORECASE:
        return chars
    return chars | {c.lower() for c in chars} | {c.upper() for c in chars if len(c.upper()) == 1}


def char_set(op: Any, av: Any, flags: int) -> frozenset[str]:
    """The characters one single-character item matches (over UNIVERSE)."""
    every = frozenset(UNIVERSE)
    if op is C.LITERAL:
        return _cased(frozenset(chr(av)), flags)
    if op is C.NOT_LITERAL:
        return every - _cased(frozenset(chr(av)), flags)
    if op is C.ANY:
        return every if flags & re.DOTALL else every - {"\n"}
    if op is C.CATEGORY:
        return _category(av, flags)
    if op is C.IN:
        chars: set[str] = set()
        negate = False
        for kind, value in av:
            if kind is C.NEGATE:
                negate = True
            elif kind is C.LITERAL:
                chars.add(chr(value))
            elif kind is C.RANGE:
                chars.update(c for c in UNIVERSE if value[0] <= ord(c) <= value[1])
            elif kind is C.CATEGORY:
                chars |= _category(value, flags)
            else:  # pragma: no cover - a form the rule does not know: everything
                return every
        cased = _cased(frozenset(chars), flags)
        return every - cased if negate else cased
    raise ValueError(op)


@dataclass(frozen=True)
class First:
    chars: frozenset[str]
    nullable: bool  # the sequence may match the empty string


def first(items: list[tuple[Any, Any]], flags: int) -> First:
    """What a sequence of items can start with, and whether it can match nothing."""
    chars: set[str] = set()
    for op, av in items:
        if op in ZERO_WIDTH:
            continue
        if op in ONE_CHAR:
            return First(frozenset(chars | char_set(op, av, flags)), False)
        if op is C.SUBPATTERN:
            inner = first(list(av[-1]), flags)
        elif op is C.BRANCH:
            parts = [first(list(b), flags) for b in av[1]]
            inner = First(
                frozenset().union(*(p.chars for p in parts)), any(p.nullable for p in parts)
            )
        elif op in REPEATS:
            low, _, body = av
            inner = first(list(body), flags)
            inner = First(inner.chars, inner.nullable or low == 0)
        elif op is getattr(C, "ATOMIC_GROUP", None):
            inner = first(list(av), flags)
        elif op in (C.GROUPREF, getattr(C, "GROUPREF_EXISTS", None)):
            return First(frozenset(UNIVERSE), True)
        else:
            return First(frozenset(UNIVERSE), True)
        chars |= inner.chars
        if not inner.nullable:
            return First(frozenset(chars), False)
    return First(frozenset(chars), True)


def _fixed_simple(items: list[tuple[Any, Any]]) -> bool:
    """A repetition's body: single characters, or groups of them, with no choice inside."""
    for op, av in items:
        if op in ONE_CHAR or op in ZERO_WIDTH:
            continue
        if op is C.SUBPATTERN and _fixed_simple(list(av[-1])):
            continue
        return False
    return True


def _at_start(items: list[tuple[Any, Any]], flags: int) -> bool:
    """``items`` begin with ``\\A`` or ``^`` (not MULTILINE's), perhaps inside a group."""
    if not items:
        return False
    op, av = items[0]
    if op is C.SUBPATTERN:
        return _at_start(list(av[-1]), flags)
    return op is C.AT and (
        av is C.AT_BEGINNING_STRING or (av is C.AT_BEGINNING and not flags & re.MULTILINE)
    )


def problems(  # noqa: C901 - one walk over the parsed pattern, a branch per kind of item
    pattern: str | bytes, flags: int = 0, *, anchored: bool = False
) -> list[str]:
    """Why ``pattern`` may backtrack badly (empty: it passes). ``anchored``: it is only ever
    tried from the start of the text (``re.match``/``fullmatch``)."""
    if isinstance(pattern, bytes):
        pattern = pattern.decode("latin-1")
    parsed = P.parse(pattern, flags)
    flags = parsed.state.flags
    items = list(parsed)
    lead = next(((op, av) for op, av in items if op is not C.SUBPATTERN), None)
    if lead is not None and lead[0] is C.AT:
        at_start = lead[1] is C.AT_BEGINNING_STRING or (
            lead[1] is C.AT_BEGINNING and not flags & re.MULTILINE
        )
        anchored = anchored or at_start
    starts = first(items, flags).chars
    # ``(?<![0-9])[0-9]+x``: no try starts inside a run of what the lookbehind refuses
    guard: frozenset[str] = frozenset()
    if items and items[0][0] is C.ASSERT_NOT and items[0][1][0] == -1:
        behind = list(items[0][1][1])
        if len(behind) == 1 and behind[0][0] in ONE_CHAR:
            guard = char_set(behind[0][0], behind[0][1], flags)
    elif lead == (C.AT, C.AT_BEGINNING) and flags & re.MULTILINE:
        # MULTILINE's ``^``: tried at the start of a line only, as ``(?<![^\n])``
        guard = frozenset(UNIVERSE) - {"\n"}
    found: list[str] = []

    def then(rest: list[tuple[Any, Any]], follow: First) -> First:
        """What may come after a point: the rest of its sequence, then what follows that."""
        after = first(rest, flags)
        if after.nullable:
            return First(after.chars | follow.chars, follow.nullable)
        return after

    def walk(seq: list[tuple[Any, Any]], follow: First, anchored: bool = anchored) -> None:
        """``follow``: what may come after ``seq`` (nullable: the match may end there).
        ``anchored``: ``seq`` is tried from the start of the text only, as the whole
        pattern is or as a branch that begins with ``^`` is (``x|^(?=.{0,4096}?y)``)."""
        anchored = anchored or _at_start(seq, flags)
        bound = MAX_ANCHORED_BOUND if anchored else MAX_BOUND
        for i, (op, av) in enumerate(seq):
            if op in REPEATS and av[1] == 1:
                # an optional part (``?``): not a repetition, its inside followed by the rest
                walk(list(av[2]), then(seq[i + 1 :], follow), anchored)
            elif op in REPEATS:
                low, high, body = av
                body = list(body)
                if not _fixed_simple(body):
                    found.append(f"a repetition holds a repetition or a choice: {body!r:.80}")
                    continue
                if high is C.MAXREPEAT:
                    if len(body) != 1 or body[0][0] not in ONE_CHAR:
                        found.append("an unbounded repetition of more than one character")
                        continue
                    chars = char_set(body[0][0], body[0][1], flags)
                    after = then(seq[i + 1 :], follow)
                    if chars & after.chars:
                        found.append(
                            "an unbounded repetition that what follows it may start with "
                            f"({sorted(chars & after.chars)[:5]!r})"
                        )
                    elif (
                        not after.nullable
                        and not anchored
                        and chars & starts
                        and not chars <= guard
                    ):
                        found.append(
                            "an unbounded repetition of what the pattern may start with, "
                            "not anchored at the start of the text"
                        )
                # a lookbehind refusing the repeated class: tried at the start of a run only
                single = len(body) == 1 and body[0][0] in ONE_CHAR
                guarded = single and char_set(body[0][0], body[0][1], flags) <= guard
                if high is not C.MAXREPEAT and high > bound and not guarded:
                    found.append(f"a repetition of up to {high} (at most {bound})")
                if low > MAX_BOUND and not anchored and not guarded:
                    # each try inside a long run reads up to ``low`` before it fails
                    found.append(f"a repetition of at least {low}, tried inside a run")
            elif op is C.SUBPATTERN:
                walk(list(av[-1]), then(seq[i + 1 :], follow), anchored)
            elif op is C.BRANCH:
                for branch in av[1]:
                    walk(list(branch), then(seq[i + 1 :], follow), anchored)
            elif op in (C.ASSERT, C.ASSERT_NOT):
                walk(list(av[1]), First(frozenset(), True), anchored)
            elif op is getattr(C, "ATOMIC_GROUP", None):
                walk(list(av), then(seq[i + 1 :], follow), anchored)

    walk(items, First(frozenset(), True))
    return sorted(set(found))
