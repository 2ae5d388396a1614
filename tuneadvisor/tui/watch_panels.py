"""The panels of the watch screen, each drawn from the frozen ``ScreenState`` alone.

As in memray's live TUI, the app keeps the newest state in one reactive attribute and hands
it to every panel's own ``state``; a panel's ``watch_state`` redraws that panel and nothing
else. A panel keeps only what it needs to redraw cheaply (which child widgets it has
mounted); it never reads the app or the session, so one can be mounted alone and tested with
a state built by hand. ``state`` is a ``var``: the watcher redraws the children that change,
so a repaint of the whole panel on each sample would be wasted.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.coordinate import Coordinate
from textual.reactive import var
from textual.widgets import DataTable, Static

from tuneadvisor.metrics.snapshot import ProcSample
from tuneadvisor.tui.level_chart import LevelChart
from tuneadvisor.tui.watch_state import (
    FIGURES,
    ScreenState,
    detail_text,
    findings_text,
    fmt,
    gpu_line,
    has_activity,
    marks_text,
    mem_pct,
    pct_text,
    proc_key,
    requests_text,
    short_ranks,
    status_text,
    tree_rows,
)

MAX_CORE_LINES = 16
CORE_ROOM = 22  # rows the rest of the screen needs at the least
MAX_MARKS = 6  # the newest ones, on one line
PROC_COLUMNS = ("PID", "Role", "CPU %", "RSS MiB", "State", "Thr", "GPU MiB", "Command")


class GpuPanel(Vertical):
    """Each GPU of the window's newest round: a line of values, then utilisation and memory
    charts over the window, with SM activity between them where the GPU gives it (the
    subtitle says which is which); or why there is no GPU data."""

    state: var[ScreenState | None] = var(None, init=False)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        # None before the first draw, so that no GPUs from the first round on gets its note.
        self._keys: tuple[tuple[str, bool], ...] | None = None
        self._note: Static | None = None
        self._why = ""
        self._rows: list[tuple[Static, LevelChart, LevelChart | None, LevelChart]] = []

    def on_mount(self) -> None:
        self.border_title = "GPUs"

    def watch_state(self, state: ScreenState | None) -> None:
        if state is None:
            return
        latest = state.newest
        gpus = latest.gpus if latest else ()
        # A GPU with SM activity in the window (NVML GPM, DCGM) gets an SM chart beside util.
        active = {g.gpu_key for s in state.span.rounds for g in s.gpus if has_activity(g)}
        keys = tuple((g.gpu_key, g.gpu_key in active) for g in gpus)
        if keys != self._keys:
            self._keys = keys
            self._remount(keys)
        if self._note is not None:  # the reason may arrive after the note is up
            why = next((n for n in (latest.no_data if latest else ()) if "GPU" in n), "")
            if why != self._why:
                self._why = why
                text = why if why.startswith("no GPU data") else f"no GPU data: {why}".rstrip(": ")
                self._note.update(Text(text))
        for i, gpu in enumerate(gpus):
            label, util, sm, mem = self._rows[i]
            width = self.content_region.width or self.size.width  # 0 before the first layout
            label.update(gpu_line(gpu, selected=i == state.gpu_index, width=width))
            label.set_class(i == state.gpu_index, "selected")
            mine = [g for s in state.span.rounds for g in s.gpus if g.gpu_key == gpu.gpu_key]
            util.show([g.util_pct or 0.0 for g in mine], pct_text(gpu.util_pct))
            if sm is not None:
                sm.show([g.sm_active_pct or 0.0 for g in mine], pct_text(gpu.sm_active_pct))
            mem.show([mem_pct(g) or 0.0 for g in mine], pct_text(mem_pct(gpu)))
        self.border_subtitle = FIGURES if active else ""

    def _remount(self, keys: tuple[tuple[str, bool], ...]) -> None:
        # Widgets are kept by reference, not id: a removal completes after this call returns,
        # and a new widget with the old id would clash with the one still leaving.
        for child in list(self.children):
            child.remove()
        self._note = None
        if not keys:
            self._note, self._why = Static("no GPU data", classes="gpu-none"), ""
            self.mount(self._note)
        self._rows = []
        for _key, active in keys:
            row = (
                Static("", classes="gpu-label"),
                LevelChart("util", label_width=4, value_width=4),
                LevelChart("SM", label_width=2, value_width=4) if active else None,
                LevelChart("mem", label_width=3, value_width=4),
            )
            self._rows.append(row)
            charts = [chart for chart in row[1:] if chart is not None]
            self.mount(row[0], Horizontal(*charts, classes="gpu-charts"))


class CorePanel(Vertical):
    """One chart a CPU core over the window, as many as the screen's height leaves room
    for (the rest are counted)."""

    state: var[ScreenState | None] = var(None, init=False)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._cores = (-1, -1)  # (cores, shown) the charts were mounted for
        self._charts: list[LevelChart] = []

    def on_mount(self) -> None:
        self.border_title = "CPU cores"

    def watch_state(self, state: ScreenState | None) -> None:
        if state is None:
            return
        hosts = [
            s.host for s in state.span.rounds if s.host is not None and s.host.cpu_pct_per_core
        ]
        cores = max((len(h.cpu_pct_per_core) for h in hosts), default=0)
        # The screen's height, not the panel's: the panel grows to fit what it shows.
        shown = min(cores, MAX_CORE_LINES, max(2, self.screen.size.height - CORE_ROOM))
        if (cores, shown) != self._cores:
            self._cores = (cores, shown)
            for child in list(self.children):
                child.remove()
            self._charts = [LevelChart(f"cpu{i}") for i in range(shown)]
            self.mount(*self._charts)
            if cores > shown:
                self.mount(Static(f"(first {shown} of {cores} cores)", classes="note"))
        for i, chart in enumerate(self._charts):
            values = [h.cpu_pct_per_core[i] for h in hosts if len(h.cpu_pct_per_core) > i]
            chart.show(values, pct_text(values[-1] if values else None))


class StatusLine(Static):
    """Paused, ended or where the replay is; the zoom; how the sampling goes."""

    state: var[ScreenState | None] = var(None, init=False)

    def watch_state(self, state: ScreenState | None) -> None:
        if state is not None:
            self.update(status_text(state))


class RequestsLine(Static):
    """The job's requests against what the processes use."""

    state: var[ScreenState | None] = var(None, init=False)

    def watch_state(self, state: ScreenState | None) -> None:
        if state is not None:
            self.update(requests_text(state))


