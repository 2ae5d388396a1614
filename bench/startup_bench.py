"""`tuneadvisor report` start-up against the viewer it replaces, and the 50,000-line report.

    .venv/bin/python bench/startup_bench.py                 # the recorded run
    .venv/bin/python bench/startup_bench.py --before fca2d76  # with an earlier tree alongside
    .venv/bin/python bench/startup_bench.py --quick         # fewer runs (checks the harness)

Targets (issue 19, tightened by issue 29 point 7): `report X.lprof` <= 0.6x `python -m
line_profiler -rmt X.lprof` (medians of wall time of one run of interleaved rounds, the
order alternating; each process's CPU time, user + system from wait4, is shown beside: a
loaded machine inflates it less), `report` of the 50,000-line profile (bench/gen_profile.py)
<= 2.0 s (median), and that report's peak RSS (ru_maxrss from wait4, the largest of the
rounds) <= 100 MiB, with line_profiler's own viewer (`-mt`) on the same file alongside. Every
command runs with this interpreter, the tree first on PYTHONPATH, output to /dev/null.
Fairness: both commands run from cached bytecode (an installed wheel has it; this
checkout's environment may set PYTHONDONTWRITEBYTECODE, which would make tuneadvisor alone
compile its source on every run), so the children get PYTHONPYCACHEPREFIX=bench/.data/pycache
and the warm-up run fills it for both; the rule cache lives in bench/.data/cache
(XDG_CACHE_HOME), warm after the warm-up as for a user's second report; a row with the cache
folder unwritable compiles the pack every run. `--before REF` times the tree at REF too,
extracted once with `git archive` into bench/.data/before-REF (no git worktree is made).
Rewrites the section between the startup-bench markers of bench/RESULTS.md.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from restructure_compare import DATA, ROOT, Samples

BEGIN, END = "<!-- startup-bench:begin -->", "<!-- startup-bench:end -->"
MNIST = "examples/mnist/24752610.lprof"
Case = tuple[list[str], dict[str, str], Path]  # command, environment, working folder
NOTES = [
    "What made the difference (issue 19, part 5; issue 29, point 7):",
    "",
    "- the CLI imports only the command that runs; `report X.lprof` imports the lean set pinned "
    "by `tests/integration/test_import_hygiene.py` (no text-table reader, no TOML parser, no "
    "Slurm, no subprocess); since issue 29 also no shutil (argparse loads it, with bz2 and "
    "lzma, only to measure the terminal: cli's formatter measures it without) and no tempfile "
    "until a file is written;",
    "- the compiled rule pack is cached as JSON in `$XDG_CACHE_HOME/tuneadvisor` (keyed by a "
    "hash of the rule files and of the compiler's source; every rule read back is checked as "
    "compiling checks it, and anything else is compiled over): the `no rule cache` row "
    "compiles the pack on every run (a first report also writes the cache); the check walks "
    "each expression once (issue 29);",
    "- the 50,000-line report: line kinds are looked up by shifted line number (renumbering "
    "the file's kinds for each of its 500 functions was quadratic), and the text table "
    "formats a row with one format string. Its memory (issue 29): the line kinds of a large "
    "file are worked out a group of top-level statements at a time (~2,000 lines), each "
    "group's tree dropped before the next is parsed (`trainscript/kinds.py: _streamed`, "
    "`roles.StreamedRoles`): one `ast.parse` of the 2.2 MB source peaks at ~290 MiB and its "
    "tree (~690,000 nodes) holds ~170 MiB. The answer is the whole parse's: each group is "
    "declared, flowed once and classified as it comes, and where anything read then (a "
    "module-level name, an attribute, a class a call builds) changes later in the file, the "
    "streamed answer is dropped and the whole file is read as before "
    "(`tests/unit/test_kinds_streamed.py`). The script scan, where a report runs it, still "
    "parses the whole file;",
    "- fewer start-up costs on every report (issue 29): a docstring on each dataclass the "
    "report imports (without one, `dataclasses` formats an `inspect.signature` of the class "
    "at import), and no Slurm units (`advisor/plan.py` imports them where it sizes a memory "
    "or a time); the 50 dataclasses on the report's path are `@record`s "
    "(`tuneadvisor/records.py`: `dataclasses` collects their fields, no method is generated "
    "per class; ~0.9 ms a class, ~45 ms in all, was the largest single cost left); a cached "
    "expression that is one name (132 of the pack's 279) is checked without parsing it; "
    "shutil (with bz2 and lzma) is imported only where srun is looked for on the PATH.",
    "- issue 29, second pass: the safe-pickle scan decodes opcodes itself (a fixed-size "
    "argument is one `struct.unpack_from` at an offset; pickletools' readers for the rest; "
    "`tests/unit/test_safe_pickle_decode.py` holds it to `genops`) and dispatches on a table "
    "of handlers, about half its time; line kinds read an expression's roles by a table of "
    "node classes, skip what no pass reads (operators, single Name/Constant children, "
    "arithmetic other than a %-format, statements with nothing nested or nothing to "
    "classify): the Python part of the 50,000-line file's kinds ~40 % fewer instructions, "
    "its parse (~half of what is left) unchanged; `__main__` ignores SIGINT with `_signal` "
    "(signal.py built its enums for that call), and no collector passes while the advisor's "
    "modules and the rule pack load; the time-to-result classes (`advisor/finish.py`) are "
    "`@record`s and `datetime` is imported only where a start time is given (~4 ms of "
    "every report's start).",
    "- Without bytecode (`PYTHONDONTWRITEBYTECODE=1` and no `__pycache__` in the checkout) "
    "tuneadvisor compiles its source on every run while line_profiler, installed, does not: "
    "that is not how an installed wheel runs, so it is not what S1 measures.",
]


@dataclass
class Measured:
    """One command's rounds: wall seconds, CPU seconds (user + system), peak RSS in MiB."""

    wall: Samples = field(default_factory=Samples)
    cpu: Samples = field(default_factory=Samples)
    rss: Samples = field(default_factory=Samples)


