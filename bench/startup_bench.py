"""`tuneadvisor report` start-up against the viewer it replaces, and the 50,000-line report.

    .venv/bin/python bench/startup_bench.py                 # the recorded run
    .venv/bin/python bench/startup_bench.py --before f058d82  # with an earlier tree alongside
    .venv/bin/python bench/startup_bench.py --quick         # fewer runs (checks the harness)

Targets (issue 19): `report X.lprof` <= 0.8x `python -m line_profiler -rmt X.lprof` (medians
of one run of interleaved rounds, the order alternating), and `report` of the 50,000-line
profile (bench/gen_profile.py) <= 2.0 s (median). Every command runs with this interpreter,
the tree first on PYTHONPATH, output to /dev/null. Fairness: both commands run from cached
bytecode (an installed wheel has it; this checkout's environment may set
PYTHONDONTWRITEBYTECODE, which would make tuneadvisor alone compile its source on every
run), so the children get PYTHONPYCACHEPREFIX=bench/.data/pycache and the warm-up run fills
it for both; the rule cache lives in bench/.data/cache (XDG_CACHE_HOME), warm after the
warm-up as for a user's second report; a row with the cache folder unwritable compiles the
pack every run. Rewrites the section between the startup-bench markers of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from restructure_compare import DATA, ROOT, Samples, worktree

BEGIN, END = "<!-- startup-bench:begin -->", "<!-- startup-bench:end -->"
MNIST = "examples/mnist/24752610.lprof"
Case = tuple[list[str], dict[str, str], Path]  # command, environment, working folder
NOTES = [
    "What made the difference (issue 19, part 5):",
    "",
    "- the CLI imports only the command that runs; `report X.lprof` imports the lean set pinned "
    "by `tests/integration/test_import_hygiene.py` (no text-table reader, no TOML parser, no "
    "Slurm, no subprocess);",
    "- the compiled rule pack is cached as JSON in `$XDG_CACHE_HOME/tuneadvisor` (keyed by a "
    "hash of the rule files and of the compiler's source; every rule read back is checked as "
    "compiling checks it, and anything else is compiled over): the `no rule cache` row "
    "compiles the pack on every run (a first report also writes the cache);",
    "- the 50,000-line report: line kinds are looked up by shifted line number (renumbering "
    "the file's kinds for each of its 500 functions was quadratic), and the text table "
    "formats a row with one format string. What is left is parsing the 2.2 MB source, its "
    "line kinds (trainscript) and the pickle's safety scan.",
    "- Without bytecode (`PYTHONDONTWRITEBYTECODE=1` and no `__pycache__` in the checkout) "
    "tuneadvisor compiles its source on every run while line_profiler, installed, does not: "
    "that is not how an installed wheel runs, so it is not what S1 measures.",
]


def env_for(tree: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(
        PYTHONPATH=str(tree),
        PYTHONPYCACHEPREFIX=str(DATA / "pycache"),
        XDG_CACHE_HOME=str(cache),
    )
    return env


def wall(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          cwd=cwd, check=False)  # fmt: skip
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return took


def rounds(cases: dict[str, Case], n: int) -> dict[str, Samples]:
    """One warm-up each, then ``n`` rounds, each in the other order from the last."""
    for case in cases.values():
        wall(*case)
    out = {name: Samples() for name in cases}
    names = list(cases)
    for i in range(n):
        for name in names if i % 2 == 0 else reversed(names):
            out[name].values.append(wall(*cases[name]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="git ref of an earlier tree to time alongside")
    parser.add_argument("--quick", action="store_true", help="fewer runs (checks the harness)")
    args = parser.parse_args()
    python = sys.executable
    cache = DATA / "cache"
    unwritable = DATA / "no-cache"  # a file: no cache folder can be made under it
    DATA.mkdir(parents=True, exist_ok=True)
    unwritable.write_text("")
    big = DATA / "gen" / "big.lprof"
    if not big.exists():
        subprocess.run([python, "bench/gen_profile.py", "--out", str(big.parent)], check=True,
                       cwd=ROOT, capture_output=True)  # fmt: skip
    trees = {"report": ROOT}
    if args.before:
        trees[f"report at {args.before}"] = worktree(args.before)
    n_fast, n_big = (4, 2) if args.quick else (15, 5)
    load_start = os.getloadavg()[0]
    started = time.perf_counter()

    # Each tree runs in its own folder: `python -m` puts the working folder first on the path.
    mnist = str(ROOT / MNIST)
    small: dict[str, Case] = {
        name: ([python, "-m", "tuneadvisor", "report", mnist], env_for(tree, cache), tree)
        for name, tree in trees.items()
    }
    small["line_profiler -rmt"] = ([python, "-m", "line_profiler", "-rmt", mnist],
                                   env_for(ROOT, cache), ROOT)  # fmt: skip
    report = [python, "-m", "tuneadvisor", "report", mnist]
    small["report, no rule cache (folder unwritable)"] = (report, env_for(ROOT, unwritable), ROOT)
    fast = rounds(small, n_fast)
    large = rounds(
        {
            name: ([python, "-m", "tuneadvisor", "report", str(big)], env_for(tree, cache), tree)
            for name, tree in trees.items()
        },
        n_big,
    )
    load_end = os.getloadavg()[0]
    ratio = statistics.median(fast["report"].values) / statistics.median(
        fast["line_profiler -rmt"].values
    )
    big_median = statistics.median(large["report"].values)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    command = ".venv/bin/python bench/startup_bench.py" + (
        f" --before {args.before}" if args.before else ""
    )
    busy = load_start >= (os.cpu_count() or 1) * 0.5 or load_end >= (os.cpu_count() or 1) * 0.5
    lines = [
        BEGIN,
        "## `report` start-up against line_profiler, and the 50,000-line report (issue 19)",
        "",
        f"Recorded {when} UTC by `{command}` in {time.perf_counter() - started:.0f} s "
        f"(1-minute load average {load_start:.2f} at the start, {load_end:.2f} at the end, on "
        f"{os.cpu_count()} CPUs){'; the machine was busy: times may be inflated' if busy else ''}"
        f". Each table is one run of interleaved rounds (the order alternates), after one "
        "warm-up run of each command; both commands read cached bytecode and the rule pack is "
        "cached (bench/startup_bench.py says how).",
        "",
        "| # | What | Goal | Measured | Result |",
        "|---|------|------|----------|--------|",
        f"| S1 | `report {MNIST}` / `python -m line_profiler -rmt` on the same file | <= 0.8x "
        f"(medians) | {ratio:.2f}x | {'PASS' if ratio <= 0.8 else 'MISS'} |",
        f"| S2 | `report` on the 50,000-line profile | <= 2.0 s (median) | {big_median:.3f} s | "
        f"{'PASS' if big_median <= 2.0 else 'MISS'} |",
        "",
        f"`{MNIST}`, wall time per command ({n_fast} rounds):",
        "",
        "| command | wall | / line_profiler |",
        "|---|---|---|",
    ]
    lp = statistics.median(fast["line_profiler -rmt"].values)
    for name, samples in fast.items():
        share = statistics.median(samples.values) / lp
        lines.append(f"| {name} | {samples.text()} | {share:.2f}x |")
    lines += ["", f"50,000-line profile ({n_big} rounds):", "", "| command | wall |", "|---|---|"]
    lines += [f"| {name} | {samples.text()} |" for name, samples in large.items()]
    lines += ["", *NOTES, END]
    section = "\n".join(lines)
    from results_index import record_section

    record_section(section, BEGIN, END)
    print(section)


if __name__ == "__main__":
    main()
