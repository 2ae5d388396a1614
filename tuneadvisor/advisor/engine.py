"""Facts in, findings out: evaluate rules, and run the cases rule files carry."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from tuneadvisor.advisor.expressions import Expression
from tuneadvisor.advisor.facts import FACTS, Facts
from tuneadvisor.advisor.findings import Evidence, Finding, Skipped, Suggestion
from tuneadvisor.advisor.rules import Case, Rule
from tuneadvisor.records import record

# An evidence label a rule gives to what it assumes where a fact was not known: the
# finding's title says it as well ("... (assumed: the Slurm version is not known ...)").
ASSUMED = "assumed"


@record
class Evaluation:
    """What the rules found, and which were skipped."""

    findings: tuple[Finding, ...]  # most severe first
    skipped: tuple[Skipped, ...]  # rules that needed absent facts

    def ids(self) -> list[str]:
        return [f.id for f in self.findings]


def _try(expr: Expression, facts: Facts, params: Mapping[str, object]) -> object | None:
    """A value, or None when a fact it reads is absent or the values make no sense (x/0)."""
    if not expr.facts <= facts.keys():
        return None
    try:
        return expr.evaluate(facts, params)
    except (ArithmeticError, ValueError, TypeError):
        return None


def _plain(value: object) -> object:
    """Whole floats print as integers: 4.0 cores is 4 cores."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _bare_fact(expr: Expression) -> str | None:
    """The fact the value is (or is rounded from); None where the expression computes
    another value: ``profile.loader_share * 100`` is a percent, not the fraction."""
    if len(expr.facts) != 1:
        return None
    name = next(iter(expr.facts))
    bare = re.fullmatch(
        rf"\s*(?:round\(\s*)?{re.escape(name)}\s*(?:,\s*[0-9]+\s*)?\)?\s*", expr.text
    )
    return name if bare else None


def _unit(expr: Expression) -> str:
    """The fact's unit where the value is the fact itself (or rounded), else none."""
    name = _bare_fact(expr)
    return FACTS[name].unit if name is not None else ""


def _section(
    table: Mapping[str, Expression], facts: Facts, params: Mapping[str, object]
) -> dict[str, object]:
    out = {}
    for key, expr in table.items():
        value = _try(expr, facts, params)
        if value is not None:
            out[key] = _plain(value)
    return out


def evaluate_rule(rule: Rule, facts: Facts) -> Finding | Skipped | None:
    missing = sorted(rule.when.facts - facts.keys())
    if missing:
        return Skipped(rule.id, tuple(missing))
    if _try(rule.when, facts, rule.params) is not True:
        return None
    evidence = []
    for label, expr in rule.evidence.items():
        value = _try(expr, facts, rule.params)
        if value is not None:
            unit = "%" if label.endswith("(%)") else _unit(expr)
            key = next(iter(expr.facts)) if len(expr.facts) == 1 else " ".join(expr.text.split())
            evidence.append(Evidence(label, _plain(value), unit, key))
    suggest = Suggestion(
        sbatch=_section(rule.suggest.get("sbatch", {}), facts, rule.params),
        script=_section(rule.suggest.get("script", {}), facts, rule.params),
        env=_section(rule.suggest.get("env", {}), facts, rule.params),
    )
    # what the finding takes for granted is said in its title line too, not only below it
    assumed = next((e.value for e in evidence if e.label == ASSUMED), None)
    return Finding(
        id=rule.id,
        title=rule.title if assumed is None else f"{rule.title} ({ASSUMED}: {assumed})",
        severity=rule.severity,
        group=rule.group,
        evidence=tuple(evidence),
        suggest=suggest,
        rationale=rule.rationale.strip(),
        references=rule.references,
        rule_path=rule.path,
    )


def evaluate(rules: Iterable[Rule], facts: Facts) -> Evaluation:
    findings: list[Finding] = []
    skipped: list[Skipped] = []
    for rule in rules:
        result = evaluate_rule(rule, facts)
        if isinstance(result, Finding):
            findings.append(result)
        elif isinstance(result, Skipped):
            skipped.append(result)
    findings.sort(key=lambda f: (-f.severity.rank, f.group, f.id))
    return Evaluation(tuple(findings), tuple(skipped))


@record
class CaseResult:
    """One case of a rule's examples, evaluated."""

    rule: Rule
    case: Case
    problems: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.problems


def _same(expected: object, actual: object) -> bool:
    if isinstance(expected, int) and isinstance(actual, int):
        return expected == actual  # exact, and no float() of a 400-digit int
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return abs(float(expected) - float(actual)) <= 1e-9 * max(1.0, abs(float(expected)))
    return expected == actual


def run_case(rule: Rule, case: Case) -> CaseResult:
    result = evaluate_rule(rule, case.facts)
    fired = isinstance(result, Finding)
    problems: list[str] = []
    if fired != case.fires:
        why = (
            f" (missing facts: {', '.join(result.missing)})" if isinstance(result, Skipped) else ""
        )
        problems.append(
            f"expected {'to fire' if case.fires else 'not to fire'}, "
            f"but it {'fired' if fired else 'did not'}{why}"
        )
    if isinstance(result, Finding):
        got = {
            "sbatch": result.suggest.sbatch,
            "script": result.suggest.script,
            "env": result.suggest.env,
        }
        for section, values in case.expect.items():
            for key, expected in values.items():
                actual = got[section].get(key)
                if not _same(expected, actual):
                    problems.append(
                        f"suggest.{section}.{key}: expected {expected!r}, got {actual!r}"
                    )
    return CaseResult(rule, case, tuple(problems))


def run_cases(rules: Iterable[Rule]) -> list[CaseResult]:
    return [run_case(rule, case) for rule in rules for case in rule.cases]
