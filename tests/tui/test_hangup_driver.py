"""tui/hangup_driver.py: when the terminal hangs up, Textual's writer thread dies on the failed
write; the screen's next writes and its close must not wait for room in its queue for good (the
watch hung there, its main thread asleep, the input thread spinning: issue 33, point 5)."""

from __future__ import annotations

import errno
import io
import threading
from collections.abc import Callable

import pytest
from textual.drivers._writer_thread import MAX_QUEUED_WRITES, WriterThread
from textual.drivers.linux_driver import LinuxDriver

from tuneadvisor.tui.hangup_driver import HangupSafeDriver, hangup_safe

# the writer thread dying on the failed write is the case under test, not a failure of it
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")

DEADLINE_S = 30.0  # bounds a broken run; a working one returns at once


class HungUpTerminal(io.StringIO):
    """A terminal that has hung up: every write fails as a pty's does then."""

    def write(self, text: str) -> int:
        raise OSError(errno.EIO, "Input/output error")


def _dead_writer() -> WriterThread:
    writer = WriterThread(HungUpTerminal())
    writer.start()
    writer.write("the frame being drawn as the terminal hung up")
    writer.join(DEADLINE_S)  # the failed write ends the thread
    assert not writer.is_alive()
    return writer


def _returns(call: Callable[[], None]) -> bool:
    """Whether ``call`` returns (in a thread of its own, so a hang fails the test)."""
    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(DEADLINE_S)
    return not thread.is_alive()


def _driver_on(writer: WriterThread) -> HangupSafeDriver:
    driver = HangupSafeDriver.__new__(HangupSafeDriver)  # no app, no terminal: writes only
    driver._writer_thread = writer
    return driver


def test_textuals_own_writer_would_wait_for_good() -> None:
    """The hazard itself: with the writer dead, its queue fills and a write then waits."""
    writer = _dead_writer()
    for _ in range(MAX_QUEUED_WRITES):
        writer.write("x")
    assert writer._queue.full()


def test_writes_and_close_after_a_hang_up_return() -> None:
    driver = _driver_on(_dead_writer())

    def draw_then_close() -> None:
        for _ in range(3 * MAX_QUEUED_WRITES):  # more frames than the queue holds
            driver.write("a frame")
        driver.close()

    assert _returns(draw_then_close)


def test_a_live_terminal_still_gets_every_write_in_order() -> None:
    terminal = io.StringIO()
    writer = WriterThread(terminal)
    writer.start()
    driver = _driver_on(writer)
    words = [f"{n} " for n in range(3 * MAX_QUEUED_WRITES)]
    for word in words:
        driver.write(word)
    assert _returns(driver.close)
    assert terminal.getvalue() == "".join(words)


def test_only_textuals_linux_driver_is_replaced() -> None:
    assert hangup_safe(LinuxDriver) is HangupSafeDriver
    assert hangup_safe(HangupSafeDriver) is HangupSafeDriver
