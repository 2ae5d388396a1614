"""The program ``watch -- COMMAND`` starts, and where its output goes.

With the screen, the program gets a terminal of its own (a pty: it still sees a terminal, so
Python and C stdio flush each line and progress bars draw as they would) in a process group of
its own (a new session: it never reads the screen's keys, and Ctrl-C on the screen reaches it
only as the SIGINT the screen sends to its group). A reader thread copies what it writes to
the log file, byte for byte, and into ``OutputLines`` for the screen's pane.

Headless, the program stays in watch's process group (Ctrl-C in the terminal reaches both, as
before); with a log file its output is copied to the log and to watch's own stdout (through a
pty when stdout is a terminal, else a pipe: the program sees what it would have seen).

A waiter thread reaps the program as soon as it exits (so that no zombie lingers as the
watched root) and notes when. "Leave it running" (``detach``) hands the reading over to a
small process of its own that drains the output into the log until the program closes it:
the program never writes into a closed terminal or pipe.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO, Literal

from tuneadvisor.errors import InputError
from tuneadvisor.files import open_append_bytes
from tuneadvisor.watch.output import OutputLines

Capture = Literal["pty", "pipe"]
READ_BYTES = 65536
POLL_S = 0.2  # how often the reader looks at its stop flag while the program is quiet


def default_log(record: str | None) -> str | None:
    """``--log``'s default: beside ``--record`` (``run.jsonl`` -> ``run.log``)."""
    if not record:
        return None
    path = Path(record)
    log = path.with_suffix(".log")
    return str(log if log != path else path.with_name(path.name + ".out"))


def open_log(path: str) -> BinaryIO:
    """Opened for appending as ``--record`` is (``files.open_append``): a FIFO or a device
    is refused at once, where ``open`` waited forever for a FIFO's reader. The reader
    thread writes it, ``close()`` closes it."""
    return open_append_bytes(path, "program's log")


def exit_status(code: int) -> int:
    """As a shell says it: killed by signal N is 128 + N."""
    return 128 - code if code < 0 else code


def _pty_pair(columns: int | None) -> tuple[int, int]:
    """A pty whose output is passed on as written (no ``\\n`` -> ``\\r\\n``)."""
    import fcntl
    import struct
    import termios

    master, slave = os.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.ONLCR  # oflag
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    if columns:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    return master, slave


