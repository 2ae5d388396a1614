"""The widgets of the main screen: each turns analysis objects into one pane."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Static

from tuneadvisor.advisor.advice import Advice
from tuneadvisor.advisor.findings import Finding
from tuneadvisor.advisor.plan import Plan
from tuneadvisor.present.findings import (
    evidence_text,
    findings_summary,
    grouped_findings,
    rationale_text,
    suggestion_texts,
    top_finding,
)
from tuneadvisor.present.numbers import format_seconds, heat_bar, percent, top_kinds_text
from tuneadvisor.present.plan_rows import plan_rows
from tuneadvisor.profile.analysis import (
    KIND_LABELS,
    AnnotatedFunction,
    PartSummary,
    kind_summary_text,
)
from tuneadvisor.trainscript.kinds import LineKind
from tuneadvisor.tui.highlight import Highlighter
from tuneadvisor.tui.view import (
    EVALUATING,
    NO_FINDINGS,
    READING,
    LineRow,
    diff_line_kind,
    display_path,
    heat_level,
)

HEAT_WIDTH = 10
KIND_BAR_WIDTH = 16


def _right(text: str, style: Style | str = "") -> Text:
    return Text(text, style=style, justify="right")


class NavTable(DataTable[Text]):
    """A row-cursor table with vi keys."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)

    def row_key_at_cursor(self) -> str | None:
        if self.row_count == 0:
            return None
        key = self.coordinate_to_cell_key(Coordinate(self.cursor_row, 0)).row_key
        return key.value

    def move_to_key(self, key: str | None) -> None:
        if key is None or self.row_count == 0:
            return
        try:
            row = self.get_row_index(key)
        except Exception:  # the row is filtered out: stay on the first row
            row = 0
        self.move_cursor(row=row, animate=False)


class FunctionsTable(NavTable):
    """Functions, one row each: name, file:line, total time, share of the profile."""

    def show(self, rows: Sequence[tuple[int, AnnotatedFunction]], selected: int | None) -> None:
        self.clear(columns=True)
        self.add_column("Function", key="name")
        self.add_column("File:line", key="file")
        self.add_column(_right("Total"), key="total")
        self.add_column(_right("%"), key="percent")
        for index, func in rows:
            self.add_row(
                Text(func.qualified, style="bold"),
                Text(f"{display_path(func.filename)}:{func.first_lineno}"),
                _right(format_seconds(func.total_s)),
                _right(percent(func.percent_total)),
                key=str(index),
            )
        self.move_to_key(None if selected is None else str(selected))


class LinesTable(NavTable):
    """Lines of one function: numbers, heat bar, kind and highlighted source."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "lines--heat-high",
        "lines--heat-mid",
        "lines--heat-low",
        "lines--untimed",
        "lines--kind-other",
    }

    def show(
        self, rows: Sequence[LineRow], sources: Mapping[int, Text], kinds_known: bool = True
    ) -> None:
        """``kinds_known`` False (the quick first stage): the Kind column says "…"."""
        self.clear(columns=True)
        self.add_column(_right("Line"), key="line")
        self.add_column(_right("Hits"), key="hits")
        self.add_column(_right("Time"), key="time")
        self.add_column(_right("Per hit"), key="per_hit")
        self.add_column(_right("%"), key="percent")
        self.add_column(Text("Heat"), key="heat")
        self.add_column(Text("Kind"), key="kind")
        self.add_column(Text("Source"), key="source")
        untimed = self.get_component_rich_style("lines--untimed", partial=True)
        other = self.get_component_rich_style("lines--kind-other", partial=True)
        for row in rows:
            source = sources.get(row.lineno)
            if source is None:
                source = Text(row.text or "")
            line = row.timing
            if line is None:
                source = source.copy()
                source.stylize(untimed)
                blank = Text("")
                self.add_row(
                    _right(str(row.lineno), untimed),
                    blank, blank, blank, blank, blank, blank,
                    source,
                    key=str(row.lineno),
                )  # fmt: skip
                continue
            level = heat_level(line.percent)
            heat = Text(heat_bar(line.percent, HEAT_WIDTH))
            if level != "none":
                heat.stylize(self.get_component_rich_style(f"lines--heat-{level}", partial=True))
            kind = Text(KIND_LABELS[line.kind] if kinds_known else "…")
            if line.kind is LineKind.OTHER or not kinds_known:
                kind.stylize(other)
            self.add_row(
                _right(str(row.lineno)),
                _right(str(line.hits)),
                _right(format_seconds(line.time_s)),
                _right(format_seconds(line.per_hit_s)),
                _right(percent(line.percent)),
                heat,
                kind,
                source,
                key=str(row.lineno),
            )


class KindSummary(Static):
    """Where the chosen function's time goes, by line kind."""

    def show(self, function: AnnotatedFunction | None, kinds_known: bool = True) -> None:
        if function is None:
            self.update(Text("no function selected", style="dim"))
            return
        if not kinds_known:
            self.update(Text(f"{function.qualified}: line kinds come with the source\n{READING}"))
            return
        text = Text()
        text.append(kind_summary_text(function) + "\n", style="bold")
        width = max((len(s.label) for s in function.kinds), default=0)
        for share in function.kinds:
            text.append(share.label.ljust(width) + " ")
            text.append(heat_bar(share.percent, KIND_BAR_WIDTH), style="bold")
            text.append(f" {share.percent:5.1f} %  {format_seconds(share.time_s)}\n")
        text.rstrip()
        self.update(text)


