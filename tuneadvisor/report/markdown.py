"""The markdown report: for pasting into an issue, a wiki page or a help ticket."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from tuneadvisor.advisor.advice import Advice
from tuneadvisor.present.findings import evidence_text, rationale_line, suggestion_items
from tuneadvisor.present.metrics_read import metrics_lines
from tuneadvisor.present.not_read import NOT_READ_TITLE
from tuneadvisor.present.number_text import (
    column_unit,
    heat_bar,
    in_unit,
    per_hit,
    percent,
    seconds,
    top_kinds_text,
)
from tuneadvisor.present.plan_rows import plan_rows
from tuneadvisor.present.prediction_text import prediction_lines
from tuneadvisor.present.terminal_safe import terminal_safe
from tuneadvisor.present.training_script import training_script_line
from tuneadvisor.profile.analysis import AnnotatedFunction, ProfileAnalysis, kind_summary_text
from tuneadvisor.workspace.load import Workspace
from tuneadvisor.workspace.tuned_files import TunedFiles

if TYPE_CHECKING:
    from tuneadvisor.profile.trace.model import TraceSet


def _cell(text: str) -> str:
    # A pipe or backtick in source would break the table.
    return text.replace("|", "\\|").replace("`", "'")


def _function(func: AnnotatedFunction) -> list[str]:
    out = [
        f"### `{func.qualified}` at {os.path.basename(func.filename)}:{func.first_lineno}",
        "",
        f"{seconds(func.total_s)} s, {percent(func.percent_total)} % of the profile. "
        f"{kind_summary_text(func)}.",
    ]
    if func.source_path is None and not func.block:
        out += ["", f"> Source not found for `{func.filename}`."]
    unit, size, decimals = column_unit(line.time_s for line in func.lines)
    out += [
        "",
        f"| Line | Hits | Time {unit} | Per hit | % | Heat | Kind | Source |",
        "|---:|---:|---:|---:|---:|:---|:---|:---|",
    ]
    for line in func.lines:
        src = _cell((line.source or "").strip())
        out.append(
            f"| {line.lineno} | {line.hits} | {in_unit(line.time_s, size, decimals)} | "
            f"{per_hit(line.per_hit_s)} | {percent(line.percent)} | "
            f"`{heat_bar(line.percent).rstrip() or ' '}` | {line.kind.value} | "
            f"{'`' + src + '`' if src else ''} |"
        )
    return out


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _analysis(analysis: ProfileAnalysis) -> list[str]:
    out = [
        "## Profile",
        "",
        f"{', '.join(f'`{o}`' for o in analysis.origins)}: total {seconds(analysis.total_s)} s, "
        f"timer unit {analysis.unit_s:g} s, {_count(len(analysis.functions), 'function')}.",
    ]
    if analysis.parts:
        out += ["", "| File | Total s | Top kinds |", "|:---|---:|:---|"]
        for part in analysis.parts:
            top = top_kinds_text(part.kinds)
            out.append(f"| `{part.origin}` | {seconds(part.total_s)} | {top} |")
    for func in analysis.functions:
        out += ["", *_function(func)]
    if analysis.notes:
        out += ["", "**Notes**", ""] + [f"- {note}" for note in analysis.notes]
    return out


def _steps(traces: TraceSet, top: int = 5) -> list[str]:
    """The "Steps" section: the breakdown per rank as a table, then what each rank proves."""
    # imported here: a report without traces keeps its lean import set
    from tuneadvisor.present.trace_text import (
        KIND_LABELS,
        SHOWN_KINDS,
        breakdown,
        cannot_show,
        detail_ranks,
        duration,
        gap_between,
        observations,
        rank_label,
        share_percent,
        short_name,
        straggler,
    )

    kinds = " | ".join(KIND_LABELS[k] for k in SHOWN_KINDS)
    out = [
        "## Steps",
        "",
        "From the torch.profiler trace, per rank: each step's time by the first kind busy "
        "(the TensorBoard plugin's priority), as a share of the rank's step time.",
        "",
        f"| Rank | Steps | Mean step | {kinds} | Exposed communication |",
        "|:---|---:|---:|" + "---:|" * len(SHOWN_KINDS) + "---:|",
    ]
    for trace in traces.ranks:
        b = breakdown(trace)
        if b is None:
            continue
        shares = " | ".join(share_percent(b.shares[k]) for k in SHOWN_KINDS)
        out.append(
            f"| {_cell(b.label)} | {b.steps} | {duration(b.mean_step_us)} | {shares} | "
            f"{share_percent(b.exposed_communication_share)} |"
        )
    lag = straggler(traces)
    if lag is not None:
        out += ["", f"**{lag.sentence()[0].upper()}{lag.sentence()[1:]}.**"]
    shown = detail_ranks(traces)
    for trace in shown:
        label = _cell(rank_label(trace))
        said = observations(trace)
        if said:
            out += ["", f"### {label}", ""] + [f"- {line}" for line in said]
        for title, named in (("Top kernels", trace.top_kernels), ("Top ops", trace.top_ops)):
            if named:
                out += ["", f"{title} ({label}):", "", "| Time | Calls | Name |"]
                out.append("|---:|---:|:---|")
                out += [f"| {duration(n.total_us)} | {n.calls} | `{_cell(short_name(n.name))}` |"
                        for n in named[:top]]  # fmt: skip
        if trace.host_gaps:
            out += ["", f"Longest host gaps ({label}):", "", "| Gap | Step | Where |",
                    "|---:|---:|:---|"]  # fmt: skip
            out += [f"| {duration(g.duration_us)} | {g.step} | "
                    f"{_cell(gap_between(g.before, g.after))} |"
                    for g in trace.host_gaps[:top]]  # fmt: skip
    if len(shown) < len(traces.ranks):
        more = len(traces.ranks) - len(shown)
        out += ["", f"{more} more ranks: `--format json` has each."]
    notes = cannot_show(traces)
    if notes:
        out += ["", "**What these traces cannot show**", ""] + [f"- {n}" for n in notes]
    return out


def _advice(advice: Advice, tuned: TunedFiles) -> list[str]:
    out = ["", "## Findings", ""]
    if not advice.findings:
        out.append("No findings in what was read." if advice.not_read else "No findings.")
    for finding in advice.findings:
        out += ["", f"### {finding.severity.value}: `{finding.id}` {finding.title}", ""]
        # the unit once: not after a label that names it ("(%): **80.1**")
        out += [f"- {label}: **{value}**"
                for label, value in map(evidence_text, finding.evidence)]  # fmt: skip
        out += [f"- suggest ({section}): `{change}`"
                for section, change in suggestion_items(finding.suggest)]  # fmt: skip
        out += ["", rationale_line(finding.rationale)]
        out += [f"- <{ref}>" for ref in finding.references]
    if advice.not_read:
        out += ["", f"## {NOT_READ_TITLE}", ""] + [f"- {item.line()}" for item in advice.not_read]
    if not advice.plan.is_empty():
        out += ["", "## Plan", ""]
        out += [f"- {where}: `{change}` (because {because})"
                for where, change, because in plan_rows(advice.plan)]  # fmt: skip
    head, details = prediction_lines(advice)
    if head is not None or details:
        out += ["", "## Prediction", "", f"**{head}**" if head else "None."]
        out += ([""] if head else []) + [f"- {line}" for line in details]
    if tuned.job_diff:
        out += ["", "## Job script changes", "", "```diff", tuned.job_diff.rstrip("\n"), "```"]
    if tuned.script_patch:
        out += ["", "## Training script patch", "", "```diff",
                tuned.script_patch.rstrip("\n"), "```"]  # fmt: skip
    notes = (*advice.notes, *tuned.notes)
    if notes:
        out += ["", "**Advice notes**", ""] + [f"- {n}" for n in notes]
    if advice.sharpen:
        out += ["", "**These inputs would sharpen the advice**", ""]
        out += [f"- {item}" for item in advice.sharpen]
    return out


def _time_to_result(workspace: Workspace) -> list[str]:
    """--queue's section, as the text report's lines in a block; what is missing for it is
    in the Not read part."""
    when = workspace.time_to_result
    if when is None:
        return []
    from tuneadvisor.present.time_to_result import time_to_result_lines

    lines = time_to_result_lines(when.steps, when.now, when.tuned, when.verdict)
    if not lines:
        return []
    return ["", f"## {lines[0].rstrip(':')}", "", "```", *(ln[2:] for ln in lines[1:]), "```"]


def render_markdown(workspace: Workspace) -> str:
    out = ["# tuneadvisor report"]
    if workspace.analysis is not None:
        out += ["", *_analysis(workspace.analysis)]
    if workspace.traces is not None:
        out += ["", *_steps(workspace.traces)]
    if workspace.job is not None:
        out += ["", "## Job script", "", f"`{workspace.job.path}`"]
    if (line := training_script_line(workspace)) is not None:
        out += ["", line]
    if workspace.metrics is not None:
        out += [
            "",
            "## Metrics read",
            "",
            *(f"- {line}" for line in metrics_lines(workspace.metrics)),
        ]
    if workspace.advice is not None:
        out += _advice(workspace.advice, workspace.tuned)
    out += _time_to_result(workspace)
    # the one boundary: whatever an input held, no control character reaches the reader
    return terminal_safe("\n".join(out) + "\n")
