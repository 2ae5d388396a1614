"""The live screen of ``tuneadvisor watch``, and the replay of a recording (``open REC``).

The app takes its data source in its constructor: a ``WatchSession`` or a ``ReplaySession``
(or anything with their shape: ``run``, ``stop``, ``span``, ``state``, ``mark``). A thread
worker runs ``run`` (sampling, or playing the recording), which calls back after every change;
the callback posts one ``SessionChanged`` message at a time (while one waits, newer rounds
add none: the screen draws the newest state when it gets to it). The screen reads the session
only through ``state()`` and ``span()``, frozen copies taken under the session's lock, and
never touches NVML or psutil itself. Live, pausing freezes the screen, not the sampling (the
recording keeps every round); in a replay it pauses the playback.

Live, the run (``LiveRun``) brings the output of the program ``watch -- COMMAND`` started (or
a ``--job``'s output file): the output pane shows its lines as they come, like a terminal (the
newest at the bottom unless scrolled up). Ctrl-C sends SIGINT to the program's process group
and the screen goes on recording until it has exited; ``q`` while it runs asks whether to
stop it, leave it running or stay. When the session ends (the program exited, the duration is
up) the screen says so, with the exit status, the wall time and the headless summary, and
keeps the whole run on screen until ``q``.

Keys: p pause, + / - zoom the time window, g next GPU, up/down pick a process, m mark a
moment (live), o the output pane full screen, ctrl+c interrupt the program, ] / [ faster /
slower, e end, r restart (replay), q quit.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from typing import ClassVar, Protocol

from rich.markup import escape
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.css.query import NoMatches
from textual.events import Resize
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, RichLog, Static
from textual.worker import Worker, WorkerState

from tuneadvisor.metrics.model import GpuSample
from tuneadvisor.metrics.snapshot import ROLE_WORKER, GpuProcess, ProcSample, Snapshot
from tuneadvisor.present.live_findings import findings_heading, no_findings, screen_line
from tuneadvisor.present.requests_use import (
    LABEL,
    cores_use,
    memory_use,
    per_node_heading,
    requested_cpus,
    requested_mem_mib,
    requests_line,
)
from tuneadvisor.tui.dialogs import QuitAnswer, QuitScreen
from tuneadvisor.tui.level_chart import LevelChart
from tuneadvisor.watch.live_run import LiveRun
from tuneadvisor.watch.output import KEEP_LINES
from tuneadvisor.watch.replay import Playback, ReplaySession
from tuneadvisor.watch.session import LiveState, Span

ZOOMS: tuple[float | None, ...] = (30.0, 60.0, 300.0, 900.0, 3600.0, None)  # None: whole run
MAX_CORE_LINES = 16
CORE_ROOM = 22  # rows the rest of the screen needs at the least
MAX_MARKS = 6  # the newest ones, on one line
REPLAY_ACTIONS = frozenset({"faster", "slower", "to_end", "restart"})
SESSION_WORKER = "watch-session"
OUTPUT_POLL_S = 0.25  # how often the output pane looks for new lines
STOP_KILL_S = 10.0  # "stop it": SIGTERM, then SIGKILL if it has not ended by then
WIDE = 160  # columns from which the processes and the output sit side by side


class Source(Protocol):
    stop: threading.Event

    def run(self, on_change: Callable[[], None] | None = None) -> None: ...
    def span(self, seconds: float | None) -> Span: ...
    def state(self) -> LiveState: ...
    def mark(self, label: str) -> None: ...


def _fmt(value: float | None, spec: str = ".0f") -> str:
    return "–" if value is None else format(value, spec)


def gpu_line(gpu: GpuSample, selected: bool) -> str:
    """The GPU's name and the values without a chart (utilisation and memory have one)."""
    name = gpu.name or gpu.gpu_key
    mem = f"{_fmt(gpu.mem_used_mib)}/{_fmt(gpu.mem_total_mib)} MiB"
    power = f"{_fmt(gpu.power_w)}/{_fmt(gpu.power_limit_w)} W"
    mark = "▶ " if selected else "  "
    label = f"GPU {gpu.index}" if gpu.index is not None else gpu.gpu_key
    return (
        f"{mark}{label} {name}  {mem}  {power}  "
        f"{_fmt(gpu.temp_c)}°C  SM {_fmt(gpu.sm_clock_mhz)} MHz"
    )


