"""The JSON report: an interface other tools rely on. Its schema is
``tuneadvisor/schema/report-vN.json`` (N: ``SCHEMA_VERSION``, in the report as
``tool.schema``): add keys (and add them to the schema), never rename; read back by
``relaunch/saved_report.py``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

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
from tuneadvisor.relaunch.saved_report import SCHEMA_VERSION
from tuneadvisor.workspace.load import Workspace
from tuneadvisor.workspace.tuned_files import TunedFiles

if TYPE_CHECKING:
    from tuneadvisor.profile.trace.model import NamedTime, RankTrace, TraceSet
    from tuneadvisor.workspace.time_to_result import TimeToResult


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


def _named(named: tuple[NamedTime, ...]) -> list[dict[str, Any]]:
    return [
        {"name": n.name, "calls": n.calls, "total_us": n.total_us, "max_us": n.max_us}
        for n in named
    ]


def _rank_trace(trace: RankTrace) -> dict[str, Any]:
    """One rank: microseconds (``*_us``) and shares as fractions (``*_share``, ``shares``)."""
    from tuneadvisor.present.trace_text import (
        SHOWN_KINDS,
        breakdown,
        dataloader_per_call_us,
        tiny_kernel_share,
    )

    b = breakdown(trace)
    c = trace.copies
    return {
        "path": trace.path,
        "rank": trace.rank,
        "world_size": trace.world_size,
        "has_device": trace.has_device,
        "devices": [
            {
                "name": d.name,
                "compute_major": d.compute_major,
                "total_memory_bytes": d.total_memory_bytes,
            }
            for d in trace.devices
        ],
        "steps": len(trace.steps),
        "mean_step_us": None if b is None else b.mean_step_us,
        "shares": None if b is None else {k: b.shares[k] for k in SHOWN_KINDS},
        "exposed_communication_share": None if b is None else b.exposed_communication_share,
        "gpu_busy_share": None if b is None else b.gpu_busy_share,
        "per_step": [
            {
                "step": s.step,
                "start_us": s.start_us,
                "duration_us": s.duration_us,
                "by_kind_us": {k: s.by_kind.get(k, 0.0) for k in SHOWN_KINDS},
                "communication_exposed_us": s.communication_exposed_us,
                "gpu_busy_us": s.gpu_busy_us,
            }
            for s in trace.steps
        ],
        "top_kernels": _named(trace.top_kernels),
        "top_ops": _named(trace.top_ops),
        "host_gaps": [
            {
                "step": g.step,
                "start_us": g.start_us,
                "duration_us": g.duration_us,
                "before": g.before,
                "after": g.after,
            }
            for g in trace.host_gaps
        ],
        "copies": {
            "htod_pageable": {
                "count": c.htod_pageable_count,
                "bytes": c.htod_pageable_bytes,
                "total_us": c.htod_pageable_us,
            },
            "htod_pinned": {
                "count": c.htod_pinned_count,
                "bytes": c.htod_pinned_bytes,
                "total_us": c.htod_pinned_us,
            },
            "dtoh": {"count": c.dtoh_count, "total_us": c.dtoh_us},
        },
        "syncs": [
            {"name": s.name, "caused_by": s.caused_by, "calls": s.calls, "total_us": s.total_us}
            for s in trace.syncs
        ],
        "dataloader": {
            "calls": trace.dataloader_calls,
            "total_us": trace.dataloader_us,
            "per_call_us": dataloader_per_call_us(trace),
        },
        "kernels": trace.kernels,
        "tiny_kernels": trace.tiny_kernels,
        "tiny_kernel_share": tiny_kernel_share(trace),
        "tensor_core_kernels": trace.tensor_core_kernels,
        "peak_device_memory_bytes": trace.peak_device_memory_bytes,
        "events": trace.events,
        "notes": list(trace.notes),
    }


def _traces(traces: TraceSet) -> dict[str, Any]:
    # imported here (and in _rank_trace): a report without traces keeps its lean import set
    from tuneadvisor.present.trace_text import cannot_show, straggler

    lag = straggler(traces)
    return {
        "ordered_by": traces.ordered_by,
        "ranks": [_rank_trace(t) for t in traces.ranks],
        "straggler": None
        if lag is None
        else {
            "rank": lag.rank,
            "label": lag.label,
            "work_us": lag.work_us,
            "others_median_us": lag.others_us,
            "excess": lag.excess,
        },
        "notes": cannot_show(traces),
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
        # what the inputs held that was not read or followed, each with why
        "not_read": [item.line() for item in advice.not_read],
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
    out: dict[str, Any] = {
        "tool": {"name": "tuneadvisor", "version": __version__, "schema": SCHEMA_VERSION},
        "profile": None if workspace.analysis is None else _profile(workspace.analysis),
    }
    if workspace.traces is not None:  # only with traces: reports without keep their shape
        out["traces"] = _traces(workspace.traces)
    out["job"] = _job(workspace)
    out["findings"] = [] if advice is None else [_finding(f) for f in advice.findings]
    out["advice"] = None if advice is None else _advice(advice, workspace.tuned)
    if workspace.time_to_result is not None:  # only with --queue: reports without keep their shape
        out["time_to_result"] = _time_to_result(workspace.time_to_result)
    return out


def _time_to_result(when: TimeToResult) -> dict[str, Any]:
    from tuneadvisor.present.time_to_result import time_to_result_json

    not_known = [item.why for item in when.not_read]
    return time_to_result_json(when.steps, when.now, when.tuned, when.verdict, not_known)
