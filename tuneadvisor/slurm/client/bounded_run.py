"""Run a command and read what it prints with the bounds an input file has: at most
``MAX_OUTPUT_BYTES`` of stdout (a Slurm command that prints hundreds of MB is stopped and
refused, not read into gigabytes), the first ``MAX_STDERR_BYTES`` of stderr (the rest read
and dropped: it is only ever shown), and a deadline for the whole run.

``subprocess.run(capture_output=True)`` reads both pipes whole; this reads them a chunk at a
time with ``selectors`` and kills the command once a bound is passed.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import IO

from tuneadvisor.files import MAX_TEXT_INPUT

__all__ = ["MAX_OUTPUT_BYTES", "MAX_STDERR_BYTES", "OutputTooLarge", "run_bounded"]

# As much as a file of the same output may hold (files.MAX_TEXT_INPUT): sacct -P of a
# week of a busy user's jobs is a few MB.
MAX_OUTPUT_BYTES = MAX_TEXT_INPUT
MAX_STDERR_BYTES = 64 * 1024  # Slurm's own words on failure: a few lines
_CHUNK = 1 << 16


class OutputTooLarge(Exception):
    """The command printed more than ``limit`` bytes on stdout; it was stopped."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"printed more than {limit >> 20} MiB: stopped, not read")


def run_bounded(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout_s: float,
    limit: int = MAX_OUTPUT_BYTES,
) -> subprocess.CompletedProcess[str]:
    """Run ``args`` (no shell, stdin closed) and return its exit status, stdout and stderr
    (decoded as UTF-8, a bad byte replaced, universal newlines). ``OutputTooLarge`` past
    ``limit`` bytes of stdout, ``subprocess.TimeoutExpired`` past ``timeout_s``; either way
    the command is killed first. ``OSError`` when it cannot be started."""
    proc = subprocess.Popen(
        list(args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = bytearray(), bytearray()
    deadline = time.monotonic() + timeout_s
    try:
        _read(proc.stdout, proc.stderr, out, err, deadline, limit)
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _stop(proc)
        raise subprocess.TimeoutExpired(list(args), timeout_s) from None
    except BaseException:
        _stop(proc)
        raise
    finally:
        proc.stdout.close()
        proc.stderr.close()
    return subprocess.CompletedProcess(list(args), proc.returncode, _text(out), _text(err))


def _text(data: bytearray) -> str:
    """As ``subprocess.run(text=True, errors="replace")`` gave it: UTF-8, a bad byte
    replaced, universal newlines."""
    return data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")


def _read(
    stdout: IO[bytes],
    stderr: IO[bytes],
    out: bytearray,
    err: bytearray,
    deadline: float,
    limit: int,
) -> None:
    """Both pipes to their end (or a bound): stdout into ``out``, stderr's start in ``err``."""
    with selectors.DefaultSelector() as selector:
        selector.register(stdout, selectors.EVENT_READ, out)
        selector.register(stderr, selectors.EVENT_READ, err)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired("", 0)
            for key, _ in selector.select(timeout=left):
                chunk = os.read(key.fd, _CHUNK)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                buffer: bytearray = key.data
                if buffer is out:
                    out += chunk
                    if len(out) > limit:
                        raise OutputTooLarge(limit)
                elif len(err) < MAX_STDERR_BYTES:
                    err += chunk[: MAX_STDERR_BYTES - len(err)]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill the command and reap it; a child it left holding the pipes is not waited for."""
    proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
