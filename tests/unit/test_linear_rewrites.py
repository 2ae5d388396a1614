"""The backtracking patterns rewritten for issue 34 (class 5) read what they read before:
each rewrite against the pattern it replaced (kept here as the oracle), over generated text
made of the characters and words that matter to it. Only where a bound was added (a field
of more than 4,096 or 65,536 characters, far past any real one) may the two differ, and
the generated text stays below it."""

from __future__ import annotations

import re
import signal
from collections.abc import Callable

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from tuneadvisor.advisor import rules, toml_text
from tuneadvisor.metrics import dcgm_exporter
from tuneadvisor.profile import text_table
from tuneadvisor.slurm import units
from tuneadvisor.slurm.accounting import seff
from tuneadvisor.slurm.client import scontrol
from tuneadvisor.slurm.jobscript import array_range, tuned_from
from tuneadvisor.slurm.launch_line import commands, lexing, search, variables
from tuneadvisor.trainscript import argparse_options, names, parsed
from tuneadvisor.workspace.site_checks import gpu


def _text(*pieces: str, max_size: int = 12) -> st.SearchStrategy[str]:
    """Strings joined from ``pieces`` (characters and whole words)."""
    return st.lists(st.sampled_from(pieces), max_size=max_size).map("".join)


def _chars(alphabet: str, max_size: int = 24) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, max_size=max_size)


# --- advisor/toml_text.py: the tokens that count, outside strings and comments

_OLD_TOML = re.compile(
    r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*'
    r"|[\[\]{}]|[=,\n]|\.",
    re.S,
)


@given(_text(*"\"'\\#[]{}=,\n.a ", '"""', "'''", "\\\\", '\\"', max_size=20))
@example('"""\\"""["""')  # a quoted first quote of three: the string goes on
@example('"\\"\\"[\n"a" [ \'\'\' [')  # one-line strings that do not close
def test_toml_structure_is_the_old_patterns_tokens(text: str) -> None:
    structural = {"[", "]", "{", "}", "=", ",", "\n", "."}
    old = [m.group() for m in _OLD_TOML.finditer(text) if m.group() in structural]
    assert list(toml_text._structure(text)) == old


# --- metrics/dcgm_exporter.py: a sample line and its labels

_OLD_LINE = re.compile(
    r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)"
    r"(?:\{(?P<labels>(?:[^\"}]|\"(?:[^\"\\]|\\.)*\")*)\})?"
    r"\s+(?P<value>\S+)(?:\s+(?P<ts>-?[0-9]+))?\s*$"
)
_OLD_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
_DCGM = _text(*'a_9={}" \\,-:x\t', "gpu", '="0"', " 12", "DCGM_FI_DEV_GPU_UTIL", max_size=16)


@given(_DCGM)
def test_dcgm_line_is_read_as_before(line: str) -> None:
    old = _OLD_LINE.match(line)
    new = dcgm_exporter._parse_line(line)
    assert (None if old is None else old.group("name", "labels", "value", "ts")) == (
        None if new is None else tuple(new)
    )


@given(_DCGM)
def test_dcgm_labels_are_read_as_before(raw: str) -> None:
    old = {
        m.group(1): m.group(2).replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        for m in _OLD_LABEL.finditer(raw)
    }
    assert dcgm_exporter._labels(raw) == old


# --- slurm/launch_line: variables, here-documents, #! lines, site wrappers

_OLD_REFERENCE = re.compile(
    r"\$(?:(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
    r"|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?-)(?P<default>[^}]*))?\})"
)
_SHELL = _text(*"$_{}:-a9 ", "${A", ":-", "$B", "}", max_size=14)


@given(_SHELL)
def test_shell_references_are_found_as_before(value: str) -> None:
    old = {m.group("bare") or m.group("name") for m in _OLD_REFERENCE.finditer(value)}
    assert variables.references(value) == old


@given(_SHELL, st.integers(min_value=0, max_value=20))
def test_a_shell_reference_at_a_place_is_read_as_before(value: str, pos: int) -> None:
    old = _OLD_REFERENCE.match(value, pos)
    new = variables._reference(value, pos, value.rfind("}"))
    assert (
        None
        if old is None
        else (old.group("bare") or old.group("name"), old["op"], old["default"], old.end())
    ) == (None if new is None else tuple(new))


_OLD_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z_0-9]*)\1")


@given(_text(*"<-'\" a_9\t", "<<", "EOF", max_size=12))
def test_heredoc_words_are_found_as_before(text: str) -> None:
    old = _OLD_HEREDOC.search(text)
    new = lexing._HEREDOC.search(text)
    assert (old is None) == (new is None)
    if old is not None and new is not None:
        assert old.span() == new.span()
        assert old.group(2) == (new.group(1) or new.group(2) or new.group(3))


