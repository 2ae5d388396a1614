"""Wall-clock and peak-memory measurement of commands, with or without hyperfine.

The Python timer spawns each run with ``subprocess.Popen`` and reaps it with ``os.wait4``,
so every run gets its own wall time (``time.perf_counter`` from before the spawn to after
the reap) and its own peak RSS (``ru_maxrss`` of that child alone, KiB on Linux).
``RUSAGE_CHILDREN`` would only give the maximum over all children so far.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path


class CommandFailed(RuntimeError):
    pass


@dataclass(frozen=True)
class Run:
    wall_s: float
    maxrss_kib: int


@dataclass(frozen=True)
class Stats:
    """Summary of repeated runs of one command."""

    method: str  # "python" or "hyperfine"
    walls: tuple[float, ...]
    maxrss_kib: tuple[int, ...] = field(default=())

    @property
    def median(self) -> float:
        return statistics.median(self.walls)

    @property
    def min(self) -> float:
        return min(self.walls)

    @property
    def max(self) -> float:
        return max(self.walls)

    @property
    def stdev(self) -> float:
        return statistics.stdev(self.walls) if len(self.walls) > 1 else 0.0

    @property
    def peak_rss_mib(self) -> float | None:
        return max(self.maxrss_kib) / 1024 if self.maxrss_kib else None

    def describe(self) -> str:
        """``median 0.123 s (min 0.120, max 0.131, sd 0.003; n=10, python)``"""
        return (
            f"median {self.median:.3f} s (min {self.min:.3f}, max {self.max:.3f}, "
            f"sd {self.stdev:.3f}; n={len(self.walls)}, {self.method})"
        )


def run_once(
    cmd: Sequence[str], cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> Run:
    """Run ``cmd`` once with output discarded; raise CommandFailed (with stderr) on failure."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            list(cmd),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            lines = err.read().decode(errors="replace").strip().splitlines()
            raise CommandFailed(f"exits {proc.returncode}: {lines[-1] if lines else '(no stderr)'}")
    return Run(wall_s=wall, maxrss_kib=usage.ru_maxrss)


def time_python(
    cmd: Sequence[str],
    runs: int,
    warmup: int = 2,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Stats:
    for _ in range(warmup):
        run_once(cmd, cwd, env)
    results = [run_once(cmd, cwd, env) for _ in range(runs)]
    return Stats(
        method="python",
        walls=tuple(r.wall_s for r in results),
        maxrss_kib=tuple(r.maxrss_kib for r in results),
    )


def time_interleaved(
    cmds: Mapping[str, Sequence[str]],
    runs: int,
    warmup: int = 1,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Stats]:
    """Time several commands in one session, round by round (A B, B A, A B, ...).

    Alternating the order each round spreads drift (CPU frequency, page cache, other load
    on the machine) evenly over the commands, so their ratio is fair.
    """
    names = list(cmds)
    for _ in range(warmup):
        for name in names:
            run_once(cmds[name], cwd, env)
    walls: dict[str, list[float]] = {n: [] for n in names}
    rss: dict[str, list[int]] = {n: [] for n in names}
    for i in range(runs):
        for name in names if i % 2 == 0 else reversed(names):
            r = run_once(cmds[name], cwd, env)
            walls[name].append(r.wall_s)
            rss[name].append(r.maxrss_kib)
    return {
        n: Stats(method="python, interleaved", walls=tuple(walls[n]), maxrss_kib=tuple(rss[n]))
        for n in names
    }


def hyperfine_path() -> str | None:
    return shutil.which("hyperfine")


def hyperfine_version() -> str | None:
    exe = hyperfine_path()
    if exe is None:
        return None
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or None


def time_hyperfine(
    cmd: Sequence[str],
    runs: int,
    warmup: int = 2,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Stats:
    """hyperfine without a shell (``-N``), so the numbers include no shell start-up."""
    exe = hyperfine_path()
    if exe is None:
        raise CommandFailed("hyperfine is not installed")
    for part in cmd:
        if any(c.isspace() or c in "\"'\\" for c in part):
            raise ValueError(f"hyperfine -N cannot take argument {part!r}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "hyperfine.json"
        proc = subprocess.run(
            [
                exe,
                "-N",
                "--style",
                "none",
                "--warmup",
                str(warmup),
                "--runs",
                str(runs),
                "--export-json",
                str(out),
                " ".join(cmd),
            ],
            cwd=cwd,
            env=dict(env) if env is not None else None,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise CommandFailed(f"hyperfine failed: {proc.stderr.strip()[-500:]}")
        result = json.loads(out.read_text())["results"][0]
    return Stats(method="hyperfine -N", walls=tuple(float(t) for t in result["times"]))