def mem_pct(gpu: GpuSample) -> float | None:
    """Memory used, % of the total (the memory chart's scale)."""
    if gpu.mem_used_mib is None or not gpu.mem_total_mib:
        return None
    return 100.0 * gpu.mem_used_mib / gpu.mem_total_mib


def pct_text(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}%"


def proc_key(p: ProcSample | GpuProcess) -> str:
    """A process's row key: pids repeat across nodes, so a merged watch keys by both."""
    return f"{p.node}:{p.pid}" if p.node else str(p.pid)


def tree_rows(procs: Sequence[ProcSample]) -> list[tuple[int, ProcSample]]:
    """Processes in tree order with their depth (parents first, children indented); a
    parent is looked up on the process's own node."""
    keys = {(p.node, p.pid) for p in procs}
    children: dict[tuple[str | None, int] | None, list[ProcSample]] = {}
    for p in procs:
        parent = (p.node, p.ppid) if p.ppid is not None and (p.node, p.ppid) in keys else None
        children.setdefault(parent, []).append(p)
    out: list[tuple[int, ProcSample]] = []

    def walk(parent: tuple[str | None, int] | None, depth: int) -> None:
        for p in sorted(children.get(parent, []), key=lambda q: (q.node or "", q.pid)):
            out.append((depth, p))
            walk((p.node, p.pid), depth + 1)

    walk(None, 0)
    return out


