"""The compiled rule pack cached in the user's cache folder: read back equal, keyed by the
files' contents, and never trusted: a corrupt or hostile file is ignored and the rules are
compiled, as without a cache."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tuneadvisor.advisor import expressions
from tuneadvisor.advisor.rules import Rule, RuleDataError, rule_data, rule_from_data
from tuneadvisor.workspace import rule_files
from tuneadvisor.workspace.rule_files import default_rules_dir, load_rules, user_cache_dir


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home / "tuneadvisor"


def compiled() -> tuple[Rule, ...]:
    return load_rules([default_rules_dir()])


def cache_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("rules-*.json"))


def no_compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> Rule:
        raise AssertionError("compiled although the cache holds the pack")

    monkeypatch.setattr(rule_files, "parse_rule", refuse)


def test_every_shipped_rule_reads_back_equal() -> None:
    for rule in compiled():
        assert rule_from_data(json.loads(json.dumps(rule_data(rule)))) == rule


def test_the_second_load_reads_the_cache(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = load_rules([default_rules_dir()], cached=True)
    assert first == compiled()
    (written,) = cache_files(cache_home)
    no_compiling(monkeypatch)
    assert load_rules([default_rules_dir()], cached=True) == first
    assert cache_files(cache_home) == [written]


def test_without_cached_nothing_is_written(cache_home: Path) -> None:
    compiled()
    assert not cache_home.exists()


def test_a_changed_rule_file_is_a_new_key(cache_home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "rules"
    folder.mkdir()
    rule = default_rules_dir() / "gpu-idle.toml"
    copy = folder / rule.name
    copy.write_bytes(rule.read_bytes())
    before = load_rules([folder], cached=True)
    copy.write_text(rule.read_text().replace('severity = "error"', 'severity = "warning"'))
    after = load_rules([folder], cached=True)
    assert len(cache_files(cache_home)) == 2
    assert before != after
    assert after == load_rules([folder])


def corrupt_cases(key: str, good: dict[str, object]) -> dict[str, bytes]:
    rules = good["rules"]
    assert isinstance(rules, list)
    hostile = json.loads(json.dumps(rules))
    # what a cache file could hold that no rule file may: an attribute, an import, a call
    hostile[0]["when"] = ["x", "__import__('os').system('touch /tmp/pwned')", []]
    dunder = json.loads(json.dumps(rules))
    dunder[0]["when"] = ["x", "f__job__cpus_per_task.__class__", ["job.cpus_per_task"]]
    unknown_fact = json.loads(json.dumps(rules))
    unknown_fact[0]["when"] = ["x", "f__no__such", ["no.such"]]
    deep = json.loads(json.dumps(rules))
    deep[0]["when"] = ["x", "-" * 5000 + "1", []]
    wrong_type = json.loads(json.dumps(rules))
    wrong_type[0]["params"] = {"limit": [1, 2]}

    def doc(items: object, **extra: object) -> bytes:
        return json.dumps({"format": 1, "key": key, "rules": items, **extra}).encode()

    return {
        "empty": b"",
        "binary": os.urandom(256),
        "truncated": doc(rules)[:-100],
        "nested": b"[" * 100_000,
        "another key": json.dumps({"format": 1, "key": "0" * 64, "rules": rules}).encode(),
        "another format": json.dumps({"format": 99, "key": key, "rules": rules}).encode(),
        "extra key": doc(rules, more=1),
        "a pickle": b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00N.",
        "hostile expression": doc(hostile),
        "dunder attribute": doc(dunder),
        "unknown fact": doc(unknown_fact),
        "too deep": doc(deep),
        "wrong param": doc(wrong_type),
        "not rules": doc([1, "two", None]),
    }


def test_a_corrupt_or_hostile_cache_is_compiled_over(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = load_rules([default_rules_dir()], cached=True)
    (path,) = cache_files(cache_home)
    good = json.loads(path.read_bytes())
    for name, data in corrupt_cases(good["key"], good).items():
        path.write_bytes(data)
        assert load_rules([default_rules_dir()], cached=True) == expected, name
        assert json.loads(path.read_bytes()) == good, name  # compiled, then written again
    assert not Path("/tmp/pwned").exists()


def test_a_cache_that_is_not_a_regular_file_is_not_read(cache_home: Path) -> None:
    expected = load_rules([default_rules_dir()], cached=True)
    (path,) = cache_files(cache_home)
    path.unlink()
    os.mkfifo(path)  # reading it would block
    assert load_rules([default_rules_dir()], cached=True) == expected


def test_an_unwritable_cache_folder_is_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file: no folder can be made in it
    assert load_rules([default_rules_dir()], cached=True) == compiled()


def test_a_pack_that_does_not_read_back_equal_is_not_cached(
    cache_home: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "rules"
    folder.mkdir()
    text = (default_rules_dir() / "gpu-idle.toml").read_text()
    # a TOML date is no JSON value: this pack is compiled every time
    dated = '[[cases]]\nname = "dated"\nfires = false\nexpect = { env = { at = 1979-05-27 } }\n'
    (folder / "gpu-idle.toml").write_text(text + "\n" + dated)
    load_rules([folder], cached=True)
    assert cache_files(cache_home) == []


def test_old_caches_are_pruned(cache_home: Path, tmp_path: Path) -> None:
    cache_home.mkdir(parents=True)
    for n in range(rule_files.KEEP_CACHE_FILES + 3):
        old = cache_home / f"rules-{n:032x}.json"
        old.write_text("{}")
        os.utime(old, (n, n))
    load_rules([default_rules_dir()], cached=True)
    kept = cache_files(cache_home)
    assert len(kept) == rule_files.KEEP_CACHE_FILES
    assert cache_home / f"rules-{0:032x}.json" not in kept


def test_rule_from_data_refuses_what_rule_data_never_writes() -> None:
    good = rule_data(compiled()[0])
    bad_data: list[object] = [
        {},
        [],
        {**good, "severity": "fatal"},
        {**good, "when": "profile.x > 1"},
    ]
    for bad in bad_data:
        with pytest.raises(RuleDataError):
            rule_from_data(bad)


def test_the_cache_folder_follows_xdg(tmp_path: Path) -> None:
    assert user_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "tuneadvisor"
    home = Path.home()
    assert user_cache_dir({"XDG_CACHE_HOME": "relative"}) == home / ".cache" / "tuneadvisor"


def test_a_link_at_the_cache_name_is_replaced_not_followed(
    cache_home: Path, tmp_path: Path
) -> None:
    expected = load_rules([default_rules_dir()], cached=True)
    (path,) = cache_files(cache_home)
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    path.unlink()
    path.symlink_to(victim)  # not a rule cache: compiled, and written as a file of its own
    assert load_rules([default_rules_dir()], cached=True) == expected
    assert victim.read_text() == "mine"
    assert not path.is_symlink()


# a rewritten expression read back: names a parser would read as one Name, or not (keywords,
# constants, non-ASCII letters the parser normalises, a call, spaces)
_read_back = st.sampled_from(
    ["f__job__gpus", "threshold", "min", "None", "True", "lambda", "match", "_", "ﬁ", "fi",
     "f__job__gpus()", " f__job__gpus", "f__x__y", "__import__", "x1", "1x", ""]
) | st.text(st.sampled_from("fi_ﬁx1 ("), max_size=6)  # fmt: skip


@given(_read_back, st.sets(st.sampled_from(["threshold", "fi", "ﬁ", "lambda", "match", "_"])))
@example("ﬁ", {"ﬁ"})  # the parser reads `fi`: no param
@example("lambda", {"lambda"})  # does not parse
@example("match", {"match"})  # a soft keyword is a name
@example("None", set())  # a constant
def test_a_bare_name_is_checked_as_the_walk_checks_it(rewritten: str, params: set[str]) -> None:
    """checked_expression's shortcut for one name answers as the whole walk does."""
    facts = frozenset({"job.gpus"})
    args = ("x", rewritten, facts, frozenset({"job.gpus", "x.y"}), frozenset(params))

    def outcome() -> object:
        try:
            return expressions.checked_expression(*args)
        except expressions.ExpressionError as exc:
            return type(exc)

    quick = outcome()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(expressions, "_bare_name", lambda text: False)
        assert outcome() == quick
