"""The JSON report: an interface other tools rely on (see DESIGN.md). Add keys, never rename."""

from __future__ import annotations

from typing import Any

from tuneadvisor import __version__
from tuneadvisor.profile.analysis import (
    AnnotatedFunction,
    AnnotatedLine,
    KindShare,
    ProfileAnalysis,
)
from tuneadvisor.workspace import Workspace

SCHEMA_VERSION = 1


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


def to_json(workspace: Workspace) -> dict[str, Any]:
    return {
        "tool": {"name": "tuneadvisor", "version": __version__, "schema": SCHEMA_VERSION},
        "profile": None if workspace.analysis is None else _profile(workspace.analysis),
        "job": None if workspace.job is None else {"path": workspace.job.path},
        "findings": [],
    }
