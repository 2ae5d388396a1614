"""The advice part of the text report: findings grouped by cause, the plan, the diff."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from tuneadvisor.advisor.advice import Advice
from tuneadvisor.advisor.findings import Finding
from tuneadvisor.present.findings import (
    evidence_text,
    finding_heading,
    grouped_findings,
    rationale_line,
    suggestion_items,
)
from tuneadvisor.present.not_read import NOT_READ_TITLE, none_found
from tuneadvisor.present.plan_rows import plan_rows
from tuneadvisor.present.prediction_text import prediction_lines

if TYPE_CHECKING:
    from tuneadvisor.workspace.tuned_files import TunedFiles


def finding_lines(finding: Finding) -> list[str]:
    out = [finding_heading(finding)]
    for item in finding.evidence:
        label, value = evidence_text(item)
        out.append(f"    {label}: {value}")
    out += [f"    suggest {section}: {change}"
            for section, change in suggestion_items(finding.suggest)]  # fmt: skip
    out += textwrap.wrap(rationale_line(finding.rationale), width=92,
                         initial_indent="    ", subsequent_indent="    ")  # fmt: skip
    return out


def render_advice(advice: Advice, tuned: TunedFiles) -> list[str]:
    out = ["", "Findings:" if advice.findings else f"Findings: {none_found(advice.not_read)}"]
    for group, members in grouped_findings(advice.findings):
        out += ["", f"  {group}:"]
        for finding in members:
            out += ["  " + line for line in finding_lines(finding)]
    if advice.not_read:
        out += ["", f"{NOT_READ_TITLE}:"] + [f"  - {item.line()}" for item in advice.not_read]
    plan = advice.plan
    if not plan.is_empty():
        out += ["", "Plan:"]
        out += [f"  {change}   ({because})" for _, change, because in plan_rows(plan)]
    head, details = prediction_lines(advice)
    if head is not None or details:
        out += ["", f"Prediction: {head}" if head else "Prediction: none"]
        out += [f"  - {line}" for line in details]
    if tuned.job_diff:
        out += ["", "Job script changes (tuneadvisor apply writes them):", ""]
        out += tuned.job_diff.rstrip("\n").splitlines()
    if tuned.script_patch:
        out += ["", "Training script patch (tuneadvisor apply writes it as a .patch file):", ""]
        out += tuned.script_patch.rstrip("\n").splitlines()
    notes = (*advice.notes, *tuned.notes)
    if notes:
        out += ["", "Advice notes:"] + [f"  - {note}" for note in notes]
    if advice.sharpen:
        out += ["", "These inputs would sharpen the advice:"]
        out += [f"  - {item}" for item in advice.sharpen]
    return out