class NotesPanel(Static):
    """The analysis notes (sync lines that absorb GPU time, missing sources)."""

    def show(self, notes: Sequence[str]) -> None:
        self.display = bool(notes)
        self.border_title = "Notes"
        self.update(Text("\n".join(f"• {note}" for note in notes)))


class PartsTable(NavTable):
    """Several files (one per rank): each one's total and top kinds, one row each."""

    def show(self, parts: Sequence[PartSummary]) -> None:
        self.display = bool(parts)
        self.border_title = f"Parts ({len(parts)} files)"
        self.clear(columns=True)
        self.add_column("Part", key="part")
        self.add_column(_right("Total"), key="total")
        self.add_column("Top kinds", key="kinds")
        for index, part in enumerate(parts):
            self.add_row(
                Text(display_path(part.origin)),
                _right(format_seconds(part.total_s)),
                Text(top_kinds_text(part.kinds, limit=2, empty="no time recorded")),
                key=str(index),
            )


class JobScriptView(Static):
    """The job script, numbered and highlighted as bash; #SBATCH directives stand out."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "job--lineno",
        "job--directive",
        "job--option",
    }

    def show(self, text: str, highlighter: Highlighter) -> None:
        lines = highlighter.lines(text, "bash")
        lineno_style = self.get_component_rich_style("job--lineno", partial=True)
        directive = self.get_component_rich_style("job--directive", partial=True)
        option = self.get_component_rich_style("job--option", partial=True)
        width = len(str(len(lines)))
        out = Text(no_wrap=True)
        for number, line in enumerate(lines, start=1):
            out.append(f"{number:>{width}} │ ", style=lineno_style)
            stripped = line.plain.lstrip()
            if stripped.startswith("#SBATCH"):
                start = len(line.plain) - len(stripped)
                plain = Text(line.plain)
                plain.stylize(directive, start, start + len("#SBATCH"))
                plain.stylize(option, start + len("#SBATCH"))
                line = plain
            out.append_text(line)
            out.append("\n")
        out.rstrip()
        self.update(out)


# -- advice ---------------------------------------------------------------------------------


class AdviceBar(Static):
    """One line on the Profile tab: the top finding, so it shows without switching tabs."""

    def show(self, advice: Advice | None, partial: bool) -> None:
        self.remove_class("-pending", "-clear", "-error", "-warning", "-info")
        if partial:
            self.display = True
            self.add_class("-pending")
            self.update(READING)
            return
        if advice is None:
            self.display = False
            return
        self.display = True
        top = top_finding(advice.findings)
        if top is None:
            self.add_class("-clear")
            self.update(Text("advisor: no findings · press 2 for what would sharpen the advice"))
            return
        self.add_class(f"-{top.severity.value}")
        more = len(advice.findings) - 1
        rest = f" · {more} more" if more else ""
        self.update(
            Text(f"{top.severity.value} {top.id}: {top.title}{rest} · press 2 for findings")
        )


class FindingCard(Static, can_focus=True):
    """One finding: title, evidence, suggestions, rationale and references.

    The severity and id are the border title (coloured by the card's severity class)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "finding--title",
        "finding--label",
        "finding--value",
        "finding--heading",
        "finding--suggest",
        "finding--ref",
    }

    def __init__(self, finding: Finding) -> None:
        super().__init__(classes=f"-{finding.severity.value}")
        self.finding = finding

    def on_mount(self) -> None:
        self.border_title = f"{self.finding.severity.value} · {self.finding.id}"
        self.update(self.card_text())

    def card_text(self) -> Text:
        finding = self.finding

        def style(name: str) -> Style:
            return self.get_component_rich_style(f"finding--{name}", partial=True)

        text = Text()
        text.append(finding.title, style("title"))
        for item in finding.evidence:
            label, value = evidence_text(item)
            text.append("\n")
            text.append(f"{label}: ", style("label"))
            text.append(value, style("value"))
        suggestions = suggestion_texts(finding.suggest)
        if suggestions:
            text.append("\nsuggest ", style("heading"))
            for index, suggestion in enumerate(suggestions):
                text.append("  " if index else " ")
                text.append(suggestion, style("suggest"))
        rationale = rationale_text(finding.rationale)
        if rationale:
            text.append("\n\n" + rationale)
        for reference in finding.references:
            text.append("\nsee ", style("heading"))
            text.append(reference, style("ref"))
        return text


