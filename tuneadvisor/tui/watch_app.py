"""The live screen of ``tuneadvisor watch``, and the replay of a recording (``open REC``).

The app takes its data source in its constructor: a ``WatchSession`` or a ``ReplaySession``
(or anything with their shape: ``run``, ``stop``, ``span``, ``state``, ``mark``). A thread
worker runs ``run`` (sampling, or playing the recording), which calls back after every change;
the callback posts one ``SessionChanged`` message at a time (while one waits, newer rounds
add none: the screen draws the newest state when it gets to it). The screen reads the session
only through ``state()`` and ``span()``, frozen copies taken under the session's lock, and
never touches NVML or psutil itself. From them and its own choices (zoom, GPU, paused) the app
builds one frozen ``ScreenState`` and sets it on its ``screen_state``; the panels of
``watch_panels`` each draw themselves from it. The app keeps the layout, the session thread,
the program's output pane and end panel, and the keys. Live, pausing freezes the screen, not
the sampling (the recording keeps every round); in a replay it pauses the playback.

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
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.driver import Driver
from textual.events import Key, Resize
from textual.message import Message
from textual.reactive import var
from textual.widgets import Footer, Header, RichLog, Static
from textual.worker import Worker, WorkerState

from tuneadvisor.errors import EXIT_INTERRUPTED
from tuneadvisor.present.terminal_safe import one_line_safe
from tuneadvisor.tui.dialogs import QuitAnswer, QuitScreen
from tuneadvisor.tui.hangup_driver import hangup_safe
from tuneadvisor.tui.watch_panels import (
    PANELS,
    CorePanel,
    GpuPanel,
    LiveFindingsPanel,
    MarksLine,
    ProcessPanel,
    RequestsLine,
    StatusLine,
)
from tuneadvisor.tui.watch_state import ScreenState
from tuneadvisor.watch.live_run import LiveRun
from tuneadvisor.watch.output import KEEP_LINES
from tuneadvisor.watch.replay import Playback, ReplaySession
from tuneadvisor.watch.session import LiveState, WatchSpan

ZOOMS: tuple[float | None, ...] = (30.0, 60.0, 300.0, 900.0, 3600.0, None)  # None: whole run
REPLAY_ACTIONS = frozenset({"faster", "slower", "to_end", "restart"})
SESSION_WORKER = "watch-session"
OUTPUT_POLL_S = 0.25  # how often the output pane looks for new lines
# the bundled scripts' "TUNEADVISOR {json}" progress records: half the output, for `run`
RECORDS_HIDDEN = "(the training's TUNEADVISOR {json} progress records are not shown here)"


def is_progress_record(line: str) -> bool:
    from tuneadvisor.relaunch.measurements import parse_event

    return parse_event(line) is not None


STOP_KILL_S = 10.0  # "stop it": SIGTERM, then SIGKILL if it has not ended by then
WIDE = 160  # columns from which the processes and the output sit side by side


class Source(Protocol):
    stop: threading.Event

    def run(self, on_change: Callable[[], None] | None = None) -> None: ...
    def span(self, seconds: float | None) -> WatchSpan: ...
    def state(self) -> LiveState: ...
    def mark(self, label: str) -> None: ...


def output_text(line: str) -> Text:
    """A line of the program's output as the pane shows it: its colours (SGR) kept, as a
    terminal would show them, and no other control sequence run (a title set, the screen
    cleared: issue 23, point 11); a line with controls left after that is shown escaped."""
    text = Text.from_ansi(line)
    safe = one_line_safe(text.plain)
    return text if safe == text.plain else Text(safe)


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
        Binding("g", "next_gpu", "GPU"),  # short: a replay's footer fits 100 columns
        Binding("m", "mark", "Mark"),
        Binding("o", "toggle_output", "Output"),
        Binding("right_square_bracket", "faster", "Faster", key_display="]"),
        Binding("left_square_bracket", "slower", "Slower", key_display="["),
        Binding("e", "to_end", "End"),
        Binding("r", "restart", "Restart"),
    ]
    # The newest sample as drawn; its watcher hands it to every panel. A var: the panels
    # redraw what changed, a repaint of the whole screen on top would be wasted.
    screen_state: var[ScreenState | None] = var(None, init=False)

    def get_driver_class(self) -> type[Driver]:
        # A terminal that hangs up must end the watch (its SIGHUP handler), never hang it.
        return hangup_safe(super().get_driver_class())

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
        self._records_hidden = False  # the note on the hidden progress records is shown
        self._output_follow = True  # the pane shows the newest line (not scrolled up)
        self._output_scrolled_to = 0.0  # where the pane was left at the last poll
        self.replay = source if isinstance(source, ReplaySession) else None
        self.title = one_line_safe(title)  # a command line or a recording's path
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
        self._gpu_keys: tuple[str, ...] = ()  # the newest drawn round's GPUs, that g cycles
        self._shown_playback: Playback | None = None

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="top"):
            yield GpuPanel(id="gpus")
            yield CorePanel(id="cores")
        yield StatusLine("", id="status")
        yield RequestsLine("", id="requests")
        yield MarksLine("", id="marks")
        with Horizontal(id="middle"):
            yield ProcessPanel(id="proc-box")
            with VerticalScroll(id="ended"):
                yield Static("", id="ended-text")
            with Vertical(id="output"):
                yield RichLog(id="output-log", max_lines=KEEP_LINES, wrap=True, markup=False,
                              highlight=False)  # fmt: skip
                yield Static("", id="output-partial")
        yield LiveFindingsPanel("Findings: waiting for samples", id="findings")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#ended").display = False
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
            if is_progress_record(line):  # machine-readable: the lines beside it say it
                if not self._records_hidden:
                    self._records_hidden = True
                    log.write(Text(RECORDS_HIDDEN, "italic"), scroll_end=False)
                continue
            log.write(output_text(line), scroll_end=False)
        if self._output_follow and log.scroll_y < log.max_scroll_y:
            log.scroll_end(animate=False, immediate=True, x_axis=False)
        self._output_scrolled_to = log.scroll_y
        self._output_count = new.count
        partial = self.query_one("#output-partial", Static)
        partial.display = bool(new.partial)
        partial.update(output_text(new.partial))

    # ------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Playback keys only in a replay; marking only live (a recording has its marks)."""
        if action in REPLAY_ACTIONS:
            return self.replay is not None
        if action == "mark":  # a replay answers m in on_key (no footer room for it there)
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
        records until it exits. With no program of ours running (a replay, `--job`, `--pid`,
        a program that ended), it ends the watch itself: exit status 130, as a shell reports
        a Ctrl-C."""
        program = self.live.program
        if program is None or not program.running or self.replay is not None:
            self.exit(return_code=EXIT_INTERRUPTED)
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

    def on_key(self, event: Key) -> None:
        """``m`` in a replay: not silently nothing (the README documents it), a word on
        what marks are; a recording is as it was, with its own marks and none added."""
        if event.key == "m" and self.replay is not None:
            event.stop()
            # one line: the notice covers the least of the screen
            self.notify("a replay adds no marks (m marks a live watch)", timeout=5)

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
        """Build the state of the newest sample and hand it to the panels (unless it is
        already shown, or a live screen is paused; ``force``: a key changed what to show)."""
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
        newest = span.rounds[-1] if span.rounds else None
        self._gpu_keys = tuple(g.gpu_key for g in newest.gpus) if newest else ()
        self.gpu_index = min(self.gpu_index, max(0, len(self._gpu_keys) - 1))
        self.screen_state = ScreenState(
            live=state,
            span=span,
            zoom_label=self.zoom_label,
            gpu_index=self.gpu_index,
            paused=self.paused,
            ended=self.ended,
            playback=playback,
        )

    def watch_screen_state(self, state: ScreenState | None) -> None:
        """Every panel draws itself from the new state."""
        if state is None:
            return
        try:
            for kind in PANELS:
                self.query_one(kind).state = state
        except NoMatches:
            return  # a change came while the app closes and its widgets are being removed

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


def _stop_input_thread(app: App[Any]) -> None:
    """Textual's driver tells its input thread to stop only after writing to the terminal
    (``disable_input``); on a terminal that hung up (an ssh session to the login node
    dropped) that write fails first, and the thread spun on the dead pty for good, a core at
    100 % after the watch had ended. Tell it to stop whatever the terminal does."""
    exit_event = getattr(getattr(app, "_driver", None), "exit_event", None)
    if isinstance(exit_event, threading.Event):
        exit_event.set()


def run_watch_app(source: Source, title: str, run: LiveRun | None = None) -> int:
    app = WatchApp(source, title=title, run=run)
    try:
        app.run()
    finally:
        _stop_input_thread(app)
        source.stop.set()
        # The caller closes the recorder and NVML next: let a round in flight finish first.
        if app.session_running.is_set():
            app.session_done.wait(timeout=source.state().interval_s + 5.0)
    return app.return_code or 0
