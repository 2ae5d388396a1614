"""Before/after timings of a restructuring: the same commands from two trees, interleaved in one
run (A B, B A, ...) so that the machine's load weighs on both alike.

    .venv/bin/python bench/restructure_compare.py --before ca2a38a   # issue 10's baseline

The `before` tree is a detached git worktree under bench/.data/ (made once, reused); both run
with this checkout's .venv, each tree first on PYTHONPATH. Cases: `--help`; `report` on the
MNIST example (with `python -m line_profiler -rmt` on the same file for scale); `report` on
the 50,000-line profile (bench/gen_profile.py); and `watch --headless` at 0.1 s over a
9-process tree for 10 s (CPU of the watch process itself, from wait4). Rewrites the section
between the restructure-bench markers of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / ".data"
VENV = ROOT / ".venv" / "bin"
BEGIN, END = "<!-- restructure-bench:begin -->", "<!-- restructure-bench:end -->"
TREE = (  # a parent and 8 sleeping children: the shape of a DataLoader with workers
    "import subprocess, sys, time\n"
    "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])"
    " for _ in range(8)]\n"
    "time.sleep(600)\n"
)


@dataclass
class Samples:
    values: list[float] = field(default_factory=list)

    def text(self, unit: str = "s") -> str:
        v = self.values
        return (
            f"median {statistics.median(v):.3f} {unit} (min {min(v):.3f}, max {max(v):.3f}; "
            f"n={len(v)})"
        )


def worktree(ref: str) -> Path:
    path = DATA / f"before-{ref}"
    if not path.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "worktree", "add", "--detach", str(path), ref], check=True,
                       cwd=ROOT, capture_output=True)  # fmt: skip
    return path


def env_for(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree)}


def run_once(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and the process's own CPU seconds (user + system, from wait4)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=ROOT)  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return wall, usage.ru_utime + usage.ru_stime


def interleaved(
    cases: dict[str, tuple[list[str], dict[str, str]]], n: int, cpu: bool = False
) -> dict[str, Samples]:
    out = {name: Samples() for name in cases}
    names = list(cases)
    for cmd, env in cases.values():  # one warm-up each (page cache, .pyc)
        run_once(cmd, env)
    for i in range(n):
        for name in names if i % 2 == 0 else reversed(names):
            wall, used = run_once(*cases[name])
            out[name].values.append(used if cpu else wall)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="ca2a38a", help="git ref of the earlier tree")
    parser.add_argument("--quick", action="store_true", help="fewer runs (checks the harness)")
    args = parser.parse_args()
    before, after = worktree(args.before), ROOT
    trees = {"before": env_for(before), "after": env_for(after)}
    big = DATA / "gen" / "big.lprof"
    if not big.exists():
        subprocess.run([str(VENV / "python"), "bench/gen_profile.py", "--out", str(big.parent)],
                       check=True, cwd=ROOT, capture_output=True)  # fmt: skip
    mnist = "examples/mnist/24752610.lprof"
    ta = str(VENV / "tuneadvisor")
    n_fast, n_big, n_watch = (4, 2, 1) if args.quick else (20, 5, 3)
    load_start = os.getloadavg()[0]
    started = time.perf_counter()
    rows: list[tuple[str, dict[str, Samples], str]] = []

    def both(cmd: list[str]) -> dict[str, tuple[list[str], dict[str, str]]]:
        return {name: (cmd, env) for name, env in trees.items()}

    rows.append(("`tuneadvisor --help`", interleaved(both([ta, "--help"]), n_fast), "wall"))
    report = both([ta, "report", mnist])
    report["line_profiler -rmt"] = ([str(VENV / "python"), "-m", "line_profiler", "-rmt", mnist],
                                    trees["after"])  # fmt: skip
    rows.append((f"`tuneadvisor report {mnist}`", interleaved(report, n_fast), "wall"))
    rows.append(("`tuneadvisor report` on the 50,000-line profile",
                 interleaved(both([ta, "report", str(big)]), n_big), "wall"))  # fmt: skip
    tree = subprocess.Popen([sys.executable, "-c", TREE])
    try:
        time.sleep(1.0)
        watch = [ta, "watch", "--headless", "--duration", "10", "--interval", "0.1",
                 "--pid", str(tree.pid)]  # fmt: skip
        rows.append(("`watch --headless` 10 s at 0.1 s over 9 processes",
                     interleaved(both(watch), n_watch, cpu=True), "CPU"))  # fmt: skip
    finally:
        tree.kill()
        tree.wait()
    load_end = os.getloadavg()[0]
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    lines = [
        BEGIN,
        "## Restructuring, before and after (issue 10)",
        "",
        f"Recorded {when} UTC by `.venv/bin/python bench/restructure_compare.py --before "
        f"{args.before}` in {time.perf_counter() - started:.0f} s (1-minute load average "
        f"{load_start:.2f} at the start, {load_end:.2f} at the end, on {os.cpu_count()} CPUs). "
        f"`before` is {args.before} (the tree before the restructuring), `after` this "
        "checkout; every case alternates them in one run, so load weighs on both alike.",
        "",
        "| case | measured | before | after | after / before |",
        "|---|---|---|---|---|",
    ]
    for what, samples, kind in rows:
        b, a = (statistics.median(samples[k].values) for k in ("before", "after"))
        lines.append(f"| {what} | {kind} | {samples['before'].text()} | "
                     f"{samples['after'].text()} | {a / b:.2f}x |")  # fmt: skip
        for name, s in samples.items():
            if name not in ("before", "after"):
                lines.append(f"| (for scale) {name} | {kind} | | {s.text()} | |")
    lines.append(END)
    section = "\n".join(lines)
    sys.path.insert(0, str(ROOT / "bench"))
    from results_index import record_section

    record_section(section, BEGIN, END)
    print(section)


if __name__ == "__main__":
    main()
