"""How fast and how lean `report --log` reads a large job log (issue 20, point 13).

A generated log of --mb MiB (training chatter, a progress bar's carriage returns, a few long
lines) with one cause of death near its end, read by the real command line
(`tuneadvisor report --log FILE --format json`) in a child process: the wall time and the
child's peak RSS (max over --runs), beside the same command on a 1-line log (the start-up
cost). Rewrites the section between the joblog-bench markers of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "bench-joblog"  # generated; /data/ is ignored
BEGIN, END = "<!-- joblog-bench:begin -->", "<!-- joblog-bench:end -->"
CAUSE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.10 GiB of which 1.23 GiB is free.\n"
)


def write_log(path: Path, mib: int, seed: int) -> None:
    rng = random.Random(seed)
    chatter = [
        "Epoch {e} step {s}: loss {l:.4f} lr 3.0e-04 samples/s {r:.1f}\n",
        "\r{p:3d}%|{bar}| {s}/100000 [00:{e:02d}<01:00, 12.3it/s]",
        "INFO:root:saved checkpoint to /scratch/run/ckpt-{s}.pt\n",
    ]
    target = mib * 1024 * 1024
    with path.open("w") as out:
        written, step = 0, 0
        while written < target - 4096:
            step += 1
            line = rng.choice(chatter).format(
                e=step % 60, s=step, l=rng.random(), r=rng.random() * 900, p=step % 100,
                bar="#" * (step % 40),
            )  # fmt: skip
            if step % 50_000 == 0:
                line = "W" * 200_000 + "\n"  # a long line (a dumped tensor, a config)
            written += out.write(line)
        out.write(CAUSE)


def run_once(log: Path) -> tuple[float, float, str]:
    """(wall s, peak RSS MiB of the child, the finding ids)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "tuneadvisor", "report", "--log", str(log), "--format", "json"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    wall = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB; max over children
    ids = ",".join(f["id"] for f in json.loads(done.stdout)["findings"])
    return wall, max(peak, before) / 1024, ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100, help="size of the generated log (MiB)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    big, small = DATA / f"big-{args.mb}.log", DATA / "small.log"
    if not big.exists() or big.stat().st_size < args.mb * 1024 * 1024:
        write_log(big, args.mb, seed=20)
    small.write_text(CAUSE)
    load_start = os.getloadavg()[0]
    # the small log first: ru_maxrss is a maximum over all children, so it must not follow
    small_runs = [run_once(small) for _ in range(args.runs)]
    big_runs = [run_once(big) for _ in range(args.runs)]
    load_end = os.getloadavg()[0]
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    command = f".venv/bin/python bench/joblog_bench.py --mb {args.mb} --runs {args.runs}"
    lines = [
        BEGIN,
        "## Job log reader (issue 20, point 13)",
        "",
        f"Recorded {when} UTC by `{command}` (rewrites only this section). Load average "
        f"{load_start:.2f} at the start, {load_end:.2f} at the end, on {os.cpu_count()} CPUs.",
        "",
        "| log | wall time, median of runs (s) | peak RSS of the process (MiB) | findings |",
        "|---|---|---|---|",
    ]
    for name, runs in ((f"1 line ({small.stat().st_size} bytes)", small_runs),
                       (f"{big.stat().st_size / 2**20:.0f} MiB generated", big_runs)):  # fmt: skip
        lines.append(
            f"| {name} | {statistics.median(r[0] for r in runs):.2f} | "
            f"{max(r[1] for r in runs):.0f} | {runs[0][2]} |"
        )
    lines += [
        "",
        "The peak RSS of the large log is the maximum over all runs so far (the small log's "
        "runs come first), so the difference between the rows is what reading the log costs.",
        END,
    ]
    section = "\n".join(lines)
    sys.path.insert(0, str(ROOT / "bench"))
    from results_index import record_section

    record_section(section, BEGIN, END)
    print(section)


if __name__ == "__main__":
    main()
