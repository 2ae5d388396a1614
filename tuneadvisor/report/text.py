"""The plain-text report: readable in a file, a pipe or a help ticket (no colour codes)."""

from __future__ import annotations

import os

from tuneadvisor.present.advice_text import render_advice
from tuneadvisor.present.metrics_read import metrics_lines
from tuneadvisor.present.number_text import (
    column_unit,
    heat_bar,
    in_unit,
    per_hit,
    percent,
    seconds,
    top_kinds_text,
)
from tuneadvisor.present.requests_use import job_request_lines
from tuneadvisor.present.terminal_safe import terminal_safe
from tuneadvisor.present.terminal_width import terminal_columns
from tuneadvisor.present.training_script import training_script_line
from tuneadvisor.profile.analysis import AnnotatedFunction, ProfileAnalysis, kind_summary_text
from tuneadvisor.profile.skew import rank_skews, skew_text
from tuneadvisor.workspace.load import Workspace

_HEADER = ("Line", "Hits", "Time", "Per hit", "%", "Heat", "Kind", "Source")
# Where there is no terminal (a file, a pipe, a help ticket): the width the reports keep to.
DEFAULT_WIDTH = 100
# The source column keeps at least this much of a line, however narrow the terminal: the
# numbers are never cut, and a row past the width wraps rather than lose its line's start.
_MIN_SOURCE = 12
_ELLIPSIS = "…"


def report_width() -> int:
    """The columns the text report fits: $COLUMNS, else stdout's terminal, else 100."""
    return terminal_columns(DEFAULT_WIDTH)


def _fit(source: str, room: int) -> str:
    """``source`` in ``room`` characters: its end cut with "…" (its start, the indentation
    and what the line does, is what tells the lines apart)."""
    if len(source) <= room:
        return source
    return source[: room - len(_ELLIPSIS)] + _ELLIPSIS


def _where(func: AnnotatedFunction) -> str:
    return f"{os.path.basename(func.filename)}:{func.first_lineno}"


def _function_table(func: AnnotatedFunction, width: int = DEFAULT_WIDTH) -> list[str]:
    """The function's lines, numbers first, each row within ``width`` columns: a long source
    line is cut at its end with "…", never a number (a terminal wrapped such a row)."""
    unit, size, decimals = column_unit(line.time_s for line in func.lines)
    header = (*_HEADER[:2], f"Time {unit}", *_HEADER[3:])
    rows = [
        (
            str(line.lineno),
            str(line.hits),
            in_unit(line.time_s, size, decimals),
            per_hit(line.per_hit_s),
            percent(line.percent),
            heat_bar(line.percent),
            line.kind.value,
            (line.source or "").rstrip(),
        )
        for line in func.lines
    ]
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(header)
    widths = [
        max(len(h), max(map(len, column), default=0))
        for h, column in zip(header, columns, strict=True)
    ]
    # the room the numbers leave: the indent, then each column before the source and its gap
    room = max(_MIN_SOURCE, width - 2 - sum(w + 2 for w in widths[:-1]))
    if widths[-1] > room:
        rows = [(*row[:-1], _fit(row[-1], room)) for row in rows]
    right = {0, 1, 2, 3, 4}  # numbers align right
    # One format string for every row (a str.format call a row, not a Python loop over cells:
    # a 50,000-line profile has as many rows); the last column is not padded.
    template = "  ".join(
        [*(f"{{:{'>' if i in right else '<'}{w}}}" for i, w in enumerate(widths[:-1])), "{}"]
    )

    def fmt(cells: tuple[str, ...]) -> str:
        return "  " + template.format(*cells).rstrip()

    lines = [fmt(header), fmt((*tuple("-" * w for w in widths[:-1]), "------"))]
    lines += [fmt(row) for row in rows]
    return lines


def _function_section(func: AnnotatedFunction, width: int = DEFAULT_WIDTH) -> list[str]:
    out = [
        f"{func.qualified}  {_where(func)}  {seconds(func.total_s)} s "
        f"({percent(func.percent_total)} % of profile)",
        "  " + kind_summary_text(func),
    ]
    if func.source_path is None and not func.block:
        out.append(f"  source not found for {func.filename}: no source text or line kinds")
    out.append("")
    out += _function_table(func, width)
    return out


def render_analysis(analysis: ProfileAnalysis, width: int = DEFAULT_WIDTH) -> list[str]:
    out = [
        "Profile: " + ", ".join(analysis.origins),
        f"Timer unit: {analysis.unit_s:g} s   Total time: {seconds(analysis.total_s)} s   "
        f"Functions: {len(analysis.functions)}",
    ]
    if analysis.parts:
        out += ["", "Per file (one per rank):"]
        for part in analysis.parts:
            out.append(f"  {part.origin}: {seconds(part.total_s)} s  {top_kinds_text(part.kinds)}")
        out += [f"  {skew_text(skew)}" for skew in rank_skews(analysis.parts)]
    for func in analysis.functions:
        out += ["", *_function_section(func, width)]
    if analysis.notes:
        out += ["", "Notes:"] + [f"  - {note}" for note in analysis.notes]
    return out


def _time_to_result(workspace: Workspace) -> list[str]:
    """--queue's section; what is missing for it is in the Not read part."""
    when = workspace.time_to_result
    if when is None:
        return []
    from tuneadvisor.present.time_to_result import time_to_result_lines

    lines = time_to_result_lines(when.steps, when.now, when.tuned, when.verdict)
    return ["", *lines] if lines else []


def render_text(workspace: Workspace, width: int | None = None) -> str:
    """The report in plain text; its line tables fit ``width`` columns (None: the
    terminal's, 100 where there is none)."""
    out: list[str] = []
    if workspace.analysis is not None:
        out += render_analysis(workspace.analysis, report_width() if width is None else width)
    if workspace.traces is not None:
        # only with traces: a report of a profile keeps its lean import set
        from tuneadvisor.present.trace_text import section_lines

        heading = "Steps (torch.profiler trace, per rank):"
        out += [*([""] if out else []), heading, *section_lines(workspace.traces)]
    if workspace.job is not None:
        out += ["", f"Job script: {workspace.job.path}"]
    if workspace.advice is not None and (line := training_script_line(workspace)) is not None:
        out += [line] if workspace.job is not None else ["", line]
    if workspace.advice is not None and (job := job_request_lines(workspace.advice.facts)):
        out += ["", *job]
    if workspace.metrics is not None:
        out += ["", "Metrics read:", *(f"  {line}" for line in metrics_lines(workspace.metrics))]
    if workspace.advice is not None:
        out += render_advice(workspace.advice, workspace.tuned)
    out += _time_to_result(workspace)
    if not out:
        out.append("Nothing to report: give a profile (.lprof) or --job.")
    # the one boundary: whatever an input held, no control character reaches the terminal
    return terminal_safe("\n".join(out) + "\n")