class PlanView(Static):
    """The plan: each change once, with the findings it comes from."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"plan--where", "plan--because"}

    def __init__(self, plan: Plan, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.plan = plan

    def on_mount(self) -> None:
        self.border_title = "Plan"
        rows = plan_rows(self.plan)
        where_style = self.get_component_rich_style("plan--where", partial=True)
        because_style = self.get_component_rich_style("plan--because", partial=True)
        where_width = max(len(where) for where, _, _ in rows)
        change_width = max(len(change) for _, change, _ in rows)
        text = Text(no_wrap=True)
        for index, (where, change, because) in enumerate(rows):
            if index:
                text.append("\n")
            text.append(where.ljust(where_width) + "  ", where_style)
            text.append(change.ljust(change_width))
            text.append(f"  because {because}", because_style)
        self.update(text)


def _bullets(items: Sequence[str]) -> Text:
    return Text("\n".join(f"• {item}" for item in items))


class FindingsPanel(VerticalScroll):
    """The Findings tab: a status line, findings grouped by cause, the plan, the advice's
    notes and the inputs that would sharpen it. j / k (and tab) move between findings."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "next_finding(1)", "Next finding"),
        Binding("k", "next_finding(-1)", "Previous", show=False),
    ]

    def __init__(self, advice: Advice | None, partial: bool, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.advice = advice
        self.partial = partial

    def compose(self) -> ComposeResult:
        advice = self.advice
        if self.partial:
            yield Static(EVALUATING, id="findings-view", classes="-pending")
            return
        if advice is None:
            yield Static(NO_FINDINGS, id="findings-view", classes="-pending")
            return
        yield Static(findings_summary(advice.findings), id="findings-view")
        for group, members in grouped_findings(advice.findings):
            yield Static(Text(group), classes="findings-group")
            for finding in members:
                yield FindingCard(finding)
        if not advice.plan.is_empty():
            yield PlanView(advice.plan, id="plan")
        if advice.notes:
            notes = Static(_bullets(advice.notes), id="advice-notes", classes="advice-section")
            notes.border_title = "Advice notes"
            yield notes
        if advice.sharpen:
            sharpen = Static(_bullets(advice.sharpen), id="sharpen", classes="advice-section")
            sharpen.border_title = "Inputs that would sharpen the advice"
            yield sharpen

    async def show(self, advice: Advice | None, partial: bool) -> None:
        self.advice = advice
        self.partial = partial
        await self.recompose()

    def first_card(self) -> FindingCard | None:
        cards = self.query(FindingCard)
        return cards.first() if cards else None

    def action_next_finding(self, step: int) -> None:
        cards = list(self.query(FindingCard))
        if not cards:
            self.scroll_relative(y=step, animate=False)
            return
        focused = self.screen.focused
        current = next((i for i, card in enumerate(cards) if card is focused), None)
        if current is None:
            index = 0 if step > 0 else len(cards) - 1
        else:
            index = min(max(current + step, 0), len(cards) - 1)
        cards[index].focus()


class DiffView(Static):
    """A unified diff, numbered by nothing, coloured by line: headers, hunks, + and -."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "diff--header",
        "diff--hunk",
        "diff--added",
        "diff--removed",
    }

    def show(self, diff: str) -> None:
        text = Text(no_wrap=True)
        for index, line in enumerate(diff.rstrip("\n").splitlines()):
            if index:
                text.append("\n")
            kind = diff_line_kind(line)
            if kind == "context":
                text.append(line)
            else:
                text.append(line, self.get_component_rich_style(f"diff--{kind}", partial=True))
        self.update(text)


class DiffPanel(VerticalScroll):
    """The suggested changes: the job script's diff and the training-script patch."""

    def compose(self) -> ComposeResult:
        yield Static(id="diff-status")
        yield DiffView(id="job-diff")
        yield Static(id="patch-title")
        yield DiffView(id="script-patch")

    def show(self, advice: Advice | None, partial: bool, apply_hint: bool) -> None:
        status = self.query_one("#diff-status", Static)
        job_diff = self.query_one("#job-diff", DiffView)
        patch_title = self.query_one("#patch-title", Static)
        patch = self.query_one("#script-patch", DiffView)
        self.display = partial or advice is not None
        self.border_title = "Suggested changes"
        self.border_subtitle = "a: write the tuned job script" if apply_hint else ""
        for widget in (job_diff, patch_title, patch):
            widget.display = False
        status.display = True
        if partial or advice is None:
            status.update(EVALUATING)
            return
        status.display = not (advice.job_diff or advice.script_patch)
        status.update("no changes suggested")
        if advice.job_diff:
            job_diff.display = True
            job_diff.show(advice.job_diff)
        if advice.script_patch:
            name = advice.script_path or "the training script"
            patch_title.display = patch.display = True
            patch_title.update(Text(f"Training-script patch ({name}): apply it with patch -p1"))
            patch.show(advice.script_patch)
