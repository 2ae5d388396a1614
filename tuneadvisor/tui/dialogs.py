"""The loading screen, and the dialogs over the main screen: the keys (help), the question
before the tuned job script is written (apply), and what ``q`` asks while the program that
``watch`` started still runs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, Literal

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Header, Label, LoadingIndicator, Static

from tuneadvisor.present.terminal_safe import one_line_safe
from tuneadvisor.tui.view import KEY_HELP


class LoadingScreen(Screen[None]):
    """Shown while the loader runs in a thread worker."""

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="loading"):
            yield LoadingIndicator()
            yield Label("Loading profiles…", id="loading-label")
        yield Footer()


class HelpScreen(ModalScreen[None]):
    """The keys, in a dialog over the main screen."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("question_mark", "dismiss", "Close", show=False),
    ]

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, padding=(0, 2, 0, 0))
        table.add_column("Key", style="bold", no_wrap=True)
        table.add_column("Action")
        for key, action in KEY_HELP:
            table.add_row(key, action)
        with Vertical(id="help-dialog"):
            yield Static(table, id="help-keys")
            yield Label("escape closes this help", id="help-hint")

    def on_mount(self) -> None:
        self.query_one("#help-dialog").border_title = "Keys"

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)


class ApplyScreen(ModalScreen[bool]):
    """Asks before the tuned job script is written; dismissed with True for "yes"."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Write"),
        Binding("n", "answer(False)", "Cancel"),
        Binding("escape", "answer(False)", "Cancel", show=False),
    ]

    def __init__(self, out: Path, writes: Sequence[tuple[Path, str]]) -> None:
        super().__init__()
        self.out = out
        self.writes = tuple(writes)

    def compose(self) -> ComposeResult:
        listing = Text()
        for index, (path, what) in enumerate(self.writes):
            replaces = " (replaces the existing file)" if path.exists() else ""
            item = one_line_safe(f"• {path}: {what}{replaces}")  # the paths are the user's
            listing.append(("\n" if index else "") + item)
        with Vertical(id="apply-dialog"):
            question = one_line_safe(f"Write tuned job script to {self.out}? (y/n)")
            yield Static(Text(question), id="apply-question")
            yield Static(listing, id="apply-writes")
            yield Label("y: write · n or escape: cancel · the job script itself is not changed",
                        id="apply-hint")  # fmt: skip

    def on_mount(self) -> None:
        self.query_one("#apply-dialog").border_title = "Apply"

    def action_answer(self, confirmed: bool) -> None:
        self.dismiss(confirmed)


QuitAnswer = Literal["stop", "leave"] | None


class QuitScreen(ModalScreen[QuitAnswer]):
    """``q`` while the watched program runs: stop it, leave it running, or stay."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "answer('stop')", "Stop it"),
        Binding("l", "answer('leave')", "Leave it running"),
        Binding("escape,c", "answer(None)", "Stay"),
    ]

    def __init__(self, pid: int, log_path: str | None) -> None:
        super().__init__()
        self.pid = pid
        self.log_path = log_path

    def compose(self) -> ComposeResult:
        output = f"its output goes on to {self.log_path}" if self.log_path else "its output is lost"
        with Vertical(id="quit-dialog"):
            yield Static(Text(f"pid {self.pid} is still running. Stop it?"), id="quit-question")
            yield Static(
                Text(
                    "s  stop it: SIGTERM to its process group (SIGKILL after 10 s); the screen "
                    "closes when it has ended\n"
                    f"l  leave it running and close the screen; {output}\n"
                    "escape  stay and keep watching"
                ),
                id="quit-choices",
            )

    def on_mount(self) -> None:
        self.query_one("#quit-dialog").border_title = "Quit"

    def action_answer(self, answer: QuitAnswer) -> None:
        self.dismiss(answer)
