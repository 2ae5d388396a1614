"""Issue 6 acceptance: does the advice pay off on this machine, and does `tune` keep what
should be kept?

1. Input-bound: ``mnist_single --input-cost high`` as the courses run it (1 core, one worker),
   profiled; ``tuneadvisor report --format json`` on that profile, the bundled job script and a
   site file for this machine; ``tuneadvisor run --from`` the report. Then a grid over
   --cpus-per-task x --num-workers, same run otherwise. Recorded: advised / baseline, and
   advised / grid best (goal: >= 90 %).
2. Compute-bound: ``tuneadvisor tune mnist_single`` (no input cost) over workers and cores: it
   should keep its workers and say why (a core added for PyTorch's compute threads, with the
   same workers, is reported: on this CPU-only machine the compute runs on the cores).

Replaces only its own section of bench/RESULTS.md (between the training-bench markers).

    .venv/bin/python bench/training_advice.py [--steps 12] [--repeats 2]    (5-10 minutes)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "RESULTS.md"
BEGIN = "<!-- training-bench:begin -->"
END = "<!-- training-bench:end -->"
TA = [sys.executable, "-m", "tuneadvisor"]


def sh(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return proc


def last_run(runs: Path) -> dict[str, Any]:
    newest = max(runs.glob("*/run.json"), key=lambda p: p.stat().st_mtime)
    data: dict[str, Any] = json.loads(newest.read_text())
    return data


def rate(run: dict[str, Any], warmup: int) -> float:
    steps = [s for s in run["steps"] if s["step"] > warmup]
    return float(statistics.median(s["samples_per_s"] for s in steps))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=12, help="steps per run (default: 12)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2, help="runs per grid point")
    parser.add_argument("--train", type=int, default=4096, help="synthetic training images")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    t0 = time.perf_counter()
    load0 = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="training-bench-"))
    runs = work / "runs"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env["TUNEADVISOR_RUNS_DIR"] = str(runs)
    common = ["--synthetic", str(args.train), "--epochs", "1", "--max-steps", str(args.steps),
              "--log-interval", "1", "--max-eval-batches", "1", "--no-progress",
              "--extra=--test-batch-size", "--extra=64"]  # fmt: skip
    high = [*common, "--input-cost", "high", "--batch-size", "64"]

    def measure(extra: list[str], repeats: int) -> tuple[float, list[float], dict[str, Any]]:
        rates = []
        run: dict[str, Any] = {}
        for _ in range(repeats):
            sh([*TA, "run", "mnist_single", *high, *extra], ROOT, env)
            run = last_run(runs)
            rates.append(rate(run, args.warmup))
        return statistics.median(rates), rates, run

    print("1. the courses' run (1 core, 1 worker), profiled once for the report", flush=True)
    sh([*TA, "run", "mnist_single", *high, "--cpus-per-task", "1", "--num-workers", "1",
        "--profile"], ROOT, env)  # fmt: skip
    base_run = last_run(runs)
    profile = Path(base_run["paths"]["dir"]) / base_run["paths"]["profiles"][0]
    site = work / "site.toml"
    site.write_text(f"[partitions.here]\ncores = {os.cpu_count()}\ndefault = true\n")
    report = work / "report.json"
    out = sh([*TA, "report", "--format", "json", str(profile), "--job",
              "slurm/mnist_single.sbatch", "--site", str(site)], ROOT, env)  # fmt: skip
    report.write_text(out.stdout)
    # Issue 12: applying the same evidence twice writes the same file (the advice comes from
    # the run that was measured, not from the script as it is after the first apply).
    once, twice = work / "applied-once.sbatch", work / "applied-twice.sbatch"
    sh([*TA, "apply", str(profile), "--job", "slurm/mnist_single.sbatch", "--site", str(site),
        "-o", str(once)], ROOT, env)  # fmt: skip
    sh([*TA, "apply", str(profile), "--job", str(once), "--site", str(site),
        "-o", str(twice)], ROOT, env)  # fmt: skip
    same = once.exists() and twice.exists() and once.read_bytes() == twice.read_bytes()
    data = json.loads(out.stdout)
    findings = [f["id"] for f in data["findings"]]
    plan = data["advice"]["plan"]
    loader = next(
        (k["percent"] for k in data["profile"]["kinds"] if k["kind"] == "dataloader"), None
    )
    print(f"   findings {findings}, plan {plan}", flush=True)

    # Every setting once per round, rounds one after the other: load from other work on the
    # machine then falls on all settings alike instead of on whichever ran during it.
    cores = os.cpu_count() or 2
    points = [(c, w) for c in range(1, cores + 1) for w in range(0, c + 1)]
    samples: dict[str, list[float]] = {"baseline": [], "advised": []}
    grid_samples: dict[tuple[int, int], list[float]] = {p: [] for p in points}
    adv_run: dict[str, Any] = {}
    for round_no in range(args.repeats):
        print(f"2. round {round_no + 1}: baseline, advised (--from the report), grid", flush=True)
        sh([*TA, "run", "mnist_single", *high, "--cpus-per-task", "1", "--num-workers", "1"],
           ROOT, env)  # fmt: skip
        samples["baseline"].append(rate(last_run(runs), args.warmup))
        sh([*TA, "run", "mnist_single", *high, "--from", str(report)], ROOT, env)
        adv_run = last_run(runs)
        samples["advised"].append(rate(adv_run, args.warmup))
        for cpus, workers in points:
            sh([*TA, "run", "mnist_single", *high, "--cpus-per-task", str(cpus),
                "--num-workers", str(workers)], ROOT, env)  # fmt: skip
            grid_samples[(cpus, workers)].append(rate(last_run(runs), args.warmup))
    base_rates, adv_rates = samples["baseline"], samples["advised"]
    base_rate, adv_rate = statistics.median(base_rates), statistics.median(adv_rates)
    advised = (adv_run["settings"]["cpus_per_task"], adv_run["settings"]["knobs"]["num_workers"])
    grid = {k: (statistics.median(v), v) for k, v in grid_samples.items()}
    for (cpus, workers), (r, _) in sorted(grid.items()):
        print(f"   cpus {cpus} workers {workers}: {r:,.1f} samples/s", flush=True)
    best_key = max(grid, key=lambda k: grid[k][0])
    best_rate = grid[best_key][0]
    print("4. tune on the compute-bound run", flush=True)
    tune = sh([*TA, "tune", "mnist_single", *common, "--batch-size", "64", "--cpus-per-task",
               "1", "--num-workers", "0", "--stages", "workers,amp,pin", "--steps", "12",
               "--warmup", "3", "--repeats", str(args.repeats), "--budget", "600",
               "-o", str(work / "tuned.sbatch")], ROOT, env)  # fmt: skip
    summary_path = max(runs.glob("*tune-mnist_single*/tune.json"), key=lambda p: p.stat().st_mtime)
    summary = json.loads(summary_path.read_text())
    best_t, base_t = summary["best"], summary["base"]
    # The issue: a compute-bound run gains nothing from more workers, so `tune` keeps its
    # workers. On a CPU-only machine the compute runs on the cores, so a core added for
    # PyTorch's threads (the same workers) may pay; it is reported, not counted as a miss.
    kept = best_t["knobs"].get("num_workers") == base_t["knobs"].get("num_workers")
    t3_cores = (base_t["cpus_per_task"], best_t["cpus_per_task"])
    cores_said = (
        f"; cores {t3_cores[0]} -> {t3_cores[1]} for compute threads"
        if t3_cores[0] != t3_cores[1] else "; cores kept"
    )  # fmt: skip
    elapsed = time.perf_counter() - t0
    load1 = os.getloadavg()

    ratio = adv_rate / base_rate
    reach = adv_rate / best_rate
    rows = [
        ("T1", "input-bound run relaunched with the advice: advised / baseline samples/s",
         "> 1.0x", f"{ratio:.2f}x", "PASS" if ratio > 1.0 else "MISS"),
        ("T2", "advice against the grid's best setting (same run)", ">= 90 %",
         f"{100 * reach:.0f} %", "PASS" if reach >= 0.9 else "MISS"),
        ("T3", "compute-bound run: `tune` keeps its DataLoader workers (more gain nothing)",
         "kept, with the numbers",
         (f"workers kept ({base_t['knobs'].get('num_workers')}){cores_said}" if kept
          else f"changed to {best_t['settings']}"),
         "PASS" if kept else "MISS"),
        ("T4", "the same profile applied again to the script it wrote", "no change",
         "the same file" if same else "changed again", "PASS" if same else "MISS"),
    ]  # fmt: skip
    lines = [
        BEGIN,
        "## Relaunch with the advice, grid search and `tune` (issue 6)",
        "",
        f"Recorded {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `.venv/bin/python "
        f"bench/training_advice.py --steps {args.steps} --repeats {args.repeats}` in "
        f"{elapsed:.0f} s (rewrites only this section). CPU only: `mnist_single` on synthetic "
        f"MNIST ({args.train} images), batch 64, {args.steps} steps per run, samples/s = median "
        f"of the steps after the first {args.warmup}, median of {args.repeats} runs per point, "
        "the points interleaved round by round. "
        f"Load average {load0[0]:.2f} at the start, {load1[0]:.2f} at the end, on {cores} CPUs: "
        "other work shared the cores, so single numbers are noisy.",
        "",
        "| # | What | Goal | Measured | Result |",
        "|---|------|------|----------|--------|",
        *(f"| {a} | {b} | {c} | {d} | {e} |" for a, b, c, d, e in rows),
        "",
        "Input-bound (`--input-cost high`: a 768 px JPEG decode, affine and elastic warp per "
        "sample):",
        "",
        f"- baseline, the courses' setting (1 core, `--num-workers ${{SLURM_CPUS_PER_TASK}}` = 1)"
        f": {base_rate:,.1f} samples/s (runs: "
        f"{', '.join(f'{r:,.1f}' for r in base_rates)}); DataLoader line "
        f"{loader:.1f} % of the profiled time"
        if loader is not None
        else "",
        f"- report (its profile under kernprof + `slurm/mnist_single.sbatch` + a site file of "
        f"{cores} cores): "
        f"findings {', '.join(findings) or 'none'}; plan "
        + ", ".join(
            f"{k} = {v['value']}" for t in ("sbatch", "script") for k, v in plan[t].items()
        ),
        f"- relaunched `--from` the report: cpus {advised[0]}, workers {advised[1]}: "
        f"{adv_rate:,.1f} samples/s ({', '.join(f'{r:,.1f}' for r in adv_rates)}), "
        f"{ratio:.2f}x the baseline",
        f"- grid best: cpus {best_key[0]}, workers {best_key[1]}: {best_rate:,.1f} samples/s; the"
        f" advice reaches {100 * reach:.0f} % of it",
        f"- consistency check: the advised setting's own grid point (cpus {advised[0]}, workers "
        f"{advised[1]}) gave {grid[advised][0]:,.1f} samples/s in the same rounds, "
        f"{100 * grid[advised][0] / best_rate:.0f} % of the grid best; the relaunch and that "
        "point run the same setting, so a large gap between them is noise from the shared "
        "machine, not the advice"
        if advised in grid
        else f"- the advised setting (cpus {advised[0]}, workers {advised[1]}) is not in the grid",
        "",
        "| --cpus-per-task | --num-workers | samples/s (median) | runs |",
        "|---|---|---|---|",
        *(
            f"| {c} | {w} | {r:,.1f} | {', '.join(f'{x:,.1f}' for x in rs)} |"
            for (c, w), (r, rs) in sorted(grid.items())
        ),
        "",
        "Compute-bound (no input cost: the tutorial's ToTensor + Normalize), "
        "`tuneadvisor tune mnist_single --stages workers,amp,pin`:",
        "",
        *(
            f"- {t['stage']}: {t['settings']}: {t['samples_per_s']:,.1f} samples/s"
            if t["samples_per_s"]
            else f"- {t['stage']}: {t['settings']}: failed"
            for t in summary["trials"]
        ),
        *(f"- decision: {d}" for d in summary["decisions"]),
        "",
        "```",
        tune.stdout.strip()[-3000:],
        "```",
        END,
    ]
    text = args.out.read_text(encoding="utf-8") if args.out.exists() else "# Benchmarks\n"
    section = "\n".join(line for line in lines if line is not None)
    if str(ROOT) not in sys.path:  # run as a script: bench/ is on the path, the root is not
        sys.path.insert(0, str(ROOT))
    from bench.results_index import refresh as refresh_index
    from bench.results_index import with_section

    args.out.write_text(refresh_index(with_section(text, section, BEGIN, END)), encoding="utf-8")
    for row in rows:
        print(" | ".join(row))
    print(f"wrote {args.out} ({elapsed:.0f} s); work in {work}")


if __name__ == "__main__":
    main()