def send_to_group(pid: int, sig: int) -> bool:
    """``sig`` to the process group ``pid`` leads (a child started in a session of its own:
    its children get it too), else to ``pid`` alone; False when it is gone."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


class Program:
    """A started command: its pid, its output, its end. Signals go to its process group."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        capture: Capture | None,
        log: BinaryIO | None = None,
        echo: BinaryIO | None = None,
        own_session: bool = False,
        columns: int | None = None,
    ) -> None:
        self.command = tuple(command)
        self.output = OutputLines()
        self.log = log
        self.log_path: str | None = None if log is None else str(log.name)
        self._echo = echo
        self._fd: int | None = None
        self._stop = threading.Event()
        self.left_running = False  # "leave it running": watch exits without waiting
        self.ended_at: float | None = None
        slave = None
        kwargs: dict[str, object] = {}
        if capture == "pty":
            try:
                self._fd, slave = _pty_pair(columns)
            except OSError:
                capture = "pipe"  # no pty here (a container without /dev/pts)
        if capture == "pipe":
            self._fd, slave = os.pipe()
        if capture is not None:
            kwargs = {"stdout": slave, "stderr": slave}
        if own_session:
            kwargs["stdin"] = subprocess.DEVNULL  # the screen owns the terminal's keys
        self.started = time.monotonic()
        try:
            self.popen = subprocess.Popen(command, start_new_session=own_session, **kwargs)  # type: ignore[call-overload]
        except OSError as exc:
            self._close_fd()
            raise InputError(command[0], f"cannot start: {exc.strerror or exc}") from None
        finally:
            if slave is not None:
                os.close(slave)
        self.pid: int = self.popen.pid
        self._reader: threading.Thread | None = None
        if self._fd is not None:
            self._reader = threading.Thread(target=self._read, name="program-output", daemon=True)
            self._reader.start()
        self._waiter = threading.Thread(target=self._wait, name="program-wait", daemon=True)
        self._waiter.start()

    # ------------------------------------------------------------------ state

    @property
    def running(self) -> bool:
        return self.ended_at is None

    @property
    def returncode(self) -> int | None:
        """The exit status as a shell says it, once it ended."""
        code = self.popen.returncode
        return None if code is None or self.running else exit_status(code)

    @property
    def wall_s(self) -> float:
        return (self.ended_at or time.monotonic()) - self.started

    def describe_end(self) -> str:
        """``exit status 0``, or ``killed by SIGTERM (status 143)``."""
        code = self.popen.returncode
        if code is None:
            return "still running"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"killed by {name} (status {exit_status(code)})"
        return f"exit status {code}"

    # ------------------------------------------------------------------ signals

    def signal(self, sig: signal.Signals) -> bool:
        """To its process group when it has one of its own, else to it; False once it ended."""
        return self.running and send_to_group(self.pid, sig)

    def interrupt(self) -> bool:
        return self.signal(signal.SIGINT)

    def terminate(self) -> bool:
        return self.signal(signal.SIGTERM)

    def kill(self) -> bool:
        return self.signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int | None:
        self._waiter.join(timeout)
        return self.returncode

    # ------------------------------------------------------------------ threads

    def _wait(self) -> None:
        self.popen.wait()
        self.ended_at = time.monotonic()

    def _read(self) -> None:
        fd = self._fd
        assert fd is not None
        while not self._stop.is_set():
            ready, _, _ = select.select([fd], [], [], POLL_S)
            if not ready:
                continue
            try:
                data = os.read(fd, READ_BYTES)
            except OSError as exc:  # a pty whose last writer closed reads EIO: the end
                if exc.errno != errno.EIO:
                    raise
                data = b""
            if not data:
                self.output.feed_bytes(b"", final=True)
                self._close_fd()
                return
            self._copy(data)
            self.output.feed_bytes(data)

    def _copy(self, data: bytes) -> None:
        for out in (self.log, self._echo):
            if out is None:
                continue
            try:
                out.write(data)
                out.flush()
            except OSError:  # a full disk or a closed stdout: the pane still shows it
                pass

    def drained(self, timeout: float) -> bool:
        """Wait for the output's end (the program and whatever inherited its output closed
        it); False if something still holds it open after ``timeout``."""
        if self._reader is None:
            return True
        self._reader.join(timeout)
        return not self._reader.is_alive()

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    # ------------------------------------------------------------------ the end

    def detach(self) -> None:
        """Leave it running: a process of its own drains the output into the log (or
        nowhere) until the program closes it, so it never writes into a closed terminal."""
        self.left_running = True
        if self._reader is not None:
            self._stop.set()
            self._reader.join()
        fd = self._fd
        if fd is None:
            return
        if os.fork() == 0:  # the drainer: no thread of this process comes along
            try:
                os.setsid()  # the terminal closing does not end it
                signal.signal(signal.SIGHUP, signal.SIG_IGN)
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                log = self.log.fileno() if self.log is not None else None
                while True:
                    try:
                        data = os.read(fd, READ_BYTES)
                    except OSError:
                        break
                    if not data:
                        break
                    if log is not None:
                        with contextlib.suppress(OSError):  # a full disk: drain on
                            os.write(log, data)
            finally:
                os._exit(0)
        self._close_fd()

    def close(self) -> None:
        """Stop reading (after ``drained``) and close the log."""
        self._stop.set()
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(POLL_S * 5)
        if self.log is not None:
            self.log.close()


def start_program(
    command: Sequence[str], *, screen: bool, log_path: str | None, columns: int | None = None
) -> Program:
    """Start ``command`` for ``watch``: see the module's text for where its output goes."""
    log = open_log(log_path) if log_path else None
    try:
        if screen:
            return Program(command, capture="pty", log=log, own_session=True, columns=columns)
        if log is None:
            return Program(command, capture=None)  # the terminal as it is
        capture: Capture = "pty" if sys.stdout.isatty() else "pipe"
        return Program(command, capture=capture, log=log, echo=sys.stdout.buffer)
    except BaseException:
        if log is not None:
            log.close()
        raise
