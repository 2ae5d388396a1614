"""`tuneadvisor watch` for real: the installed binary in a detached tmux session, watching the
DataLoader stand-in (a real process tree), with the A100 pynvml stand-in for GPU values.
Uses a private tmux server (`-L`), never the user's."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.tmux_session import WAIT_S, Tmux

pytestmark = pytest.mark.tmux

REPO = Path(__file__).resolve().parents[2]
BINARY = REPO / ".venv" / "bin" / "tuneadvisor"
LOADER = REPO / "tests" / "fixtures" / "watch" / "loader.py"
FAKE = REPO / "tests" / "fixtures" / "nvml" / "fake"
A100 = REPO / "tests" / "fixtures" / "nvml" / "a100-2gpu.json"


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    if shutil.which("tmux") is None or not BINARY.exists():
        pytest.skip("needs tmux and the installed binary")
    server = Tmux(f"tuneadvisor-watch-{os.getpid()}-{uuid.uuid4().hex[:8]}", "watch")
    try:
        yield server
    finally:
        server.run("kill-server", check=False)


def test_watch_screen_in_a_real_terminal(tmux: Tmux, tmp_path: Path) -> None:
    main = subprocess.Popen(
        [sys.executable, str(LOADER), "fork", "2", "busy"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert main.stdout is not None and main.stdout.readline().strip() == "ready"
        status = tmp_path / "status"
        command = (
            f"PYTHONPATH={shlex.quote(str(FAKE))} TUNEADVISOR_FAKE_NVML={shlex.quote(str(A100))} "
            f"{shlex.quote(str(BINARY))} watch --pid {main.pid} --interval 0.2; "
            f"echo $? > {shlex.quote(str(status))}; sleep 30"
        )
        tmux.run("new-session", "-d", "-s", "watch", "-x", "150", "-y", "45", command)
        screen = tmux.wait_for(
            "GPUs, cores and the tree",
            lambda s: "GPU 1 NVIDIA A100" in s and "cpu1" in s and s.count("worker") >= 2,
        )
        assert "loader.py fork 2 busy" in screen
        tmux.run("send-keys", "-t", "watch", "p")
        tmux.wait_for("PAUSED", lambda s: "PAUSED" in s)
        tmux.run("send-keys", "-t", "watch", "p")
        tmux.run("send-keys", "-t", "watch", "g")
        tmux.wait_for("GPU 1 selected", lambda s: "▶ GPU 1" in s)
        tmux.run("send-keys", "-t", "watch", "q")
        deadline = time.monotonic() + WAIT_S
        while not status.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status.read_text().strip() == "0"
    finally:
        main.kill()
        main.wait()
