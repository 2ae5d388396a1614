"""Rule files: one small TOML file per rule, validated completely before anything runs.

Schema (see rules/README.md): id, title, severity, group, when, rationale, references,
params, evidence, suggest.{sbatch,script,env}, cases. Every problem is reported with the
file and line, as "FILE:LINE: message".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tuneadvisor.advisor.expressions import (
    Expression,
    ExpressionError,
    checked_expression,
    compile_expression,
)
from tuneadvisor.advisor.facts import FACTS, sample_value, type_matches
from tuneadvisor.advisor.findings import Severity
from tuneadvisor.errors import InputError
from tuneadvisor.numbers import is_finite_number
from tuneadvisor.records import record

TOP_KEYS = frozenset(
    {
        "id",
        "title",
        "severity",
        "group",
        "when",
        "rationale",
        "references",
        "params",
        "evidence",
        "suggest",
        "cases",
    }
)
SUGGEST_KEYS = frozenset({"sbatch", "script", "env"})
CASE_KEYS = frozenset({"name", "facts", "fires", "expect"})
# lowercase words joined by single "-": these characters, and no "--" or "-" at the end
ID_PATTERN = re.compile(r"[a-z][a-z0-9-]*")
_FACT_NAMES = frozenset(FACTS)  # built once, not once per expression


class RuleError(InputError):
    """A rule file that is not valid: "FILE:LINE: problem"."""

    def __init__(self, location: str, problem: str) -> None:
        super().__init__(location, problem)


@record
class Case:
    """One example of a rule: facts, whether it fires on them and what it then says."""

    name: str
    facts: Mapping[str, object]
    fires: bool
    expect: Mapping[str, Mapping[str, object]]  # section -> key -> value
    line: int


@record
class Rule:
    """One compiled rule of a rule pack."""

    id: str
    title: str
    severity: Severity
    group: str
    when: Expression
    rationale: str
    references: tuple[str, ...]
    params: Mapping[str, object]
    evidence: Mapping[str, Expression]
    suggest: Mapping[str, Mapping[str, Expression]]  # section -> key -> expression
    cases: tuple[Case, ...]
    path: str


def _line_of(text: str, key: str, table: str | None = None) -> int:
    """Best line for ``key`` (inside ``[table]`` when given): tomllib keeps no positions."""
    lines = text.splitlines()
    start = 0
    if table is not None:
        header = re.compile(r"^\s*\[+\s*" + re.escape(table) + r"\s*\]+")
        start = next((i for i, ln in enumerate(lines) if header.match(ln)), 0)
    pattern = re.compile(r'^\s*"?' + re.escape(key) + r'"?\s*=')
    for i in range(start, len(lines)):
        if pattern.match(lines[i]):
            return i + 1
    return start + 1 if table is not None else 1


class _Loader:
    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text

    def fail(self, message: str, key: str | None = None, table: str | None = None) -> RuleError:
        line = _line_of(self.text, key, table) if key else 1
        return RuleError(f"{self.path}:{line}", f"{message}")

    def string(self, data: Mapping[str, Any], key: str, required: bool = True) -> str:
        value = data.get(key)
        if value is None and not required:
            return ""
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"'{key}' must be a non-empty string", key)
        return value

    def expression(
        self, text: object, key: str, params: Mapping[str, object], table: str | None = None
    ) -> Expression:
        if isinstance(text, bool | int | float):
            text = repr(text)  # a constant suggestion (`OMP_NUM_THREADS = 1`)
        if not isinstance(text, str):
            raise self.fail(f"'{key}' must be an expression string", key, table)
        try:
            return compile_expression(text, _FACT_NAMES, frozenset(params))
        except ExpressionError as exc:
            raise self.fail(f"'{key}': {exc}", key, table) from None

    def load(self) -> Rule:
        # Only a rule pack that is compiled needs the TOML parser (a cached one does not).
        import tomllib

        from tuneadvisor.advisor.toml_text import toml_shape_problem

        shape = toml_shape_problem(self.text)  # bounded before the parser sees it
        if shape is not None:
            raise RuleError(f"{self.path}:1", f"not read: {shape}")
        try:
            data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as exc:
            # tomllib's message ends with "(at line N, column M)"
            match = re.search(r"at line ([0-9]+)", str(exc))
            line = match.group(1) if match else "1"
            raise RuleError(f"{self.path}:{line}", f"not valid TOML: {exc}") from None
        except (RecursionError, ValueError) as exc:  # nested too deep, huge integers
            raise RuleError(f"{self.path}:1", f"not read: {str(exc).split(':')[0]}") from None
        for key in data:
            if key not in TOP_KEYS:
                raise self.fail(f"unknown key '{key}' (known: {', '.join(sorted(TOP_KEYS))})", key)
        rule_id = self.string(data, "id")
        if not ID_PATTERN.fullmatch(rule_id) or "--" in rule_id or rule_id.endswith("-"):
            raise self.fail(f"id '{rule_id}' must be lowercase words joined by '-'", "id")
        if rule_id != self.path.stem:
            raise self.fail(f"id '{rule_id}' must match the file name '{self.path.stem}'", "id")
        severity_text = self.string(data, "severity")
        try:
            severity = Severity(severity_text)
        except ValueError:
            raise self.fail(
                f"severity '{severity_text}' must be one of info, warning, error", "severity"
            ) from None
        params = data.get("params", {})
        if not isinstance(params, dict) or not all(
            isinstance(v, int | float | str | bool) for v in params.values()
        ):
            raise self.fail("'params' must be a table of numbers, strings or booleans", "params")
        unknown_params = [p for p in params if p in FACTS or "." in p]
        if unknown_params:
            raise self.fail(f"param '{unknown_params[0]}' clashes with a fact name", "params")
        when = self.expression(data.get("when"), "when", params)
        evidence = self._table_of_expressions(data.get("evidence", {}), "evidence", params)
        suggest = self._suggest(data.get("suggest", {}), params)
        references = data.get("references", [])
        if not isinstance(references, list) or not all(isinstance(r, str) for r in references):
            raise self.fail("'references' must be a list of strings", "references")
        rule = Rule(
            id=rule_id,
            title=self.string(data, "title"),
            severity=severity,
            group=self.string(data, "group", required=False) or rule_id,
            when=when,
            rationale=self.string(data, "rationale"),
            references=tuple(references),
            params=params,
            evidence=evidence,
            suggest=suggest,
            cases=self._cases(data.get("cases", []), params),
            path=str(self.path),
        )
        self._type_check(rule)
        return rule

    def _table_of_expressions(
        self, table: object, name: str, params: Mapping[str, object]
    ) -> dict[str, Expression]:
        if not isinstance(table, dict):
            raise self.fail(f"'{name}' must be a table", name)
        return {k: self.expression(v, k, params, table=name) for k, v in table.items()}

    def _suggest(
        self, table: object, params: Mapping[str, object]
    ) -> dict[str, dict[str, Expression]]:
        if not isinstance(table, dict):
            raise self.fail("'suggest' must be a table", "suggest")
        for key in table:
            if key not in SUGGEST_KEYS:
                raise self.fail(
                    f"unknown key 'suggest.{key}' (known: sbatch, script, env)",
                    key,
                    table="suggest." + key,
                )
        return {
            section: self._table_of_expressions(table[section], f"suggest.{section}", params)
            for section in ("sbatch", "script", "env")
            if section in table
        }

    def _cases(self, cases: object, params: Mapping[str, object]) -> tuple[Case, ...]:
        if not isinstance(cases, list):
            raise self.fail("'cases' must be an array of tables ([[cases]])", "cases")
        headers = [
            i + 1
            for i, ln in enumerate(self.text.splitlines())
            if ln.strip().startswith("[[cases]]")
        ]
        out = []
        for index, case in enumerate(cases):
            line = headers[index] if index < len(headers) else 1
            if not isinstance(case, dict):
                raise RuleError(f"{self.path}:{line}", "each case must be a table")
            for key in case:
                if key not in CASE_KEYS:
                    raise RuleError(
                        f"{self.path}:{line}",
                        f"unknown key '{key}' in case (known: {', '.join(sorted(CASE_KEYS))})",
                    )
            facts = case.get("facts", {})
            if not isinstance(facts, dict):
                raise RuleError(f"{self.path}:{line}", "case 'facts' must be a table")
            for fact, value in facts.items():
                if fact not in FACTS:
                    raise RuleError(f"{self.path}:{line}", f"unknown fact '{fact}' in case")
                if not type_matches(fact, value):
                    raise RuleError(
                        f"{self.path}:{line}",
                        f"fact '{fact}' must be {FACTS[fact].type}, not {value!r}",
                    )
            fires = case.get("fires")
            if not isinstance(fires, bool):
                raise RuleError(f"{self.path}:{line}", "case needs 'fires = true|false'")
            expect = case.get("expect", {})
            if not isinstance(expect, dict) or any(k not in SUGGEST_KEYS for k in expect):
                raise RuleError(f"{self.path}:{line}", "case 'expect' takes sbatch, script, env")
            for section, values in expect.items():
                for key, value in values.items() if isinstance(values, dict) else ():
                    # a number no setting holds (400 digits) ended `rules check` in an
                    # OverflowError when compared (issue 34)
                    number = isinstance(value, int | float) and not isinstance(value, bool)
                    if number and not is_finite_number(value):
                        raise RuleError(
                            f"{self.path}:{line}",
                            f"case expects {section}.{key} = {str(value)[:20]}..., "
                            "beyond any real value (1e30)",
                        )
            name = case.get("name", f"case {index + 1}")
            out.append(Case(str(name), facts, fires, expect, line))
        return tuple(out)

    def _type_check(self, rule: Rule) -> None:
        """Evaluate every expression on sample values of the declared fact types, so a type
        error (a string compared with a number, say) is caught at load time."""
        facts = _sample_facts()
        checks: list[tuple[str, str | None, Expression]] = [("when", None, rule.when)]
        checks += [(k, "evidence", e) for k, e in rule.evidence.items()]
        checks += [
            (k, f"suggest.{s}", e) for s, table in rule.suggest.items() for k, e in table.items()
        ]
        for key, table, expr in checks:
            try:
                value = expr.evaluate(facts, rule.params)
            except (TypeError, ValueError, ZeroDivisionError, ArithmeticError) as exc:
                if isinstance(exc, ZeroDivisionError):
                    continue  # depends on values, not types
                raise self.fail(f"'{key}': type error: {exc}", key, table) from None
            except Exception as exc:
                raise self.fail(f"'{key}': {exc}", key, table) from None
            if key == "when" and table is None and not isinstance(value, bool):
                raise self.fail("'when' must be a comparison (true or false)", "when")


_SAMPLE_FACTS: dict[str, object] = {}


def _sample_facts() -> Mapping[str, object]:
    """A value of each fact's type (made once: every rule's type check reads them)."""
    if not _SAMPLE_FACTS:
        _SAMPLE_FACTS.update((name, sample_value(name)) for name in FACTS)
    return _SAMPLE_FACTS


def parse_rule(path: Path, text: str) -> Rule:
    """One rule file's text, validated (FILE:LINE errors) before anything runs."""
    return _Loader(path, text).load()


