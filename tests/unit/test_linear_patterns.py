"""Every regular expression the package runs over input is linear (issue 34, class 5).

Structural: each pattern compiled or run in tuneadvisor/ (tests/regex_sites.py finds them in
the source and in the modules' top-level values) passes the rule of
tests/regex_linearity.py, or is listed in ``KNOWN`` below (patterns found by this audit and
not yet rewritten: each may backtrack on a long line; the list only shrinks). Then a
property: every pattern is searched over long strings made of its own characters (the
shape that makes a backtracking pattern quadratic), under a generous hang guard, never a
timed assert.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.regex_linearity import problems
from tests.regex_sites import Site, call_sites, module_patterns

# Patterns found by this audit and not yet rewritten, each with its module: none left (the
# last 28 were rewritten for issue 34; bench/regex_worst.py times them before and after).
# A pattern listed here must say why it cannot be made linear.
KNOWN: frozenset[str | bytes] = frozenset()

# Sites whose pattern is built at run time, and how each is held instead.
DYNAMIC = {
    "tuneadvisor/advisor/engine.py": "a rule's own `matches` pattern (rules are checked code)",
    "tuneadvisor/advisor/rules.py": "rule ids and fact names from the rule files",
    "tuneadvisor/slurm/joblog/causes.py": "CAUSES' patterns: checked through module_patterns",
    "tuneadvisor/slurm/joblog/scan.py": "the causes' patterns joined: checked the same way",
    "tuneadvisor/slurm/jobscript/array_range.py": "a variable name ([A-Za-z_]\\w*) in a "
    "fixed pattern; mapfile/readarray read without a pattern (_read_into)",
    "tuneadvisor/slurm/jobscript/cpu_binding.py": "an escaped option name",
    "tuneadvisor/slurm/launch_line/visible_gpus.py": "an escaped variable name",
    "tuneadvisor/trainscript/patch.py": "escaped names from the script's own parse",
}


def _sites() -> list[Site]:
    return [*call_sites(), *module_patterns()]


SITES = _sites()


def test_every_pattern_over_input_passes_the_linearity_rule_or_is_known() -> None:
    failing = {
        site.pattern: (site.where, found)
        for site in SITES
        if site.pattern is not None
        and site.pattern not in KNOWN
        and (found := problems(site.pattern, site.flags, anchored=site.anchored))
    }
    assert not failing, "\n".join(f"{w}: {p!r}: {f}" for p, (w, f) in failing.items())


def test_every_pattern_built_at_run_time_is_accounted_for() -> None:
    dynamic = {site.where.rsplit(":", 1)[0] for site in SITES if site.pattern is None}
    assert dynamic <= set(DYNAMIC), sorted(dynamic - set(DYNAMIC))


@pytest.mark.parametrize(
    ("pattern", "anchored", "flaw"),
    [
        (r"(/dev/shm|torch_).*No space left", False, "follows it"),
        (r"(mapfile|readarray)\b.*\bNAME\b", False, "follows it"),
        (r"(\d+)\.(\d+)", False, "may start with"),
        (r"(a+)+b", False, "holds a repetition"),
        (r"(a|ab)*c", False, "holds a repetition or a choice"),
        (r"x.{0,5000}y", False, "up to 5000"),
        (r"x|y.{0,5000}^", False, "up to 5000"),  # the ^ after the repetition: no anchor
        (r"(?m)^\s*x", False, "may start with"),  # \s runs over line breaks
        (r"(?m)^a|[a-z]+x", False, "may start with"),  # a branch of its own, unguarded
    ],
)
def test_the_rule_refuses_the_shapes_that_backtrack(
    pattern: str, anchored: bool, flaw: str
) -> None:
    assert any(flaw in p for p in problems(pattern, anchored=anchored)), problems(pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        r"^(?=.{0,4096}?No space left)(?=.{0,4096}?(?:/dev/shm|torch_))",
        r"^\s*Killed\s*$",
        r"#SBATCH\s+--(\S+)",
        r"(?<![0-9])([0-9]+)\.([0-9]+)",
        r"\d+",
        r"Bus error|^(?=.{0,4096}?No space left)(?=.{0,4096}?(?:/dev/shm|torch_))",
        r"(?m)^[ \t]*([A-Za-z_]\w*)=\(",
    ],
)
def test_the_rule_takes_linear_shapes(pattern: str) -> None:
    assert problems(pattern) == []


def _literals(pattern: str | bytes) -> str:
    text = pattern if isinstance(pattern, str) else pattern.decode("latin-1")
    return "".join(sorted(set(re.sub(r"\\.", "", text)) - set("()[]{}?*+|^$\\")))[:40]


class _Hang(BaseException):
    pass


def _on_alarm(signum: int, frame: object) -> None:
    raise _Hang


def _checked() -> Iterator[Site]:
    seen: set[tuple[str | bytes, int]] = set()
    for site in SITES:
        if site.pattern is None or site.pattern in KNOWN:
            continue
        if (site.pattern, site.flags) not in seen:
            seen.add((site.pattern, site.flags))
            yield site


CHECKED = list(_checked())


@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_long_strings_of_a_patterns_own_characters_end_quickly(data: st.DataObject) -> None:
    """Each pattern that passed the rule, over 40,000 characters of its own literals, digits,
    spaces and line breaks repeated: a backtracking pattern takes minutes on such a string
    (``\\d+\\.\\d+`` over 40,000 digits: 28 s), a linear one milliseconds. The guard (20 s
    per pattern) only stops a hang; bench/fuzz.py measures."""
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        for site in CHECKED:
            assert site.pattern is not None
            alphabet = _literals(site.pattern) + "0a =\n\t_-"
            unit = data.draw(st.text(alphabet=alphabet, min_size=1, max_size=12), site.where)
            text = (unit * (40_000 // len(unit) + 1))[:40_000]
            subject = text if isinstance(site.pattern, str) else text.encode("utf-8")
            compiled = re.compile(site.pattern, site.flags)
            signal.alarm(20)
            try:
                # as the package runs it: from the start only where it only ever matches
                run = compiled.match if site.anchored else compiled.search
                run(subject)  # type: ignore[arg-type]
            except _Hang:
                pytest.fail(f"{site.where}: {site.pattern!r} ran 20 s on {unit!r} repeated")
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, previous)
