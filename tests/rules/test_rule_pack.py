"""Every case of every shipped rule runs as its own test; the canonical ids all exist."""

from __future__ import annotations

import re

import pytest

from tuneadvisor.advisor.engine import run_case
from tuneadvisor.advisor.rules import Case, Rule
from tuneadvisor.workspace.rule_files import default_rules_dir, load_rules

RULES = load_rules([default_rules_dir()])
CANONICAL = {
    "dataloader-bound", "low-gpu-util", "gpu-idle", "under-requested-cores",
    "over-requested-memory", "over-requested-time", "num-workers-hardcoded",
    "too-many-workers", "pin-memory-off", "sync-in-loop", "ddp-missing-distributed-sampler",
    "ddp-world-size-mismatch", "tasks-gpus-mismatch", "invalid-directive", "dos-line-breaks",
}  # fmt: skip


def _cases() -> list[tuple[Rule, Case]]:
    return [(rule, case) for rule in RULES for case in rule.cases]


@pytest.mark.parametrize(("rule", "case"), _cases(), ids=[f"{r.id}: {c.name}" for r, c in _cases()])
def test_rule_case(rule: Rule, case: Case) -> None:
    result = run_case(rule, case)
    assert result.passed, "; ".join(result.problems)


def test_every_canonical_id_ships() -> None:
    assert {rule.id for rule in RULES} >= CANONICAL


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_rule_is_documented_and_tested_both_ways(rule: Rule) -> None:
    assert len(rule.rationale.split()) >= 15, "a rationale a user can act on"
    assert rule.references, "at least one reference"
    assert any(c.fires for c in rule.cases), "a case where it fires"
    assert any(not c.fires for c in rule.cases), "a case where it does not"


# Text that reads as a template nobody filled in (issue 24, point 12: "(the evidence gives
# it)"): braces, a to-do marker, a parenthesis whose "it" points at nothing.
UNFILLED = re.compile(r"\{[^}]*\}|\b(TODO|TBD|XXX)\b|\([^()]*\b(gives|shows|says) it\)")


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_rule_texts_read_as_filled_in(rule: Rule) -> None:
    for text in (rule.title, rule.rationale):
        assert UNFILLED.search(text) is None, text
