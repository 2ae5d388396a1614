"""A private tmux server (`-L`, never the user's) driving a real binary, for the tmux tests."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable

WAIT_S = 30.0  # a deadline so a broken run ends, not a speed check


def _environment() -> dict[str, str]:
    """os.environ, passed explicitly to the tmux server and so to the app.

    Importing readline (pytest does) sets COLUMNS=80 and LINES=24 in the process's C-level
    environment without touching os.environ; inherited, they would make the app draw at
    80x24 whatever the pane's size."""
    return {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}


class Tmux:
    def __init__(self, socket: str, session: str) -> None:
        self.socket = socket
        self.session = session

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args],
            capture_output=True,
            text=True,
            check=check,
            timeout=30,
            env=_environment(),
        )

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.session).stdout

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.session, *keys)

    def alive(self) -> bool:
        return self.run("has-session", "-t", self.session, check=False).returncode == 0

    def wait_for(self, what: str, done: Callable[[str], bool]) -> str:
        deadline = time.monotonic() + WAIT_S
        screen = ""
        while time.monotonic() < deadline:
            if not self.alive():
                raise AssertionError(f"the program exited while waiting for {what}:\n{screen}")
            screen = self.screen()
            if done(screen):
                return screen
            time.sleep(0.2)
        raise AssertionError(f"timed out after {WAIT_S} s waiting for {what}; screen:\n{screen}")
