"""Rule files are validated completely on load, with file and line in every message."""

from __future__ import annotations

import contextlib
import io
import textwrap
from pathlib import Path

import pytest

from tuneadvisor.advisor.engine import evaluate
from tuneadvisor.advisor.rules import RuleError
from tuneadvisor.cli import main
from tuneadvisor.workspace.rule_files import load_rule, load_rules

GOOD = """\
id = "{id}"
title = "Loader waits"
severity = "warning"
when = "profile.loader_share >= limit"
rationale = "The loader is slow."
[params]
limit = 0.1
[suggest.sbatch]
cpus-per-task = "job.cpus_per_task * 2"
"""


def write(tmp_path: Path, text: str, name: str = "my-rule") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(textwrap.dedent(text))
    return path


def error_of(path: Path) -> str:
    with pytest.raises(RuleError) as info:
        load_rule(path)
    return str(info.value)


def test_a_good_rule_loads_and_fires(tmp_path: Path) -> None:
    rule = load_rule(write(tmp_path, GOOD.format(id="my-rule")))
    result = evaluate([rule], {"profile.loader_share": 0.5, "job.cpus_per_task": 3})
    assert result.ids() == ["my-rule"]
    assert result.findings[0].suggest.sbatch == {"cpus-per-task": 6}


def test_absent_facts_mean_no_data_not_a_finding(tmp_path: Path) -> None:
    rule = load_rule(write(tmp_path, GOOD.format(id="my-rule")))
    result = evaluate([rule], {"job.cpus_per_task": 3})
    assert result.findings == ()
    assert result.skipped[0].missing == ("profile.loader_share",)


def test_suggestion_with_absent_fact_is_left_out(tmp_path: Path) -> None:
    rule = load_rule(write(tmp_path, GOOD.format(id="my-rule")))
    finding = evaluate([rule], {"profile.loader_share": 0.5}).findings[0]
    assert finding.suggest.sbatch == {}


def test_unknown_top_level_key_names_file_and_line(tmp_path: Path) -> None:
    text = GOOD.format(id="my-rule").replace(
        'severity = "warning"\n', 'severity = "warning"\ncolour = "red"\n'
    )
    path = write(tmp_path, text)
    message = error_of(path)
    assert message.startswith(f"{path}:4:")
    assert "unknown key 'colour'" in message


def test_unknown_fact_name_is_reported_with_line(tmp_path: Path) -> None:
    text = GOOD.format(id="my-rule").replace("profile.loader_share", "profile.loader_shar")
    message = error_of(write(tmp_path, text))
    assert ":4:" in message and "profile.loader_shar" in message


def test_bad_expression_is_reported_with_line(tmp_path: Path) -> None:
    text = GOOD.format(id="my-rule").replace('"job.cpus_per_task * 2"', '"job.cpus_per_task *"')
    message = error_of(write(tmp_path, text))
    assert ":9:" in message and "does not parse" in message


def test_type_error_is_caught_before_anything_runs(tmp_path: Path) -> None:
    text = GOOD.format(id="my-rule").replace("profile.loader_share >= limit", "job.partition > 3")
    message = error_of(write(tmp_path, text))
    assert ":4:" in message and "type error" in message


def test_when_must_be_a_condition(tmp_path: Path) -> None:
    text = GOOD.format(id="my-rule").replace(
        "profile.loader_share >= limit", "profile.loader_share * 2"
    )
    assert "true or false" in error_of(write(tmp_path, text))


@pytest.mark.parametrize(
    "attack",
    ["__import__('os').system('true')", "profile.loader_share.__class__", "open('x') > 1",
     "(1).__class__ == 1", "[x for x in (1,)] == 1"],
)  # fmt: skip
def test_no_escape_from_the_expression_language(tmp_path: Path, attack: str) -> None:
    text = GOOD.format(id="my-rule").replace("profile.loader_share >= limit", attack)
    with pytest.raises(RuleError):
        load_rule(write(tmp_path, text))


def test_id_must_match_file_name(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, GOOD.format(id="other-rule")))
    assert ":1:" in message and "file name" in message


def test_invalid_toml_gives_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.format(id="my-rule") + "x = = 1\n")
    message = error_of(path)
    assert message.startswith(f"{path}:10:")


