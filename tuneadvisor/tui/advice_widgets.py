"""The widgets of the advice: the top-finding bar, finding cards, the plan, the Findings tab
and the suggested changes (diffs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

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
from tuneadvisor.present.not_read import NOT_READ_TITLE, none_found
from tuneadvisor.present.plan_rows import plan_rows
from tuneadvisor.present.prediction_text import prediction_lines
from tuneadvisor.present.terminal_safe import one_line_safe, terminal_safe
from tuneadvisor.tui.view import EVALUATING, NO_FINDINGS, READING, diff_line_kind
from tuneadvisor.tui.word_diff import changed_words, paired_lines
from tuneadvisor.workspace.tuned_files import TunedFiles


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
        # what to press before the title: on a narrow screen the line is cut at its end
        keys = f"{more} more, press 2" if more else "press 2"
        self.update(Text(f"{top.severity.value} {top.id} ({keys}): {top.title}"))


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
            text.append(terminal_safe(value), style("value"))  # an input's own text
        suggestions = suggestion_texts(finding.suggest)
        if suggestions:
            text.append("\nsuggest ", style("heading"))
            for index, suggestion in enumerate(suggestions):
                text.append("  " if index else " ")
                text.append(terminal_safe(suggestion), style("suggest"))
        rationale = rationale_text(finding.rationale)
        if rationale:
            text.append("\n\n" + terminal_safe(rationale))
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
            text.append(terminal_safe(change.ljust(change_width)))
            text.append(f"  because {because}", because_style)
        self.update(text)


def _bullets(items: Sequence[str]) -> Text:
    return Text(terminal_safe("\n".join(f"• {item}" for item in items)))


class FindingsPanel(VerticalScroll):
    """The Findings tab: a status line, findings grouped by cause, the plan, the advice's
    notes and the inputs that would sharpen it. j / k (and tab) move between findings."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "next_finding(1)", "Next finding"),
        Binding("k", "next_finding(-1)", "Previous", show=False),
    ]

    def __init__(
        self,
        advice: Advice | None,
        partial: bool,
        notes: Sequence[str] = (),
        *,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.advice = advice
        self.partial = partial
        self.notes = tuple(notes)  # the advice's, then what writing the plan said

    def compose(self) -> ComposeResult:
        advice = self.advice
        if self.partial:
            yield Static(EVALUATING, id="findings-view", classes="-pending")
            return
        if advice is None:
            yield Static(NO_FINDINGS, id="findings-view", classes="-pending")
            return
        summary = findings_summary(advice.findings)
        if not advice.findings and advice.not_read:
            summary = f"findings: {none_found(advice.not_read)}"
        yield Static(summary, id="findings-view")
        for group, members in grouped_findings(advice.findings):
            yield Static(Text(group), classes="findings-group")
            for finding in members:
                yield FindingCard(finding)
        if advice.not_read:
            lines = [item.line() for item in advice.not_read]
            unread = Static(_bullets(lines), id="not-read", classes="advice-section")
            unread.border_title = NOT_READ_TITLE
            yield unread
        if not advice.plan.is_empty():
            yield PlanView(advice.plan, id="plan")
        head, details = prediction_lines(advice)
        if head is not None or details:
            text = Text(head or "", style="bold")
            if details:
                bullets = "\n".join(f"• {d}" for d in details)
                text.append(("\n" if head else "") + terminal_safe(bullets))
            prediction = Static(text, id="prediction", classes="advice-section")
            prediction.border_title = "Prediction"
            yield prediction
        if self.notes:
            notes = Static(_bullets(self.notes), id="advice-notes", classes="advice-section")
            notes.border_title = "Advice notes"
            yield notes
        if advice.sharpen:
            sharpen = Static(_bullets(advice.sharpen), id="sharpen", classes="advice-section")
            sharpen.border_title = "Inputs that would sharpen the advice"
            yield sharpen

    async def show(self, advice: Advice | None, partial: bool, notes: Sequence[str] = ()) -> None:
        self.advice = advice
        self.partial = partial
        self.notes = tuple(notes)
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


class _Prefixed:
    """A changed line of a diff, wrapped with its "-" or "+" at the start of every row: a
    wrapped row without it reads as context (issue 24, point 14). Other lines as they are."""

    def __init__(self, line: Text) -> None:
        self.line = line

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        line = self.line
        marker = line.plain[:1]
        if marker not in ("-", "+") or line.plain.startswith(("---", "+++")):
            yield line
            return
        body = line[1:]
        body.overflow = "fold"
        # a continued row is the marker and a space: "-" before a row that begins
        # "--max-steps" read as "---max-steps" (issue 33 §4)
        rows = body.wrap(console, max(1, options.max_width - 2), overflow="fold")
        for n, row in enumerate(rows):
            yield Text.assemble(line[:1], " " if n else "", row, no_wrap=True)


class DiffView(Static):
    """A unified diff, coloured by line (headers, hunks, + and -), the changed words of a
    changed line marked within it. Changed lines wrap (the colour runs on) so that every
    change shows whole without scrolling sideways; context lines are cut to one line with
    "…" (the job script beside it has them whole)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "diff--header",
        "diff--hunk",
        "diff--added",
        "diff--removed",
        "diff--added-word",
        "diff--removed-word",
    }

    shown: tuple[Text, ...] = ()  # the lines as drawn (tests read their styles)

    def show(self, diff: str) -> None:
        self.shown = tuple(self.diff_lines(diff))
        self.update(Group(*(_Prefixed(line) for line in self.shown)))

    def diff_lines(self, diff: str) -> list[Text]:
        """One Text a line of the diff, styled."""
        # an ESC in an option must not hide a line of the diff (issue 23, point 11)
        lines = [one_line_safe(line) for line in diff.rstrip("\n").splitlines()]
        words: dict[int, list[tuple[int, int]]] = {}
        for old, new in paired_lines(lines).items():
            changed = changed_words(lines[old][1:], lines[new][1:])
            if changed is not None:
                words[old], words[new] = changed
        out = []
        for index, line in enumerate(lines):
            kind = diff_line_kind(line)
            if kind == "context":
                out.append(Text(line, no_wrap=True, overflow="ellipsis"))
                continue
            style = self.get_component_rich_style(f"diff--{kind}", partial=True)
            text = Text(line, style, overflow="fold")
            if index in words:
                word_style = self.get_component_rich_style(f"diff--{kind}-word", partial=True)
                for lo, hi in words[index]:  # +1: the line's own "-" or "+"
                    text.stylize(word_style, 1 + lo, 1 + hi)
            out.append(text)
        return out


class DiffPanel(VerticalScroll):
    """The suggested changes: the job script's diff and the training-script patch."""

    def compose(self) -> ComposeResult:
        yield Static(id="diff-status")
        yield DiffView(id="job-diff")
        yield Static(id="patch-title")
        yield DiffView(id="script-patch")

    def show(self, tuned: TunedFiles | None, partial: bool, apply_hint: bool) -> None:
        """``tuned``: the plan written (None: no advice)."""
        status = self.query_one("#diff-status", Static)
        job_diff = self.query_one("#job-diff", DiffView)
        patch_title = self.query_one("#patch-title", Static)
        patch = self.query_one("#script-patch", DiffView)
        self.display = partial or tuned is not None
        self.border_title = "Suggested changes"
        self.border_subtitle = "a: write the tuned job script" if apply_hint else ""
        for widget in (job_diff, patch_title, patch):
            widget.display = False
        status.display = True
        if partial or tuned is None:
            status.update(EVALUATING)
            return
        status.display = not (tuned.job_diff or tuned.script_patch)
        status.update("no changes suggested")
        if tuned.job_diff:
            job_diff.display = True
            job_diff.show(tuned.job_diff)
        if tuned.script_patch:
            name = tuned.script_path or "the training script"
            patch_title.display = patch.display = True
            patch_title.update(
                Text(one_line_safe(f"Training-script patch ({name}): apply it with patch -p1"))
            )
            patch.show(tuned.script_patch)
