"""Textual's Linux driver, made safe for a terminal that hangs up under it.

The driver writes through a thread and a queue of 30 writes. When the terminal hangs up (an
ssh session to the login node drops, tmux dies) that thread's blocked write fails and the
thread ends; the next writes fill the queue, and the one after waits for room for good. A
loaded machine makes this likely: the terminal reads slowly, the queue is already full when
the hang-up comes. The main thread, stuck in that wait, then never runs `watch`'s SIGHUP
handler, the watch never ends, and Textual's input thread spins on the dead terminal at 100 %
of a core. Here a write waits for room only while the thread lives: with the thread gone
there is no terminal to draw on, and the write is dropped."""

from __future__ import annotations

import queue

from textual.driver import Driver
from textual.drivers._writer_thread import WriterThread
from textual.drivers.linux_driver import LinuxDriver

POLL_S = 0.1  # how often a write waiting for room looks whether the writer still lives


def _put(writer: WriterThread, item: str | None) -> None:
    """Queue ``item`` for the writer thread, waiting for room only while it runs."""
    while writer.is_alive():
        try:
            writer._queue.put(item, timeout=POLL_S)  # Textual keeps no public handle on it
        except queue.Full:
            continue
        return


class HangupSafeDriver(LinuxDriver):
    """LinuxDriver whose writes and close never wait on a writer thread that has ended."""

    def write(self, data: str) -> None:
        writer = self._writer_thread
        assert writer is not None, "Driver must be in application mode"
        _put(writer, data)

    def close(self) -> None:
        writer = self._writer_thread
        if writer is not None:
            _put(writer, None)  # the end: the thread writes what is queued, then stops
            writer.join()  # returns once it has, or once a write to a hung-up terminal failed


def hangup_safe(driver: type[Driver]) -> type[Driver]:
    """``driver``, or the hang-up-safe one in place of Textual's Linux driver."""
    return HangupSafeDriver if driver is LinuxDriver else driver
