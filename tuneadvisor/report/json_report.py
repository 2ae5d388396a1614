"""The JSON report: an interface other tools rely on (see DESIGN.md). Add keys, never rename."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tuneadvisor import __version__
from tuneadvisor.advisor.advice import Advice
from tuneadvisor.advisor.findings import Finding
from tuneadvisor.advisor.plan import Change
from tuneadvisor.profile.analysis import (
    AnnotatedFunction,
    AnnotatedLine,
    KindShare,
    ProfileAnalysis,
)
from tuneadvisor.session.tuned_files import TunedFiles
from tuneadvisor.session.workspace import Workspace

# 2: findings[].evidence_by_fact (evidence keyed by fact id, the label beside); the keys of
# schema 1 are all kept
SCHEMA_VERSION = 2


def _evidence_by_fact(finding: Finding) -> dict[str, dict[str, Any]]:
    """Evidence keyed by what it comes from, not by its prose label (a label is reworded, a
    fact id is not): the id of the one fact the value is computed from, else the rule's
    expression (which names the facts it combines). The label and the unit are beside."""
    out: dict[str, dict[str, Any]] = {}
    for item in finding.evidence:
        key = item.key or item.label
        if key in out:  # two labels of one rule with the same expression
            key = f"{key} ({item.label})"
        out[key] = {"value": item.value, "label": item.label, "unit": item.unit}
    return out


def _kinds(shares: tuple[KindShare, ...]) -> list[dict[str, Any]]:
    return [{"kind": s.kind.value, "time_s": s.time_s, "percent": s.percent} for s in shares]


def _line(line: AnnotatedLine) -> dict[str, Any]:
    return {
        "line": line.lineno,
        "hits": line.hits,
        "time_s": line.time_s,
        "per_hit_s": line.per_hit_s,
        "percent": line.percent,
        "percent_total": line.percent_total,
        "kind": line.kind.value,
        "source": line.source,
    }


def _function(func: AnnotatedFunction) -> dict[str, Any]:
    return {
        "name": func.name,
        "file": func.filename,
        "first_line": func.first_lineno,
        "source_path": func.source_path,
        "total_s": func.total_s,
        "percent_total": func.percent_total,
        "kinds": _kinds(func.kinds),
        "lines": [_line(line) for line in func.lines],
    }


def _profile(analysis: ProfileAnalysis) -> dict[str, Any]:
    return {
        "origins": list(analysis.origins),
        "unit_s": analysis.unit_s,
        "total_s": analysis.total_s,
        "kinds": _kinds(analysis.kinds),
        "functions": [_function(f) for f in analysis.functions],
        "parts": [
            {"origin": p.origin, "total_s": p.total_s, "kinds": _kinds(p.kinds)}
            for p in analysis.parts
        ],
        "missing_sources": list(analysis.missing_sources),
        "notes": list(analysis.notes),
    }


def _finding(finding: Finding) -> dict[str, Any]:
    return {
        "id": finding.id,
        "severity": finding.severity.value,
        "title": finding.title,
        "group": finding.group,
        "evidence": {e.label: e.value for e in finding.evidence},
        "evidence_units": {e.label: e.unit for e in finding.evidence if e.unit},
        "evidence_by_fact": _evidence_by_fact(finding),
        "suggest": {
            "sbatch": dict(finding.suggest.sbatch),
            "script": dict(finding.suggest.script),
            "env": dict(finding.suggest.env),
        },
        "rationale": finding.rationale,
        "references": list(finding.references),
        "rule": finding.rule_path,
    }


def _advice(advice: Advice, tuned: TunedFiles) -> dict[str, Any]:
    plan = advice.plan

    def changes(table: Mapping[str, Change]) -> dict[str, Any]:
        return {k: {"value": c.value, "because": list(c.because)} for k, c in table.items()}

    return {
        "plan": {
            "sbatch": changes(plan.sbatch),
            "script": changes(plan.script),
            "env": changes(plan.env),
            "notes": list(plan.notes),
        },
        # what the change is expected to buy (advisor/prediction.py), or why none is given
        "prediction": advice.prediction.as_json() if advice.prediction is not None else None,
        "no_prediction": advice.no_prediction,
        "job_diff": tuned.job_diff,
        "script_patch": tuned.script_patch,
        "notes": [*advice.notes, *tuned.notes],
        "sharpen": list(advice.sharpen),
        "not_evaluated": [{"id": s.id, "missing": list(s.missing)} for s in advice.skipped],
        "facts": dict(sorted(advice.facts.items())),
    }


def _job(workspace: Workspace) -> dict[str, Any] | None:
    if workspace.job is None:
        return None
    out: dict[str, Any] = {"path": workspace.job.path}
    job = workspace.tuned.original_job
    if job is not None:
        out["directives"] = job.directives()
        out["problems"] = [
            {"id": p.id, "line": p.line, "option": p.option, "message": p.message,
             "fatal": p.fatal}
            for p in job.problems
        ]  # fmt: skip
    return out


def to_json(workspace: Workspace) -> dict[str, Any]:
    advice = workspace.advice
    return {
        "tool": {"name": "tuneadvisor", "version": __version__, "schema": SCHEMA_VERSION},
        "profile": None if workspace.analysis is None else _profile(workspace.analysis),
        "job": _job(workspace),
        "findings": [] if advice is None else [_finding(f) for f in advice.findings],
        "advice": None if advice is None else _advice(advice, workspace.tuned),
    }