def test_case_with_unknown_fact_or_wrong_type(tmp_path: Path) -> None:
    base = GOOD.format(id="my-rule")
    bad_name = base + '[[cases]]\nfacts = { "gpu.utl" = 1 }\nfires = true\n'
    assert "unknown fact 'gpu.utl'" in error_of(write(tmp_path, bad_name))
    bad_type = base + '[[cases]]\nfacts = { "job.cpus_per_task" = "four" }\nfires = true\n'
    message = error_of(write(tmp_path, bad_type))
    assert ":10:" in message and "must be int" in message


def test_later_folder_overrides_a_rule_by_id(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    write(first, GOOD.format(id="my-rule"))
    write(second, GOOD.format(id="my-rule").replace("Loader waits", "Site version"))
    (rule,) = load_rules([first, second])
    assert rule.title == "Site version"


# Expressions that pass Python's parser but would allocate, spin or recurse when run
# (issue 13): refused when the rule is loaded, so `rules check` passing means evaluating
# cannot blow up.
BLOWING_UP = {
    "a % format width of 2 GB": "'%2147483000s' % 1 == 'x'",
    "an f-string width of 10^9": "f'{1:1000000000}' == 'x'",
    "a power just under simpleeval's limit": "4000000 ** 4000000 > 1",
    "string multiplication": "'x' * 1000000000 == 'x'",
    "a shift of a billion bits": "(1 << 1000000000) > 1",
    "round to a billion digits": "round(5, -1000000000) == 0",
    "not 5000 times": "not " * 5000 + "True",
    "a sum of 20000 terms": " + ".join(["1"] * 20000) + " > 1",
    "2000 nested ifs": "(" * 2000 + "1" + " if True else 2)" * 2000 + " > 0",
    "a subscript": "'abc'[0] == 'a'",
}


@pytest.mark.parametrize("expression", BLOWING_UP.values(), ids=BLOWING_UP.keys())
def test_an_expression_that_would_blow_up_is_refused_at_load(
    tmp_path: Path, expression: str
) -> None:
    text = GOOD.format(id="my-rule").replace(
        '"profile.loader_share >= limit"', "'''" + expression + "'''"
    )
    message = error_of(write(tmp_path, text))
    assert message.startswith(f"{tmp_path / 'my-rule.toml'}:") and "'when'" in message


@pytest.mark.parametrize(
    ("text", "fact"),
    [("job.partition % 3", "%2147483000s"), ("job.partition * 3", "ab"),
     ("job.partition + job.partition", "x" * 900)],
)  # fmt: skip
def test_a_string_fact_cannot_make_an_operation_blow_up(text: str, fact: str) -> None:
    """Facts come from the inputs: a partition named like a format string is formatted
    by nobody, and strings do not grow past the bound."""
    from tuneadvisor.advisor.expressions import compile_expression

    expr = compile_expression(text, frozenset({"job.partition"}))
    with pytest.raises((TypeError, OverflowError)):
        expr.evaluate({"job.partition": fact}, {})


def test_ordinary_arithmetic_still_works() -> None:
    from tuneadvisor.advisor.expressions import compile_expression

    expr = compile_expression("round(2 ** 10 % 1000 * 1.5, 1) + max(1, 2)", frozenset())
    assert expr.evaluate({}, {}) == 38.0


@pytest.mark.parametrize(
    "value", ["9" * 400, "-" + "9" * 400, "1e999", "1e31", "99999999999999999999999999999999"]
)
def test_rules_check_with_a_case_expecting_a_number_past_any_setting_is_one_line(
    tmp_path: Path, value: str
) -> None:
    """Issue 34: a case expecting a 400-digit value ended `rules check` in an OverflowError;
    any number past 1e30 is refused where the case is read, naming its file and line."""
    source = Path(__file__).parents[2] / "tuneadvisor" / "rules" / "no-loader-workers.toml"
    text = source.read_text().replace("num_workers = 7 }", f"num_workers = {value} }}", 1)
    assert value in text
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / source.name).write_text(text)
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = main(["rules", "check", str(folder)])
    said = err.getvalue().strip().splitlines()
    assert status == 2 and len(said) == 1 and source.name in said[0], said