def env_for(tree: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(
        PYTHONPATH=str(tree),
        PYTHONPYCACHEPREFIX=str(DATA / "pycache"),
        XDG_CACHE_HOME=str(cache),
    )
    return env


def snapshot(ref: str) -> Path:
    """The tree at ``ref``, extracted once with `git archive`."""
    path = DATA / f"before-{ref}"
    if not path.exists():
        part = path.with_name(path.name + ".part")
        part.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True,
                                 capture_output=True).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(part)], input=archive, check=True)
        part.rename(path)
    return path


def once(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of one run of ``cmd``."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=cwd)  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return took, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # KiB on Linux


def rounds(cases: dict[str, Case], n: int) -> dict[str, Measured]:
    """One warm-up each, then ``n`` rounds, each in the other order from the last."""
    for case in cases.values():
        once(*case)
    out = {name: Measured() for name in cases}
    names = list(cases)
    for i in range(n):
        for name in names if i % 2 == 0 else reversed(names):
            took, cpu, rss = once(*cases[name])
            out[name].wall.values.append(took)
            out[name].cpu.values.append(cpu)
            out[name].rss.values.append(rss)
    return out


def med(samples: Samples) -> float:
    return statistics.median(samples.values)


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
        trees[f"report at {args.before}"] = snapshot(args.before)
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
    big_cases: dict[str, Case] = {
        name: ([python, "-m", "tuneadvisor", "report", str(big)], env_for(tree, cache), tree)
        for name, tree in trees.items()
    }
    # line_profiler's own viewer in plain text (with -r, rich, it takes several times longer)
    big_cases["line_profiler -mt"] = ([python, "-m", "line_profiler", "-mt", str(big)],
                                      env_for(ROOT, cache), ROOT)  # fmt: skip
    large = rounds(big_cases, n_big)
    load_end = os.getloadavg()[0]
    lp = fast["line_profiler -rmt"]
    ratio = med(fast["report"].wall) / med(lp.wall)
    cpu_ratio = med(fast["report"].cpu) / med(lp.cpu)
    big_median = med(large["report"].wall)
    big_rss = max(large["report"].rss.values)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    command = ".venv/bin/python bench/startup_bench.py" + (
        f" --before {args.before}" if args.before else ""
    )
    busy = load_start >= (os.cpu_count() or 1) * 0.5 or load_end >= (os.cpu_count() or 1) * 0.5
    lines = [
        BEGIN,
        "## `report` start-up against line_profiler, and the 50,000-line report (issues 19, 29)",
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
        f"| S1 | `report {MNIST}` / `python -m line_profiler -rmt` on the same file | <= 0.6x "
        f"(medians of wall time; CPU time beside) | {ratio:.2f}x (CPU {cpu_ratio:.2f}x) | "
        f"{'PASS' if ratio <= 0.6 else 'MISS'} |",
        f"| S2 | `report` on the 50,000-line profile | <= 2.0 s (median) | {big_median:.3f} s | "
        f"{'PASS' if big_median <= 2.0 else 'MISS'} |",
        f"| S3 | peak RSS of that report (largest of the rounds) | <= 100 MiB | "
        f"{big_rss:.1f} MiB | {'PASS' if big_rss <= 100 else 'MISS'} |",
        "",
        f"`{MNIST}`, per command ({n_fast} rounds):",
        "",
        "| command | wall | / line_profiler | CPU (user + system) | / line_profiler |",
        "|---|---|---|---|---|",
    ]
    for name, m in fast.items():
        lines.append(
            f"| {name} | {m.wall.text()} | {med(m.wall) / med(lp.wall):.2f}x | {m.cpu.text()} | "
            f"{med(m.cpu) / med(lp.cpu):.2f}x |"
        )
    lines += [
        "",
        f"50,000-line profile ({n_big} rounds):",
        "",
        "| command | wall | CPU (user + system) | peak RSS |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {name} | {m.wall.text()} | {m.cpu.text()} | {m.rss.text('MiB')} |"
        for name, m in large.items()
    ]
    lines += ["", *NOTES, END]
    section = "\n".join(lines)
    from results_index import record_section

    record_section(section, BEGIN, END)
    print(section)


if __name__ == "__main__":
    main()