class MarksLine(Static):
    """The marks of the window; hidden when there are none."""

    state: var[ScreenState | None] = var(None, init=False)

    def watch_state(self, state: ScreenState | None) -> None:
        if state is None:
            return
        text = marks_text(state, MAX_MARKS)
        self.display = text is not None
        if text is not None:
            self.update(Text(text))  # labels are text, not markup


class LiveFindingsPanel(Static):
    """The live findings over the evidence window."""

    state: var[ScreenState | None] = var(None, init=False)

    def watch_state(self, state: ScreenState | None) -> None:
        if state is not None:
            self.update(findings_text(state))


class ProcessPanel(Vertical):
    """The process tree of the newest round as a table, and a line on the selected one;
    the selection stays on its process from round to round."""

    state: var[ScreenState | None] = var(None, init=False)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.table: DataTable[str] = DataTable(id="procs", cursor_type="row", zebra_stripes=True)
        self.detail = Static("", id="proc-detail")

    def compose(self) -> ComposeResult:
        yield self.table
        yield self.detail

    def on_mount(self) -> None:
        self.table.add_columns(*PROC_COLUMNS)

    def watch_state(self, state: ScreenState | None) -> None:
        if state is None:
            return
        latest = state.live.latest
        procs = latest.procs if latest else ()
        gpu_mem: dict[str, float] = {}
        for gp in latest.gpu_procs if latest else ():
            gpu_mem[proc_key(gp)] = gpu_mem.get(proc_key(gp), 0.0) + (gp.used_mib or 0.0)
        table = self.table
        selected = self._selected_key()
        table.clear()
        short = short_ranks(procs)
        for depth, p in tree_rows(procs):
            role = p.role if p.rank is None else f"{p.role} r{p.rank}"
            if (p.node, p.pid) in short:  # bound to fewer CPUs than its share: the detail says
                role += " !cpu"
            table.add_row(
                str(p.pid),
                role,
                fmt(p.cpu_pct),
                fmt(p.rss_mib),
                p.state or "?",
                fmt(None if p.threads is None else float(p.threads)),
                fmt(gpu_mem.get(proc_key(p))),
                escape("  " * depth + (p.cmdline or p.name)[:200]),  # "[node] ..." is no markup
                key=proc_key(p),
            )
        if selected is not None and selected in {proc_key(p) for p in procs}:
            table.move_cursor(row=table.get_row_index(selected))
        self._draw_detail(procs)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        latest = self.state.live.latest if self.state else None
        self._draw_detail(latest.procs if latest else ())

    def _selected_key(self) -> str | None:
        table = self.table
        if not table.row_count or not 0 <= table.cursor_row < table.row_count:
            return None
        return table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value

    def _draw_detail(self, procs: Sequence[ProcSample]) -> None:
        if not self.table.row_count:
            self.detail.update("no processes")
            return
        key = self._selected_key()
        p = next((q for q in procs if proc_key(q) == key), None)
        # Text, not markup: a command line may hold brackets.
        self.detail.update(Text(detail_text(p, procs)) if p is not None else "")


StatePanel = (
    GpuPanel | CorePanel | StatusLine | RequestsLine | MarksLine | ProcessPanel | LiveFindingsPanel
)
# What the app hands each new state to, in the order the screen reads.
PANELS: tuple[type[StatePanel], ...] = (
    GpuPanel, CorePanel, StatusLine, RequestsLine, MarksLine, ProcessPanel, LiveFindingsPanel,
)  # fmt: skip
