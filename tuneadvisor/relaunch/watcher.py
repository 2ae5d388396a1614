"""``tuneadvisor watch`` beside a run: a separate process sampling the training tree into
the run's ``metrics.jsonl``.

A subprocess, not a thread: ``launch`` and ``watch`` are one layer and do not import each
other, and a sampler in its own process neither slows the runner's reading of the progress
lines nor counts its own CPU in the tree it watches.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO

METRICS_NAME = "metrics.jsonl"
INTERVAL_S = 1.0


def tuneadvisor_command() -> list[str]:
    """How to start this tuneadvisor again: this interpreter, the package as a module."""
    return [sys.executable, "-m", "tuneadvisor"]


def watch_argv(pids: Sequence[int], record: Path, interval_s: float = INTERVAL_S) -> list[str]:
    roots = [arg for pid in pids for arg in ("--pid", str(pid))]
    return [
        *tuneadvisor_command(), "watch", *roots, "--headless", "--record", str(record),
        "--interval", f"{interval_s:g}",
    ]  # fmt: skip


class Watcher:
    """Started once the training processes are; stopped when they have ended (it would stop
    by itself within a round, SIGTERM just saves that round)."""

    def __init__(self, run_dir: Path, pids: Sequence[int], env: dict[str, str]) -> None:
        self.record = run_dir / METRICS_NAME
        self.log_path = run_dir / "watch.log"
        self._log: IO[str] = open(self.log_path, "w")  # noqa: SIM115 (closed in stop)
        self.proc: subprocess.Popen[str] | None = None
        self.error: str | None = None
        try:
            self.proc = subprocess.Popen(
                watch_argv(pids, self.record), stdout=self._log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=env, cwd=run_dir, text=True,
            )  # fmt: skip
        except OSError as exc:
            self.error = f"could not start tuneadvisor watch: {exc.strerror or exc}"
            self._log.close()

    def stop(self, timeout_s: float = 10.0) -> int | None:
        """Its exit status (None: it could not be started)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            code = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._log.close()
        return code

    def last_words(self) -> str:
        """The last line it printed (why it found nothing to sample, say)."""
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1] if lines else ""
