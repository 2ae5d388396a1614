"""The Steps tab of `open`: a torch.profiler trace's breakdown per rank and per step as
stacked bars (each kind its colour, a legend with the kinds' shares), the straggler and what
the trace proves, and one rank's top kernels, top ops and longest host gaps (``r``: next rank).

All wording and numbers come from ``present/trace_text``, as in the reports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.markup import escape
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from tuneadvisor.present.terminal_safe import name_safe, terminal_safe
from tuneadvisor.present.trace_text import (
    KIND_LABELS,
    SHOWN_KINDS,
    breakdown,
    cannot_show,
    detail_ranks,
    duration,
    gap_between,
    kind_cells,
    observations,
    rank_headline,
    rank_label,
    share_percent,
    short_label,
    step_rows,
    step_shares,
    straggler,
)
from tuneadvisor.profile.trace.model import NamedTime, RankTrace, TraceSet
from tuneadvisor.tui.widgets import NavTable

BAR = "█"
STEP_ROWS = 60  # per-step bars shown, rank by rank
WIDE_TABLES = 160  # columns from which top kernels and top ops sit side by side


def _right(text: str) -> Text:
    return Text(text, justify="right")


@dataclass(frozen=True)
class BarRow:
    label: str
    shares: Mapping[str, float]  # each of SHOWN_KINDS -> fraction
    note: str  # right of the bar: the mean step, or the step's time


class StackedBars(Widget):
    """One row a rank or a step: label, a bar cut among the kinds, a note; then the legend
    (the kinds present, their colour and share of all the rows' time). Drawn at the widget's
    width, so it fits 100 columns and fills 220."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {f"bars--{kind}" for kind in SHOWN_KINDS} | {
        "bars--label",
        "bars--note",
    }
    DEFAULT_CSS = """
    StackedBars { height: auto; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: tuple[BarRow, ...] = ()
        self.totals: Mapping[str, float] = {}

    def show(self, rows: Sequence[BarRow], totals: Mapping[str, float]) -> None:
        self.rows = tuple(rows)
        self.totals = totals
        self.refresh(layout=True)

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        return len(self.rows) + len(self._legend(width))

    def render(self) -> Text:
        width = max(self.content_size.width, 20)
        label_w = min(max((len(r.label) for r in self.rows), default=0), 24)
        note_w = max((len(r.note) for r in self.rows), default=0)
        bar_w = max(width - label_w - note_w - 2, 8)
        label_style = self.get_component_rich_style("bars--label", partial=True)
        note_style = self.get_component_rich_style("bars--note", partial=True)
        lines: list[Text] = []
        for row in self.rows:
            line = Text()
            line.append(row.label[:label_w].ljust(label_w), style=label_style)
            line.append(" ")
            for kind, cells in kind_cells(row.shares, bar_w):
                line.append(BAR * cells, style=self._kind_style(kind))
            line.append(" " + row.note.rjust(note_w), style=note_style)
            lines.append(line)
        return Text("\n", no_wrap=True).join([*lines, *self._legend(width)])

    def _kind_style(self, kind: str) -> str:
        return str(self.get_component_rich_style(f"bars--{kind}", partial=True))

    def _legend(self, width: int) -> list[Text]:
        """The kinds present, packed into lines of ``width`` (an item is never split)."""
        lines: list[Text] = [Text()]
        for kind in SHOWN_KINDS:
            share = self.totals.get(kind, 0.0)
            if share < 0.0005:
                continue
            item = Text(BAR, style=self._kind_style(kind) if self.is_mounted else "")
            item.append(f" {KIND_LABELS[kind]} {share_percent(share)}")
            gap = 2 if lines[-1] else 0
            if lines[-1] and len(lines[-1]) + gap + len(item) > width:
                lines.append(Text())
                gap = 0
            lines[-1].append(" " * gap)
            lines[-1].append_text(item)
        return [line for line in lines if line]


def _mean_shares(traces: TraceSet) -> dict[str, float]:
    """Each kind's share of every step's time over all ranks: the legend's figures."""
    total = sum(s.duration_us for t in traces.ranks for s in t.steps)
    if total <= 0:
        return {}
    return {
        k: sum(s.by_kind.get(k, 0.0) for t in traces.ranks for s in t.steps) / total
        for k in SHOWN_KINDS
    }


class NamedTable(NavTable):
    """Top kernels or ops of one rank: time, calls, longest call, name."""

    def show(self, named: Sequence[NamedTime]) -> None:
        self.clear(columns=True)
        self.add_column(_right("Time"), key="time")
        self.add_column(_right("Calls"), key="calls")
        self.add_column(_right("Longest"), key="max")
        self.add_column("Name", key="name")
        for index, item in enumerate(named):
            self.add_row(
                _right(duration(item.total_us)),
                _right(f"{item.calls:,}"),
                _right(duration(item.max_us)),
                Text(name_safe(item.name)),
                key=str(index),
            )


