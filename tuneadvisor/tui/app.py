"""`tuneadvisor open`: the Textual app and its entry point for the CLI.

The app takes its data source in its constructor (a loader returning a Workspace), runs it
in a thread worker while a loading screen shows, then renders the Workspace. Bad input
(`InputError`) ends the app with status 2; the message is printed once the terminal is back.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.worker import Worker, WorkerState

from tuneadvisor.errors import EXIT_BAD_INPUT, InputError
from tuneadvisor.tui.screens import HelpScreen, LoadingScreen, MainScreen
from tuneadvisor.tui.view import display_path, format_seconds
from tuneadvisor.workspace import Workspace

LOAD_WORKER = "load-workspace"


class TuneAdvisorApp(App[None]):
    """Shows one Workspace: profile, findings and job script."""

    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, load: Callable[[], Workspace], title: str) -> None:
        super().__init__()
        self._load = load
        self.title = title
        self.sub_title = ""
        self.workspace: Workspace | None = None
        self.load_error: InputError | None = None

    def on_mount(self) -> None:
        self.sub_title = "loading…"
        self.push_screen(LoadingScreen())
        self.run_worker(self._load_in_thread, name=LOAD_WORKER, thread=True, exclusive=True)

    def _load_in_thread(self) -> Workspace | InputError:
        # Bad input is an expected outcome, not a crash: hand it back as the result.
        # Anything else propagates and Textual reports it (exit_on_error).
        try:
            return self._load()
        except InputError as error:
            return error

    async def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.name != LOAD_WORKER or event.state is not WorkerState.SUCCESS:
            return
        result = worker.result
        if isinstance(result, InputError):
            self.load_error = result
            self.exit(return_code=EXIT_BAD_INPUT)
        elif isinstance(result, Workspace):
            self.workspace = result
            self.sub_title = _subtitle(result)
            while not isinstance(self.screen, LoadingScreen):  # e.g. help opened meanwhile
                await self.pop_screen()
            await self.switch_screen(MainScreen(result))

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
        parts.append(f"job {display_path(workspace.job.path)}")
    return " · ".join(parts)


def run_open(load: Callable[[], Workspace], title: str) -> int:
    """Run the TUI; 0 on quit, 2 (after the terminal is restored) on bad input."""
    app = TuneAdvisorApp(load=load, title=title)
    app.run()
    if app.load_error is not None:
        print(str(app.load_error), file=sys.stderr)
        return EXIT_BAD_INPUT
    return app.return_code or 0
