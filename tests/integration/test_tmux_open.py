"""`tuneadvisor open` for real: the installed binary in a detached tmux session.

Drives the bundled example (what `scripts/demo` opens) through a real terminal: the screen
must show the function table with train() and the DataLoader line (once the full workspace
has replaced the quick, numbers-only one), answer keys (down, `?`, escape, `2` for the
findings) and exit on `q` with status 0. Uses a private tmux server (`-L`), never the user's.
"""

from __future__ import annotations

import os
import shlex
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.tmux_session import WAIT_S, Tmux

pytestmark = pytest.mark.tmux

REPO = Path(__file__).resolve().parents[2]
BINARY = REPO / ".venv" / "bin" / "tuneadvisor"
PROFILE = "examples/mnist/24752610.lprof"
JOB = "examples/mnist/mnist.sbatch"
WIDTH, HEIGHT = 160, 45


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (scripts/setup.sh installs it when run as root)")
    if not BINARY.exists():
        pytest.skip(f"{BINARY} is missing: run scripts/setup.sh")
    for path in (PROFILE, JOB):
        if not (REPO / path).exists():
            pytest.skip(f"{path} is missing: the bundled example is not in this checkout")
    server = Tmux(f"tuneadvisor-test-{os.getpid()}-{uuid.uuid4().hex[:8]}", "open")
    try:
        yield server
    finally:
        server.run("kill-server", check=False)


def test_open_shows_the_profile_answers_keys_and_quits(tmux: Tmux, tmp_path: Path) -> None:
    status_file = tmp_path / "status"
    command = (
        f"{shlex.quote(str(BINARY))} open {PROFILE} --job {JOB}; "
        f"echo $? > {shlex.quote(str(status_file))}"
    )
    tmux.run(
        "new-session", "-d", "-s", tmux.session, "-x", str(WIDTH), "-y", str(HEIGHT),
        "-c", str(REPO), "sh", "-c", command,
    )  # fmt: skip

    tmux.wait_for("the function table", lambda s: "Functions" in s and "train()" in s)
    # The first screen may be the quick stage (numbers only): wait for the source and advice.
    screen = tmux.wait_for(
        "the source and the advice",
        lambda s: "enumerate(train_loader)" in s and "reading source and advice" not in s,
    )
    loader_lines = [line for line in screen.splitlines() if "enumerate(train_loader)" in line]
    assert loader_lines, screen
    assert any("DataLoader" in line for line in loader_lines), screen

    tmux.keys("Down")
    tmux.keys("?")
    tmux.wait_for("the help screen", lambda s: "escape closes this help" in s)
    tmux.keys("Escape")
    tmux.wait_for("the help to close", lambda s: "escape closes this help" not in s)

    tmux.keys("2")
    findings = tmux.wait_for("the findings", lambda s: "warning · dataloader-bound" in s)
    assert "Findings (1)" in findings, findings
    assert "--cpus-per-task=8" in findings, findings  # sized by the step-time model

    tmux.keys("q")
    deadline = time.monotonic() + WAIT_S
    while tmux.alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not tmux.alive(), "tuneadvisor did not exit on q:\n" + tmux.screen()
    assert status_file.read_text().strip() == "0"


@pytest.mark.parametrize(("width", "height"), [(100, 30), (220, 60)])
def test_the_launch_line_change_is_on_screen(tmux: Tmux, width: int, height: int) -> None:
    """The job-script tab: the advice changes `--num-workers 1` to 7 on a launch line longer
    than the pane; both lines show whole (wrapped), with no sideways scrolling, once the diff
    pane is scrolled to its end."""
    command = f"{shlex.quote(str(BINARY))} open {PROFILE} --job {JOB}"
    tmux.run(
        "new-session", "-d", "-s", tmux.session, "-x", str(width), "-y", str(height),
        "-c", str(REPO), "sh", "-c", command,
    )  # fmt: skip
    tmux.wait_for("the advice", lambda s: "Findings (1)" in s)
    tmux.keys("3")
    tmux.wait_for("the diff", lambda s: "+#SBATCH --cpus-per-task=8" in s)
    # as a user on a small terminal: to the diff pane, and to its end (the launch line is
    # the diff's last change, below the tuned-from line at 100x30)
    tmux.keys("Tab")
    tmux.keys("End")
    screen = tmux.wait_for(
        "both launch lines", lambda s: "--num-workers 1" in s and "--num-workers 7" in s
    )
    assert "-kernprof" in screen and "+kernprof" in screen
    for line in screen.splitlines():
        assert len(line) <= width


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        ((PROFILE, "--job", JOB), "train()"),  # the profile
        (("examples/mnist/watch-24752610.jsonl",), "REPLAY"),  # the replay of a recording
    ],
    ids=["profile", "replay"],
)
def test_ctrl_c_in_a_real_terminal_exits_130(
    tmux: Tmux, tmp_path: Path, args: tuple[str, ...], shown: str
) -> None:
    """Ctrl-C, typed into the terminal (C-c), ends `open` with status 130 and no
    traceback (issue 33, point 2: it said "press ctrl+q"; the replay exited 0)."""
    status_file = tmp_path / "status"
    # the pane stays open after the exit (Textual draws on stderr: it is the terminal), so
    # that what was printed can be read
    command = (
        f"{shlex.quote(str(BINARY))} open {' '.join(args)}; "
        f"echo $? > {shlex.quote(str(status_file))}; sleep 60"
    )
    tmux.run(
        "new-session", "-d", "-s", tmux.session, "-x", str(WIDTH), "-y", str(HEIGHT),
        "-c", str(REPO), "sh", "-c", command,
    )  # fmt: skip
    tmux.wait_for("the screen", lambda s: shown in s)
    tmux.keys("C-c")
    deadline = time.monotonic() + WAIT_S
    while not status_file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert status_file.exists(), "tuneadvisor did not exit on Ctrl-C:\n" + tmux.screen()
    assert status_file.read_text().strip() == "130"
    assert "Traceback" not in tmux.screen()
