"""`tuneadvisor open`: the Textual app and its entry point for the CLI.

The app takes its data source in its constructor (a loader returning a Workspace), runs it
in a worker while a loading screen shows, then renders the Workspace. With a quick loader
too, loading is staged: the quick one (numbers only, ``partial=True``) gives the first
screen, then the full one (source, kinds, advice) is swapped in. Bad input (`InputError`)
from either ends the app with status 2; the message is printed once the terminal is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable
from functools import partial
from typing import ClassVar, TypeVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.worker import Worker, WorkerState

from tuneadvisor.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, InputError
from tuneadvisor.present.number_text import format_seconds
from tuneadvisor.present.terminal_safe import one_line_safe
from tuneadvisor.tui.dialogs import HelpScreen, LoadingScreen
from tuneadvisor.tui.screens import MainScreen
from tuneadvisor.tui.terminal import require_terminal
from tuneadvisor.tui.view import READING
from tuneadvisor.workspace.load import Workspace

QUICK_WORKER = "quick-workspace"
LOAD_WORKER = "load-workspace"

T = TypeVar("T")


def _set_result(future: asyncio.Future[T], result: T) -> None:
    if not future.done():  # cancelled meanwhile (the app quit): nobody waits for it
        future.set_result(result)


def _set_exception(future: asyncio.Future[T], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)


async def in_daemon_thread(work: Callable[[], T]) -> T:
    """``work()`` in a daemon thread, awaited. Unlike the default executor (which a thread
    worker uses), a daemon thread does not hold the process after `q` until a long load
    ends: the load is simply abandoned."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def run() -> None:
        deliver: Callable[[], None]
        try:
            deliver = partial(_set_result, future, work())
        except BaseException as error:  # handed to the awaiting worker as it is
            deliver = partial(_set_exception, future, error)
        with contextlib.suppress(RuntimeError):  # the app (and its loop) ended first
            loop.call_soon_threadsafe(deliver)

    threading.Thread(target=run, name="tuneadvisor-load", daemon=True).start()
    return await future


class TuneAdvisorApp(App[None]):
    """Shows one Workspace: profile, findings and job script."""

    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
        # Ctrl-C ends it with 130, as a shell reports a Ctrl-C (Textual's own binding only
        # says "press ctrl+q"); above every widget's, the search prompt's included
        Binding("ctrl+c", "interrupt", show=False, priority=True),
    ]

    def __init__(
        self,
        load: Callable[[], Workspace],
        title: str,
        quick: Callable[[], Workspace] | None = None,
    ) -> None:
        super().__init__()
        self._load = load
        self._quick = quick
        self.title = one_line_safe(title)  # the paths given: an ESC there is not for the terminal
        self.sub_title = ""
        self.workspace: Workspace | None = None
        self.load_error: InputError | None = None

    def action_interrupt(self) -> None:
        """Ctrl-C: the app ends with exit status 130 (nothing is written: a tuned file is
        only written by its own key, whole)."""
        self.exit(return_code=EXIT_INTERRUPTED)

    def on_mount(self) -> None:
        self.sub_title = "loading…"
        self.push_screen(LoadingScreen())
        if self._quick is not None:
            self._start(QUICK_WORKER, self._quick)
        else:
            self._start(LOAD_WORKER, self._load)

    def _start(self, name: str, load: Callable[[], Workspace]) -> None:
        def attempt() -> Workspace | InputError:
            # Bad input is an expected outcome, not a crash: hand it back as the result.
            # Anything else propagates and Textual reports it (exit_on_error).
            try:
                return load()
            except InputError as error:
                return error

        self.run_worker(in_daemon_thread(attempt), name=name, group=name)

    async def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.name not in (QUICK_WORKER, LOAD_WORKER):
            return
        if event.state is not WorkerState.SUCCESS:
            return
        result = worker.result
        if isinstance(result, InputError):
            self.load_error = result
            self.exit(return_code=EXIT_BAD_INPUT)  # a failed quick stage: no full one
        elif isinstance(result, Workspace):
            if worker.name == QUICK_WORKER:
                # The full load starts once the quick screen is painted: it competes with the
                # first paint for the GIL.
                await self._show(result, on_shown=partial(self._start, LOAD_WORKER, self._load))
            else:
                await self._show(result)

    async def _show(
        self, workspace: Workspace, on_shown: Callable[[], object] | None = None
    ) -> None:
        self.workspace = workspace
        self.sub_title = _subtitle(workspace)
        main = next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)
        if main is not None:  # the full workspace after the quick one (maybe under a modal)
            await main.show_workspace(workspace)
            return
        while not isinstance(self.screen, LoadingScreen):  # e.g. help opened meanwhile
            await self.pop_screen()
        await self.switch_screen(MainScreen(workspace, on_shown=on_shown))

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())


def _subtitle(workspace: Workspace) -> str:
    parts: list[str] = []
    analysis = workspace.analysis
    if analysis is not None:
        files = f" in {len(analysis.origins)} files" if len(analysis.origins) > 1 else ""
        parts.append(f"{format_seconds(analysis.total_s)} profiled{files}")
    if workspace.job is not None:
        parts.append(f"job {os.path.basename(workspace.job.path)}")  # fits 100 columns
    if workspace.partial:
        parts.append(READING)
    return one_line_safe(" · ".join(parts))


def run_open(
    load: Callable[[], Workspace],
    title: str,
    quick: Callable[[], Workspace] | None = None,
) -> int:
    """Run the TUI; 0 on quit; bad input raises its InputError once the terminal is back.

    ``quick``, when given, loads a partial workspace for the first screen; ``load`` then
    loads the full one. Without a terminal on stdout (a batch job, nohup, a pipe) the screen
    would never end and spin a core: InputError at once instead."""
    require_terminal("open", "tuneadvisor report takes the same arguments and prints the advice")
    app = TuneAdvisorApp(load=load, title=title, quick=quick)
    app.run()
    if app.load_error is not None:
        # the CLI prints it, as any bad input: "tuneadvisor: FILE: problem", exit 2
        raise app.load_error
    return app.return_code or 0