_OLD_SHEBANG = re.compile(r"#!.*\b(?:ba|da|k|z)?sh\b")


@given(_text(*"#!/ \nx_", "sh", "bash", "zsh", "ksh", "dash", "env", max_size=10))
def test_shell_shebangs_are_known_as_before(head: str) -> None:
    assert search._names_a_shell(head) == bool(_OLD_SHEBANG.match(head))


@given(_text(*"_-\nab", "wrapper", max_size=8))
def test_site_wrappers_are_known_as_before(program: str) -> None:
    assert commands._site_wrapper(program) == bool(re.fullmatch(r".+[_-]wrapper", program))


# --- anchored patterns whose unbounded part got a bound (generated text stays under it)

_BOUNDED: list[tuple[str, re.Pattern[str], str]] = [
    (r"(\S.*?)(?: \(exit code ([0-9]+)\))?", seff._STATE, "ab (exit code 12) )("),
    (r"#{2,}(?:\s.*\s#{2,})?", seff._BANNER_FRAME, "# \tab"),
    (r"Function: (.*) at line ([0-9]{1,9})", text_table._FUNCTION, "Function: at line 12x"),
    (r" *(\S+) seconds - (.*):([0-9]{1,9}) - (.*)", text_table._SUMMARY, " 1seconds-:2x"),
]


@given(st.data())
def test_bounded_patterns_match_as_before(data: st.DataObject) -> None:
    for old, new, alphabet in _BOUNDED:
        text = data.draw(_chars(alphabet, max_size=40))
        was, now = re.fullmatch(old, text), new.fullmatch(text)
        assert (None if was is None else was.groups()) == (None if now is None else now.groups())


# --- seff's patterns, now tried with fullmatch: unchanged, only the call is written out


def test_seff_lines_are_read() -> None:
    report = seff.parse_seff(
        "Job ID: 7\nState: COMPLETED (exit code 3)\nCPU Efficiency: 50.00% of 00:00:10 "
        "core-walltime\nMemory Utilized: 1.00 GB (estimated maximum)\n"
        "Memory Efficiency: 50.00% of 2.00 GB (2.00 GB/node)\n"
        "Job Wall-time: 51.4% of 01:00:00 time limit\n"
    )
    assert (report.state, report.exit_code, report.core_walltime_s) == ("COMPLETED", 3, 10)
    assert (report.mem_used_mib, report.mem_requested_per, report.timelimit_s) == (
        1024.0,
        "node",
        3600,
    )


# --- slurm/client/scontrol.py: keys after a blank, found by a lookbehind


def _old_records(line: str) -> dict[str, str] | None:
    matches = list(re.finditer(r"(?:^|\s+)([A-Za-z][A-Za-z0-9_:/]*)=", line))
    if not matches or line[: matches[0].start()].strip():
        return None
    record = {}
    for this, following in zip(matches, [*matches[1:], None], strict=True):
        end = following.start() if following is not None else len(line)
        record[this.group(1)] = line[this.end() : end].strip()
    return record


@given(_text(*"A=b 1\t:/_", "Key=", " x=", max_size=12))
def test_scontrol_records_are_read_as_before(line: str) -> None:
    if not line.strip() or len(line.splitlines()) != 1:
        return
    try:
        new: dict[str, str] | None = scontrol.parse_records(line)[0]
    except scontrol.ScontrolError:
        new = None
    assert new == _old_records(line)


# --- the rest: each function against the pattern it replaced

_OLD_GRES = re.compile(r"(?:^|,)(?:gres[:/])?gpu(?::[^:,(]+)?:([0-9]+)")
_OLD_ARRAY = re.compile(r"^[ \t]*(?:(?:declare|local|typeset)\s+-a\s+)?([A-Za-z_]\w*)=\(", re.M)
_OLD_TUNED = re.compile(
    r"# tuneadvisor: tuned from (?P<evidence>.*) \(sha256:(?P<digest>[0-9a-f]{8,64})\)"
    r" measured with(?P<alloc>(?: \S+)*)\s*"
)
_OLD_MODEL = re.compile(
    r"^(?:[a-z0-9]*_)*(?:model|net|network)(?:_?[A-Z0-9][A-Za-z0-9]*)?$"
    r"|^[a-z0-9]*(?:model|net)$|^model_engine$"
)


