"""The iteration-pattern search of the trace reader (issue 30; bounded as issue 34 asks):
its time and memory at its bounds, and what it adds to reading a real trace.

    .venv/bin/python bench/pattern_bench.py            # the recorded run (rewrites its part)
    .venv/bin/python bench/pattern_bench.py --no-record

- P1 worst cases of ``pattern.find`` on collected columns (no JSON): MAX_TOP_OPS top-level
  ops of 1,000 names in no order (nothing repeats: every candidate tried, every anchor
  refused); the same count as 200 copies of a 500-op block; MAX_HOST_OPS host ops on the
  thread (each top-level op with 3 children). Time (best of 3) and the peak of Python
  allocations (tracemalloc) during the search.
- P2 reading the real traces of tests/fixtures/realworld/traces with and without their
  ProfilerStep#/Optimizer.step# marks: the reader's time for each (median of 3).

Rewrites the section between the pattern-bench markers of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tuneadvisor.profile.trace import pattern  # noqa: E402
from tuneadvisor.profile.trace.collect import Collected  # noqa: E402
from tuneadvisor.profile.trace.reader import read_rank  # noqa: E402

RESULTS = REPO / "bench" / "RESULTS.md"
BEGIN, END = "<!-- pattern-bench:begin -->", "<!-- pattern-bench:end -->"
REAL = REPO / "tests" / "fixtures" / "realworld" / "traces"
UNMARK = ("ProfilerStep#", "Optimizer.step#")


def _columns(names: list[str], children: int = 0) -> Collected:
    col = Collected()
    t = 0.0
    for name in names:
        col.add({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": t,
                 "dur": 10.0})  # fmt: skip
        for k in range(children):
            col.add({"ph": "X", "cat": "cpu_op", "name": f"child{k}", "pid": 1, "tid": 1,
                     "ts": t + 1 + 2 * k, "dur": 1.0})  # fmt: skip
        t += 12.0
    return col


def _measure(fn: Callable[[], object]) -> tuple[float, float, object]:
    times = []
    got: object = None
    for _ in range(3):
        t0 = time.perf_counter()
        got = fn()
        times.append(time.perf_counter() - t0)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return min(times), peak / 2**20, got


def p1() -> list[str]:
    rng = random.Random(30)
    n = pattern.MAX_TOP_OPS
    block = [f"aten::op{rng.randrange(200)}" for _ in range(500)]
    cases = {
        f"{n:,} top-level ops, 1,000 names, no order": _columns(
            [f"aten::op{rng.randrange(1000)}" for _ in range(n)]
        ),
        f"{n:,} top-level ops, 200 copies of a 500-op block": _columns(block * (n // 500)),
        f"{pattern.MAX_HOST_OPS:,} host ops ({pattern.MAX_HOST_OPS // 4:,} top-level, "
        "3 children each)": _columns(block * (pattern.MAX_HOST_OPS // 4 // 500), children=3),
    }
    rows = ["| case | found | time (s, best of 3) | peak allocations (MiB) |", "|---|---|---|---|"]
    for what, col in cases.items():
        secs, mib, got = _measure(lambda col=col: pattern.find(col))
        found = "none" if got is None else f"{len(got.spans)} iterations"  # type: ignore[attr-defined]
        rows.append(f"| {what} | {found} | {secs:.2f} | {mib:.1f} |")
        print(rows[-1], flush=True)
    return rows


def p2() -> list[str]:
    rows = ["| trace | steps marked | read (s) | marks taken out: steps, from | read (s) |",
            "|---|---|---|---|---|"]  # fmt: skip
    names = sorted(p.name for p in REAL.iterdir() if p.name.endswith((".json.gz", ".json")))
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            opener = gzip.open if name.endswith(".gz") else open
            with opener(REAL / name, "rt") as f:
                doc = json.load(f)
            if not isinstance(doc, dict):
                continue
            events = [e for e in doc["traceEvents"] if isinstance(e, dict)
                      and not str(e.get("name", "")).startswith(UNMARK)]  # fmt: skip
            out = os.path.join(tmp, "unmarked.json")
            with open(out, "w") as f:
                json.dump({**doc, "traceEvents": events}, f)
            marked = [_timed(str(REAL / name)) for _ in range(3)]
            bare = [_timed(out) for _ in range(3)]
            m, b = marked[0][1], bare[0][1]
            rows.append(f"| `{name}` | {len(m.steps)} ({m.step_source}) | "
                        f"{statistics.median(t for t, _ in marked):.2f} | "
                        f"{len(b.steps)} ({b.step_source}) | "
                        f"{statistics.median(t for t, _ in bare):.2f} |")  # fmt: skip
            print(rows[-1], flush=True)
    return rows


def _timed(path: str) -> tuple[float, object]:
    t0 = time.perf_counter()
    rank = read_rank(path)
    return time.perf_counter() - t0, rank


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    load0 = os.getloadavg()[0]
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    first, second = p1(), p2()
    load1 = os.getloadavg()[0]
    text = "\n".join([
        BEGIN,
        "## Iterations from the repeated pattern of top-level ops (issue 30)",
        "",
        f"Recorded {started} UTC, {os.cpu_count()} CPUs, 1-min load average {load0:.2f} -> "
        f"{load1:.2f} (a load near the CPU count inflates the times). Rerun: "
        "`.venv/bin/python bench/pattern_bench.py`.",
        "",
        "### P1 `pattern.find` at its bounds (collected columns, no JSON)",
        "",
        *first,
        "",
        "### P2 reading each real trace, with and without its step marks",
        "",
        "The marks taken out are every `ProfilerStep#` and `Optimizer.step#` event; the "
        "unmarked file is plain JSON (the marked one as stored, mostly .gz).",
        "",
        *second,
        END,
    ])  # fmt: skip
    if args.no_record:
        print(text)
        return
    old = RESULTS.read_text()
    if BEGIN in old:
        head, rest = old.split(BEGIN, 1)
        new = head + text + rest.split(END, 1)[1]
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    RESULTS.write_text(new)


if __name__ == "__main__":
    main()