class WatchApp(App[int]):
    class SessionChanged(Message):
        """The session has something new to draw (never more than one waiting)."""

    CSS_PATH = "watch.tcss"
    TITLE = "tuneadvisor watch"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit_asking", "Quit"),
        # Over Textual's "press ctrl+q": on this screen Ctrl-C is the program's, as in a shell
        Binding("ctrl+c", "interrupt", "Interrupt", show=False, priority=True),
        Binding("p", "pause", "Pause"),
        Binding("plus,equals_sign", "zoom(-1)", "Zoom in", key_display="+"),
        Binding("minus", "zoom(1)", "Zoom out", key_display="-"),
        Binding("g", "next_gpu", "Next GPU"),
        Binding("m", "mark", "Mark"),
        Binding("o", "toggle_output", "Output"),
        Binding("right_square_bracket", "faster", "Faster", key_display="]"),
        Binding("left_square_bracket", "slower", "Slower", key_display="["),
        Binding("e", "to_end", "End"),
        Binding("r", "restart", "Restart"),
    ]

    def __init__(
        self, source: Source, title: str = "tuneadvisor watch", run: LiveRun | None = None
    ) -> None:
        super().__init__()
        self.source = source
        self.live = run or LiveRun()
        self.ended = False  # live: the session's run returned (the program exited, ...)
        self._end_shown: tuple[str, str] | None = None  # (title, body) on the end panel
        self._stop_sent: float | None = None  # "stop it" answered: when SIGTERM went
        self._output_count = 0  # output lines already in the pane
        self._output_follow = True  # the pane shows the newest line (not scrolled up)
        self._output_scrolled_to = 0.0  # where the pane was left at the last poll
        self.replay = source if isinstance(source, ReplaySession) else None
        self.title = title
        self.paused = False
        self.zoom = ZOOMS.index(60.0)
        self.gpu_index = 0
        self.marks = 0
        self.shown_rounds = -1
        self._shown_version = -1
        self._pending = False  # a SessionChanged is on its way: post no other
        self._pending_lock = threading.Lock()
        self.session_running = threading.Event()  # the worker's run of the session began
        self.session_done = threading.Event()  # and returned
        self._gpu_keys: tuple[str, ...] = ()
        self._gpu_keys_drawn: tuple[str, ...] | None = None  # what the GPU box shows
        self._gpu_note: Static | None = None
        self._gpu_why = ""
        self._cores = (-1, -1)
        self._gpu_widgets: list[tuple[Static, LevelChart, LevelChart]] = []
        self._core_charts: list[LevelChart] = []
        self._shown_playback: Playback | None = None

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="top"):
            yield Vertical(id="gpus")
            yield Vertical(id="cores")
        yield Static("", id="status")
        yield Static("", id="requests")
        yield Static("", id="marks")
        with Horizontal(id="middle"):
            with Vertical(id="proc-box"):
                yield DataTable(id="procs", cursor_type="row", zebra_stripes=True)
                yield Static("", id="proc-detail")
            with VerticalScroll(id="ended"):
                yield Static("", id="ended-text")
            with Vertical(id="output"):
                yield RichLog(id="output-log", max_lines=KEEP_LINES, wrap=True, markup=False,
                              highlight=False)  # fmt: skip
                yield Static("", id="output-partial")
        yield Static("Findings: waiting for samples", id="findings")
        yield Footer()

    def on_mount(self) -> None:
        table: DataTable[str] = self.query_one("#procs", DataTable)
        table.add_columns("PID", "Role", "CPU %", "RSS MiB", "State", "Thr", "GPU MiB", "Command")
        self.query_one("#ended").display = False
        self.query_one("#gpus").border_title = "GPUs"
        self.query_one("#cores").border_title = "CPU cores"
        output = self.query_one("#output", Vertical)
        output.display = self.live.output is not None
        output.border_title = self.live.output_title
        if self.live.program is not None:
            output.border_subtitle = "ctrl+c: SIGINT to the program · o: full screen"
        self.query_one("#output-partial").display = False
        if self.live.output_missing:
            self.notify(self.live.output_missing, title="no output pane", timeout=10)
        self._fit_layout(self.size.width)
        self.run_worker(self._follow, name=SESSION_WORKER, thread=True, exit_on_error=False)
        self.set_interval(OUTPUT_POLL_S, self._tick)
        self.refresh_view()
        for note in self.replay.notes if self.replay else ():
            self.notify(note, title="recording", severity="warning")  # e.g. a last line cut

    def on_unmount(self) -> None:
        self.source.stop.set()

    # ------------------------------------------------------------------ the session

    def _follow(self) -> None:
        """The worker thread: sample (or play) until stopped, pushing changes to the screen."""
        self.session_running.set()
        try:
            self.source.run(on_change=self._session_changed)
        finally:
            self.session_done.set()

    def _session_changed(self) -> None:
        """In the session's thread: one message at a time (the screen reads the newest)."""
        with self._pending_lock:
            if self._pending:
                return
            self._pending = True
        self.post_message(self.SessionChanged())

    def on_watch_app_session_changed(self, message: SessionChanged) -> None:
        with self._pending_lock:
            self._pending = False  # before reading: a change after it posts again
        self.refresh_view()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A session that fails (a sampler error) stops the drawing, not the app: say so."""
        if event.worker.name != SESSION_WORKER:
            return
        if event.state is WorkerState.ERROR:
            self.notify(str(event.worker.error), title="sampling stopped", severity="error",
                        timeout=30, markup=False)  # fmt: skip
        elif event.state is WorkerState.SUCCESS and self.replay is None and not self.ended:
            self.ended = True
            self.zoom = len(ZOOMS) - 1  # the end of the run: the whole run
            self._tick()
            self.refresh_view(force=True)

    def on_resize(self, event: Resize) -> None:
        self._fit_layout(event.size.width)

    def _fit_layout(self, width: int) -> None:
        """Narrow: the output under the processes; wide: beside them."""
        with contextlib.suppress(NoMatches):
            self.query_one("#middle").set_class(width < WIDE, "-narrow")

    # ------------------------------------------------------------------ the program

    def _tick(self) -> None:
        """Every OUTPUT_POLL_S: new output lines, the end of the program, a stop that waits."""
        try:
            self._pull_output()
            if self.ended:
                self._draw_end()
        except NoMatches:
            return  # the app is closing
        program = self.live.program
        if program is None or self._stop_sent is None:
            return
        if not program.running:
            self.exit(0)
        elif time.monotonic() - self._stop_sent > STOP_KILL_S:
            program.kill()

    def _pull_output(self) -> None:
        lines = self.live.output
        if lines is None:
            return
        new = lines.since(self._output_count)
        log = self.query_one("#output-log", RichLog)
        # Follow the newest line, like a terminal, unless the user scrolled up (then until
        # they scroll back to the end). Judged against where this pane last scrolled to: the
        # pane shrinking (more findings) moves the end without the user doing anything.
        if log.scroll_y < self._output_scrolled_to - 0.5:
            self._output_follow = False
        elif log.scroll_y >= log.max_scroll_y - 1:
            self._output_follow = True
        if new.skipped:
            program = self.live.program
            where = f" (all of them in {program.log_path})" if program and program.log_path else ""
            log.write(Text(f"… {new.skipped} lines not shown{where}", "italic"), scroll_end=False)
        for line in new.lines:
            log.write(Text(line), scroll_end=False)
        if self._output_follow and log.scroll_y < log.max_scroll_y:
            log.scroll_end(animate=False, immediate=True, x_axis=False)
        self._output_scrolled_to = log.scroll_y
        self._output_count = new.count
        partial = self.query_one("#output-partial", Static)
        partial.display = bool(new.partial)
        partial.update(Text(new.partial))

    # ------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Playback keys only in a replay; marking only live (a recording has its marks)."""
        if action in REPLAY_ACTIONS:
            return self.replay is not None
        if action == "mark":
            return self.replay is None and not self.ended
        if action == "toggle_output":
            return self.live.output is not None
        return True

    def action_quit_asking(self) -> None:
        """Quit; while the program ``watch`` started runs, ask first."""
        program = self.live.program
        if program is None or not program.running or self.replay is not None:
            self.exit(0)
            return
        self.push_screen(QuitScreen(program.pid, program.log_path), self._quit_answer)

    def _quit_answer(self, answer: QuitAnswer) -> None:
        program = self.live.program
        if program is None or answer is None:
            return
        if answer == "leave":
            program.left_running = True  # the command hands its output to a drainer
            self.exit(0)
            return
        if not program.terminate():
            self.exit(0)  # it ended meanwhile
            return
        self._stop_sent = time.monotonic()
        self.notify(f"SIGTERM sent to pid {program.pid}'s process group; the screen closes "
                    "when it has ended", title="stopping")  # fmt: skip

    def action_interrupt(self) -> None:
        """Ctrl-C: SIGINT to the program's process group, as a terminal would; the screen
        records until it exits. With no program of ours running, it quits (as q)."""
        program = self.live.program
        if program is None or not program.running or self.replay is not None:
            self.action_quit_asking()
            return
        if program.interrupt():
            self.notify(f"SIGINT sent to pid {program.pid}'s process group; recording until "
                        "it exits (q offers to stop it)", title="Ctrl-C")  # fmt: skip

    def action_toggle_output(self) -> None:
        """The output pane full screen, and back."""
        if self.screen.maximized is not None:
            self.screen.minimize()
        elif self.live.output is not None:
            self.screen.maximize(self.query_one("#output-log"), container=False)

    def action_pause(self) -> None:
        self.paused = not self.paused
        if self.replay is not None:
            self.replay.set_paused(self.paused)
        self.refresh_view(force=True)

    def action_faster(self) -> None:
        if self.replay is not None:
            self.replay.faster()
            self.refresh_view(force=True)

    def action_slower(self) -> None:
        if self.replay is not None:
            self.replay.slower()
            self.refresh_view(force=True)

    def action_to_end(self) -> None:
        if self.replay is not None:
            self.replay.to_end()

    def action_restart(self) -> None:
        if self.replay is not None:
            self.replay.restart()

    def action_zoom(self, step: int) -> None:
        self.zoom = max(0, min(len(ZOOMS) - 1, self.zoom + step))
        self.refresh_view(force=True)

    def action_next_gpu(self) -> None:
        if self._gpu_keys:
            self.gpu_index = (self.gpu_index + 1) % len(self._gpu_keys)
            self.refresh_view(force=True)

    def action_mark(self) -> None:
        self.marks += 1
        label = f"mark {self.marks}"
        self.source.mark(label)
        self.notify(f"{label} recorded at the next sample")

    # ------------------------------------------------------------------ drawing

    @property
    def zoom_label(self) -> str:
        seconds = ZOOMS[self.zoom]
        if seconds is None:
            return "whole run"
        return f"last {seconds / 60:g} min" if seconds >= 60 else f"last {seconds:g} s"

    def refresh_view(self, force: bool = False) -> None:
        # Playback first: once it says "ended", the state read after it has the last findings.
        playback = self.replay.playback() if self.replay else None
        state = self.source.state()
        if self.paused and self.replay is None and not force:
            return  # live: pausing freezes the screen (a paused replay stops moving by itself)
        if state.version == self._shown_version and playback == self._shown_playback and not force:
            return
        was_ended = self._shown_playback is not None and self._shown_playback.ended
        if playback is not None and playback.ended and not was_ended:
            self.zoom = len(ZOOMS) - 1  # the end of a replay: the whole run
        self.shown_rounds = state.rounds
        self._shown_version = state.version
        self._shown_playback = playback
        span = self.source.span(ZOOMS[self.zoom])
        snaps = span.rounds
        try:
            self._draw_gpus(snaps)
            self._draw_cores(snaps)
            self._draw_status(state, span, playback)
            self._draw_marks(state, snaps)
            self._draw_procs(state.latest)
            self._draw_findings(state)
        except NoMatches:
            return  # a change came while the app closes and its widgets are being removed

    def _draw_gpus(self, snaps: Sequence[Snapshot]) -> None:
        box = self.query_one("#gpus", Vertical)
        latest = snaps[-1] if snaps else None
        gpus = latest.gpus if latest else ()
        keys = tuple(g.gpu_key for g in gpus)
        # None before the first draw, so that no GPUs from the first round on gets its note.
        # Widgets are kept by reference, not id: a removal completes after this call returns,
        # and a new widget with the old id would clash with the one still leaving.
        if keys != self._gpu_keys_drawn:
            self._gpu_keys_drawn = keys
            self._gpu_keys = keys
            self.gpu_index = min(self.gpu_index, max(0, len(keys) - 1))
            for child in list(box.children):
                child.remove()
            self._gpu_note = None
            if not keys:
                self._gpu_note, self._gpu_why = Static("no GPU data", classes="gpu-none"), ""
                box.mount(self._gpu_note)
            self._gpu_widgets = []
            for _key in keys:
                widgets = (
                    Static("", classes="gpu-label"),
                    LevelChart("util", label_width=4, value_width=4),
                    LevelChart("mem", label_width=3, value_width=4),
                )
                self._gpu_widgets.append(widgets)
                box.mount(widgets[0], Horizontal(*widgets[1:], classes="gpu-charts"))
        if self._gpu_note is not None:  # the reason may arrive after the note is up
            why = next((n for n in (latest.no_data if latest else ()) if "GPU" in n), "")
            if why != self._gpu_why:
                self._gpu_why = why
                text = why if why.startswith("no GPU data") else f"no GPU data: {why}".rstrip(": ")
                self._gpu_note.update(Text(text))
        for i, gpu in enumerate(gpus):
            label, util, mem = self._gpu_widgets[i]
            label.update(gpu_line(gpu, selected=i == self.gpu_index))
            label.set_class(i == self.gpu_index, "selected")
            mine = [g for s in snaps for g in s.gpus if g.gpu_key == gpu.gpu_key]
            util.show([g.util_pct or 0.0 for g in mine], pct_text(gpu.util_pct))
            mem.show([mem_pct(g) or 0.0 for g in mine], pct_text(mem_pct(gpu)))

    def _draw_cores(self, snaps: Sequence[Snapshot]) -> None:
        box = self.query_one("#cores", Vertical)
        hosts = [s.host for s in snaps if s.host is not None and s.host.cpu_pct_per_core]
        cores = max((len(h.cpu_pct_per_core) for h in hosts), default=0)
        # One line a core, as many as the height leaves room for (the rest are counted).
        shown = min(cores, MAX_CORE_LINES, max(2, self.size.height - CORE_ROOM))
        if (cores, shown) != self._cores:
            self._cores = (cores, shown)
            for child in list(box.children):
                child.remove()
            self._core_charts = [LevelChart(f"cpu{i}") for i in range(shown)]
            box.mount(*self._core_charts)
            if cores > shown:
                box.mount(Static(f"(first {shown} of {cores} cores)", classes="note"))
        for i, chart in enumerate(self._core_charts):
            values = [h.cpu_pct_per_core[i] for h in hosts if len(h.cpu_pct_per_core) > i]
            chart.show(values, pct_text(values[-1] if values else None))

    def _draw_status(self, state: LiveState, span: Span, playback: Playback | None) -> None:
        latest = state.latest
        own = span.sampler_cpu
        flags = ["PAUSED"] if self.paused else []
        if self.ended:
            flags.append("ENDED ·")
        if playback is not None:
            flags.append(f"REPLAY {replay_position(playback)} ·")
        text = (
            f"{' '.join(flags)} {self.zoom_label} · {state.rounds} rounds every "
            f"{state.interval_s:g} s · sampler {_fmt(own.mean if own else None, '.1f')} % "
            f"of a core · window {state.window_s:g} s"
        ).strip()
        self.query_one("#status", Static).update(text)
        nodes = sorted({p.node for p in latest.procs if p.node} if latest else set())
        if len(nodes) > 1:  # a merged watch: sums over nodes are no match for per-task asks
            self.query_one("#requests", Static).update(self._per_node_use(state, nodes))
            return
        req = []
        host = latest.host if latest else None
        if host is not None and host.proc_cpu_cores is not None:
            req.append(cores_use(f"{host.proc_cpu_cores:.2f}", requested_cpus(state.job)))
        if span.proc_rss is not None:
            req.append(memory_use(span.proc_rss.max, requested_mem_mib(state.job)))
        if host is not None and host.workers is not None:
            req.append(f"{host.workers} DataLoader workers")
        self.query_one("#requests", Static).update(
            requests_line(req, " · ") if req else f"{LABEL}: no process tree"
        )

    def _per_node_use(self, state: LiveState, nodes: Sequence[str]) -> Text:
        latest = state.latest
        parts = []
        for node in nodes:
            procs = [p for p in (latest.procs if latest else ()) if p.node == node]
            cores = sum(p.cpu_pct or 0.0 for p in procs) / 100.0
            rss = sum(p.rss_mib or 0.0 for p in procs)
            parts.append(f"{node} {cores:.2f} cores, {rss:.0f} MiB")
        return Text(f"{per_node_heading(state.job)}: " + " · ".join(parts))

    def _draw_marks(self, state: LiveState, snaps: Sequence[Snapshot]) -> None:
        box = self.query_one("#marks", Static)
        marks = [s for s in snaps if s.mark]
        box.display = bool(marks)
        if marks:
            shown = marks[-MAX_MARKS:]
            more = f"({len(marks) - len(shown)} earlier) " if len(marks) > len(shown) else ""
            marks_text = " · ".join(f"{s.t - state.started:.1f} s {s.mark}" for s in shown)
            box.update(Text(f"Marks: {more}{marks_text}"))  # labels are text, not markup

    def _draw_procs(self, latest: Snapshot | None) -> None:
        table: DataTable[str] = self.query_one("#procs", DataTable)
        procs = latest.procs if latest else ()
        gpu_mem: dict[str, float] = {}
        for gp in latest.gpu_procs if latest else ():
            gpu_mem[proc_key(gp)] = gpu_mem.get(proc_key(gp), 0.0) + (gp.used_mib or 0.0)
        selected = None
        if table.row_count and 0 <= table.cursor_row < table.row_count:
            selected = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        table.clear()
        for depth, p in tree_rows(procs):
            role = p.role if p.rank is None else f"{p.role} r{p.rank}"
            table.add_row(
                str(p.pid),
                role,
                _fmt(p.cpu_pct),
                _fmt(p.rss_mib),
                p.state or "?",
                _fmt(None if p.threads is None else float(p.threads)),
                _fmt(gpu_mem.get(proc_key(p))),
                escape("  " * depth + (p.cmdline or p.name)[:200]),  # "[node] ..." is no markup
                key=proc_key(p),
            )
        if selected is not None and selected in {proc_key(p) for p in procs}:
            table.move_cursor(row=table.get_row_index(selected))
        self._draw_detail(procs)

    def _draw_detail(self, procs: Sequence[ProcSample]) -> None:
        table: DataTable[str] = self.query_one("#procs", DataTable)
        detail = self.query_one("#proc-detail", Static)
        if not table.row_count:
            detail.update("no processes")
            return
        key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        p = next((q for q in procs if proc_key(q) == key), None)
        if p is None:
            detail.update("")
            return
        io = f"read {_fmt(p.read_mib_s, '.1f')} MiB/s, write {_fmt(p.write_mib_s, '.1f')} MiB/s"
        denied = f" · not readable: {', '.join(p.denied)}" if p.denied else ""
        workers = sum(
            1 for q in procs if q.role == ROLE_WORKER and q.ppid == p.pid and q.node == p.node
        )
        kids = f" · {workers} workers" if workers else ""
        # Text, not markup: a command line may hold brackets.
        detail.update(
            Text(f"pid {p.pid} ({p.user or '?'}) {p.cmdline or p.name} · {io}{kids}{denied}")
        )

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        latest = self.source.state().latest
        try:
            self._draw_detail(latest.procs if latest else ())
        except NoMatches:
            return  # a highlight queued while the app closes and its widgets are removed

    def _draw_findings(self, state: LiveState) -> None:
        box = self.query_one("#findings", Static)
        if not state.findings:
            box.update(no_findings(state.window_s, brief=True))
            return
        lines = [findings_heading(state.window_s)]
        lines += [screen_line(live) for live in state.findings]
        box.update(Text("\n".join(lines)))  # not markup: "[warning]" is shown as it is

    def _end_title(self) -> str:
        program = self.live.program
        why = getattr(self.source, "ended_because", "") or "ended"
        if program is None:
            return f"Sampling ended: {why} · q quits"
        if program.running:
            return f"Sampling ended: {why}; pid {program.pid} still runs · q asks"
        return f"The program ended: {program.describe_end()} after {program.wall_s:.1f} s · q quits"

    def _draw_end(self) -> None:
        """The end of a live run: the summary where the processes were (they are gone)."""
        title = self._end_title()
        if self._end_shown is not None and self._end_shown[0] == title:
            return
        body = self._end_shown[1] if self._end_shown else ""
        if not body:
            body = self.live.summary() if self.live.summary else ""
        self._end_shown = (title, body)
        box = self.query_one("#ended", VerticalScroll)
        box.border_title = title
        self.query_one("#ended-text", Static).update(Text(body.rstrip("\n")))
        box.display = True
        if self.live.program is not None and not self.live.program.running:
            self.query_one("#output").border_subtitle = ""  # no Ctrl-C to pass on now
        self.query_one("#proc-box").display = False
        self.query_one("#findings").display = False  # the summary has them, with windows
        self.refresh_bindings()


def replay_position(playback: Playback) -> str:
    """``t=12.3 s of 60.0 s, x10`` (``end of recording`` once it is all played)."""
    part = ""
    if playback.parts > 1:  # several watches appended to one file: which one, of what
        part = f"recording {playback.part} of {playback.parts} ({playback.target}), "
    where = (
        f"end of recording, {playback.duration:.1f} s"
        if playback.ended
        else f"t={playback.t:.1f} s of {playback.duration:.1f} s"
    )
    return f"{part}{where}, x{playback.speed:g}"


def run_watch_app(source: Source, title: str, run: LiveRun | None = None) -> int:
    app = WatchApp(source, title=title, run=run)
    try:
        app.run()
    finally:
        source.stop.set()
        # The caller closes the recorder and NVML next: let a round in flight finish first.
        if app.session_running.is_set():
            app.session_done.wait(timeout=source.state().interval_s + 5.0)
    return app.return_code or 0