@given(_text(*" \t\nax_=(", "declare", "-a", "\f", max_size=12))
def test_array_literals_are_found_as_before(text: str) -> None:
    old = list(_OLD_ARRAY.finditer(text))
    # but for ``declare`` and ``-a`` on two lines: two commands to bash, not read now
    assume(not any("\n" in m.group() for m in old))
    assert _found(array_range._LITERAL, text) == [m.groups() for m in old]


def _found(pattern: re.Pattern[str], text: str) -> list[object]:
    return [m.groups() for m in pattern.finditer(text)]


def _tuned(text: str) -> object:
    match = _OLD_TUNED.fullmatch(text)
    return None if match is None else match.group("evidence", "digest", "alloc")


def _short(text: str) -> str:
    match = re.match(r"(?:[A-Z]+-)+[0-9a-fA-F]{8}", text)
    return match.group(0) if match else text


def _rule_id(text: str) -> bool:
    return bool(rules.ID_PATTERN.fullmatch(text)) and "--" not in text and not text.endswith("-")


CASES: list[tuple[str, st.SearchStrategy[str], Callable[[str], object], Callable[[str], object]]]
CASES = [
    (
        "gres",
        _text(*"gpu:,(gres/12a", max_size=16),
        lambda t: _found(_OLD_GRES, t),
        lambda t: _found(units._GRES_GPU, t),
    ),
    (
        "tuned from",
        _text(
            tuned_from.PREFIX,
            " (sha256:abcdef12) measured with",
            " ",
            "  ",
            "\t",
            "\n",
            "x",
            "(sha256:abcdef12)",
            " --mem=4G",
            "with",
            max_size=7,
        ).map(lambda t: tuned_from.PREFIX + t),
        _tuned,
        tuned_from._split,
    ),
    (
        "model name",
        _text("model", "net", "network", "_", "a", "0", "G", "D2", "model_engine", max_size=5),
        lambda t: bool(_OLD_MODEL.match(t)),
        names._model_name,
    ),
    (
        "python lines",
        _chars("ab\r\n", max_size=12),
        re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z").findall,
        parsed._lines,
    ),
    (
        "shell arithmetic",
        _chars("$(()x\n", max_size=16),
        re.compile(r"\$\(\((.*?)\)\)").findall,
        argparse_options._arithmetic,
    ),
    ("short uuid", _chars("AG-PU-MIG-0aF1234567", max_size=20), _short, gpu.short_uuid),
    (
        "rule id",
        _chars("ab0-", max_size=8),
        lambda t: bool(re.match(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$", t)),
        _rule_id,
    ),
]


@given(st.data())
def test_each_rewrite_reads_as_its_old_pattern(data: st.DataObject) -> None:
    for what, texts, old, new in CASES:
        text = data.draw(texts, what)
        assert new(text) == old(text), what


# --- the code that replaced a pattern is linear too: long strings of one unit repeated

_SCANNERS: list[tuple[str, Callable[[str], object], str]] = [
    ("toml", lambda t: list(toml_text._structure(t)), "\"'\\#[]{}=,\n.a "),
    ("dcgm line", dcgm_exporter._parse_line, 'a_{}" \\,=9'),
    ("dcgm labels", dcgm_exporter._labels, 'a_" \\,=9'),
    ("references", variables.references, "${A:-}$ "),
    ("expand", lambda t: variables.expand_word(t, {"A": "x"}), "${A:-}$ \"'"),
    ("arithmetic", argparse_options._arithmetic, "$(()x\n"),
    ("tuned from", lambda t: tuned_from._split(tuned_from.PREFIX + t), " (sha256:ab1) with\t"),
    ("model name", names._model_name, "model_net0G"),
    ("python lines", parsed._lines, "a\r\n"),
    ("short uuid", gpu.short_uuid, "AG-0aF1"),
]


class _Hang(BaseException):
    pass


def _on_alarm(signum: int, frame: object) -> None:
    raise _Hang


@settings(max_examples=5, deadline=None)
@given(st.data())
def test_the_code_that_replaced_a_pattern_ends_quickly_on_long_strings(
    data: st.DataObject,
) -> None:
    """40,000 characters of a unit of the characters that matter to each (the shape that
    made the old patterns quadratic), under a hang guard of 20 s each, never a timed
    assert: bench/regex_worst.py measures."""
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        for what, run, alphabet in _SCANNERS:
            unit = data.draw(st.text(alphabet=alphabet, min_size=1, max_size=8), what)
            signal.alarm(20)
            try:
                run((unit * (40_000 // len(unit) + 1))[:40_000])
            except _Hang:
                pytest.fail(f"{what} ran 20 s on {unit!r} repeated")
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, previous)