class GapsTable(NavTable):
    """The rank's longest host gaps: Python between two operators, inside a step."""

    def show(self, trace: RankTrace) -> None:
        self.clear(columns=True)
        self.add_column(_right("Gap"), key="gap")
        self.add_column(_right("Step"), key="step")
        self.add_column("Where", key="where")
        for index, gap in enumerate(trace.host_gaps):
            self.add_row(
                _right(duration(gap.duration_us)),
                _right(str(gap.step)),
                Text(gap_between(gap.before, gap.after)),
                key=str(index),
            )


class StepsPane(VerticalScroll):
    """The whole tab: bars per rank and per step, what the traces say, one rank's tables."""

    def __init__(self, traces: TraceSet, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.traces = traces
        chosen = detail_ranks(traces)
        # the tables start on the straggler when there is one, else on the first rank
        self.rank_index = traces.ranks.index(chosen[-1]) if chosen else 0

    def compose(self) -> ComposeResult:
        yield StackedBars(id="rank-bars")
        yield Static(id="steps-said")
        with Horizontal(id="steps-tables"):
            yield NamedTable(id="top-kernels")
            yield NamedTable(id="top-ops")
        yield GapsTable(id="host-gaps")
        yield StackedBars(id="step-bars")
        yield Static(id="steps-notes")

    def on_mount(self) -> None:
        self.show(self.traces)

    def on_resize(self) -> None:
        # kernels and ops side by side only where their names have room
        self.set_class(self.size.width >= WIDE_TABLES, "-wide-tables")

    def show(self, traces: TraceSet) -> None:
        self.traces = traces
        self.rank_index = min(self.rank_index, max(len(traces.ranks) - 1, 0))
        totals = _mean_shares(traces)
        rows = []
        for trace in traces.ranks:
            b = breakdown(trace)
            if b is not None:
                label = short_label(trace)
                rows.append(BarRow(label, b.shares, f"{duration(b.mean_step_us)} a step"))
        ranks = self.query_one("#rank-bars", StackedBars)
        ranks.border_title = f"Per rank ({len(traces.ranks)}): mean step by kind"
        ranks.show(rows, totals)
        steps = step_rows(traces, STEP_ROWS)
        step_bars = self.query_one("#step-bars", StackedBars)
        step_bars.display = bool(steps)
        shown = sum(len(t.steps) for t in traces.ranks)
        more = f", first {len(steps)} of {shown}" if len(steps) < shown else ""
        step_bars.border_title = f"Per step{more}"
        step_bars.show(
            [BarRow(label, step_shares(s), duration(s.duration_us)) for label, s in steps],
            totals,
        )
        notes = cannot_show(traces)
        panel = self.query_one("#steps-notes", Static)
        panel.display = bool(notes)
        panel.border_title = "What these traces cannot show"
        panel.update(Text(terminal_safe("\n".join(f"• {n}" for n in notes))))
        self._show_rank()

    def next_rank(self) -> None:
        if len(self.traces.ranks) > 1:
            self.rank_index = (self.rank_index + 1) % len(self.traces.ranks)
            self._show_rank()

    @property
    def rank(self) -> RankTrace | None:
        ranks = self.traces.ranks
        return ranks[self.rank_index] if ranks else None

    def _show_rank(self) -> None:
        trace = self.rank
        said = self.query_one("#steps-said", Static)
        kernels = self.query_one("#top-kernels", NamedTable)
        ops = self.query_one("#top-ops", NamedTable)
        gaps = self.query_one("#host-gaps", GapsTable)
        if trace is None:
            said.update(Text("no trace read", style="dim"))
            for table in (kernels, ops, gaps):
                table.display = False
            return
        label = escape(rank_label(trace))  # a file's name: no markup in a border title
        lines = []
        lag = straggler(self.traces)
        if lag is not None:
            lines.append(Text(lag.sentence(), style="bold"))
        b = breakdown(trace)
        if b is not None:
            lines.append(Text(f"{label}: {rank_headline(b)}"))
        lines += [Text(terminal_safe(f"• {line}")) for line in observations(trace)]
        said.border_title = f"{label} (r: next rank)" if len(self.traces.ranks) > 1 else label
        said.update(Text("\n").join(lines))
        kernels.display = bool(trace.top_kernels)
        kernels.border_title = f"Top kernels · {label}"
        kernels.show(trace.top_kernels)
        ops.display = bool(trace.top_ops)
        ops.border_title = f"Top ops · {label}"
        ops.show(trace.top_ops)
        gaps.display = bool(trace.host_gaps)
        gaps.border_title = f"Longest host gaps · {label}"
        gaps.show(trace)
