"""The advice part of the text report: findings grouped by cause, the plan, the diff."""

from __future__ import annotations

import textwrap
from itertools import groupby

from tuneadvisor.advisor.advice import Advice
from tuneadvisor.advisor.findings import Finding


def _value(value: object, unit: str) -> str:
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return f"{text} {unit}" if unit and unit not in ("fraction",) else text


def finding_lines(finding: Finding) -> list[str]:
    out = [f"[{finding.severity.value}] {finding.id}: {finding.title}"]
    for item in finding.evidence:
        out.append(f"    {item.label}: {_value(item.value, item.unit)}")
    for section, table in (("sbatch", finding.suggest.sbatch), ("script", finding.suggest.script),
                           ("env", finding.suggest.env)):  # fmt: skip
        for key, value in table.items():
            prefix = "--" if section == "sbatch" else ""
            out.append(f"    suggest {section}: {prefix}{key}={value}")
    out += textwrap.wrap(" ".join(finding.rationale.split()), width=92,
                         initial_indent="    ", subsequent_indent="    ")  # fmt: skip
    return out


def render_advice(advice: Advice) -> list[str]:
    out = ["", "Findings:" if advice.findings else "Findings: none"]
    ordered = sorted(advice.findings, key=lambda f: (f.group, -f.severity.rank, f.id))
    for group, members in groupby(ordered, key=lambda f: f.group):
        out += ["", f"  {group}:"]
        for finding in members:
            out += ["  " + line for line in finding_lines(finding)]
    plan = advice.plan
    if not plan.is_empty():
        out += ["", "Plan:"]
        out += [
            f"  #SBATCH --{k}={c.value}   ({', '.join(c.because)})" for k, c in plan.sbatch.items()
        ]
        out += [f"  {k} = {c.value}   ({', '.join(c.because)})" for k, c in plan.script.items()]
        out += [f"  export {k}={c.value}   ({', '.join(c.because)})" for k, c in plan.env.items()]
    if advice.job_diff:
        out += ["", "Job script changes (tuneadvisor apply writes them):", ""]
        out += advice.job_diff.rstrip("\n").splitlines()
    if advice.script_patch:
        out += ["", "Training script patch (tuneadvisor apply writes it as a .patch file):", ""]
        out += advice.script_patch.rstrip("\n").splitlines()
    if advice.notes:
        out += ["", "Advice notes:"] + [f"  - {note}" for note in advice.notes]
    if advice.sharpen:
        out += ["", "These inputs would sharpen the advice:"]
        out += [f"  - {item}" for item in advice.sharpen]
    return out
