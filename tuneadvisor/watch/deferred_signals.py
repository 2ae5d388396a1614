"""Hold Ctrl-C (and the watch's SIGTERM/SIGHUP) back while a child is being started.

A ``KeyboardInterrupt`` raised inside ``subprocess.Popen``, or between its return and the
line that keeps the object, leaves a started child with no owner to end it: an ``srun
--overlap`` sampler then runs on in the user's job until the job ends. Inside
``signals_deferred()`` such a signal is noted; it is delivered, to the handler that was in
place, as the block ends, where the caller's cleanup already holds the child.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

DEFERRED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def signals_deferred(signals: tuple[int, ...] = DEFERRED) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # Python runs signal handlers in the main thread only: nothing to hold
        return
    pending: list[tuple[int, FrameType | None]] = []

    def note(signum: int, frame: FrameType | None) -> None:
        pending.append((signum, frame))

    previous = {sig: signal.signal(sig, note) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if pending:
            signum, frame = pending[0]
            handler = previous[signum]
            if callable(handler):
                handler(signum, frame)  # raises KeyboardInterrupt, as it would have
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), signum)  # its default action, now