# -- a compiled rule as plain JSON data, for the session's cache of the rule pack ----------


class RuleDataError(ValueError):
    """Data that is not a rule as rule_data writes it (a cache to ignore, not a user error)."""


def _expr_data(expr: Expression) -> list[object]:
    return [expr.text, expr.rewritten, sorted(expr.facts)]


def rule_data(rule: Rule) -> dict[str, object]:
    """The rule as JSON-ready data that rule_from_data reads back equal."""
    return {
        "id": rule.id,
        "title": rule.title,
        "severity": rule.severity.value,
        "group": rule.group,
        "when": _expr_data(rule.when),
        "rationale": rule.rationale,
        "references": list(rule.references),
        "params": dict(rule.params),
        "evidence": {k: _expr_data(e) for k, e in rule.evidence.items()},
        "suggest": {
            s: {k: _expr_data(e) for k, e in table.items()} for s, table in rule.suggest.items()
        },
        "cases": [[c.name, c.facts, c.fires, c.expect, c.line] for c in rule.cases],
        "path": rule.path,
    }


def _need(value: object, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(value, kind):
        raise RuleDataError(f"{type(value).__name__} where {kind} belongs")
    return value


def _table(value: object) -> dict[str, Any]:
    table: dict[str, Any] = _need(value, dict)
    for key in table:
        _need(key, str)
    return table


def _items(value: object, count: int) -> list[Any]:
    items: list[Any] = _need(value, list)
    if len(items) != count:
        raise RuleDataError(f"{len(items)} items where {count} belong")
    return items


_DATA_KEYS = frozenset(
    {"id", "title", "severity", "group", "when", "rationale", "references", "params",
     "evidence", "suggest", "cases", "path"}
)  # fmt: skip


def rule_from_data(data: object) -> Rule:
    """A Rule from rule_data's output, every field checked and every expression checked again
    as compiling would (checked_expression): data from a file may be anything. RuleDataError
    for anything else."""
    d = _table(data)
    if d.keys() != _DATA_KEYS:
        raise RuleDataError("not the keys of a rule")
    params = _table(d["params"])
    for key, value in params.items():
        if not isinstance(value, int | float | str | bool) or key in FACTS or "." in key:
            raise RuleDataError(f"param {key!r}")
    param_names = frozenset(params)

    def expr(value: object) -> Expression:
        text, rewritten, facts = _items(value, 3)
        fact_set = frozenset(_need(f, str) for f in _need(facts, list))
        try:
            return checked_expression(
                _need(text, str), _need(rewritten, str), fact_set, _FACT_NAMES, param_names
            )
        except ExpressionError as exc:
            raise RuleDataError(str(exc)) from None

    def exprs(value: object) -> dict[str, Expression]:
        return {key: expr(e) for key, e in _table(value).items()}

    suggest = _table(d["suggest"])
    if not suggest.keys() <= SUGGEST_KEYS:
        raise RuleDataError("suggest")
    cases = []
    for case in _need(d["cases"], list):
        name, facts, fires, expect, line = _items(case, 5)
        cases.append(
            Case(
                _need(name, str),
                _table(facts),
                _need(fires, bool),
                _table(expect),
                _need(line, int),
            )
        )
    try:
        severity = Severity(_need(d["severity"], str))
    except ValueError:
        raise RuleDataError("severity") from None
    return Rule(
        id=_need(d["id"], str),
        title=_need(d["title"], str),
        severity=severity,
        group=_need(d["group"], str),
        when=expr(d["when"]),
        rationale=_need(d["rationale"], str),
        references=tuple(_need(r, str) for r in _need(d["references"], list)),
        params=params,
        evidence=exprs(d["evidence"]),
        suggest={section: exprs(table) for section, table in suggest.items()},
        cases=tuple(cases),
        path=_need(d["path"], str),
    )
