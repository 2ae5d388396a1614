"""Issue 31 §3, "more cores can hurt, and threads exist": intra-op threads that follow the
task's cores, oversubscribed with DataLoader workers, on this machine's CPUs.

Every run is ``mnist_single`` on synthetic MNIST with the compute on the CPU (real torch, no
device-time stand-in): ``tuneadvisor run`` sets OMP_NUM_THREADS to the task's cores, as the
bundled job scripts do ("threads follow the cores"); the "fixed 1" runs go through a Python
that sets OMP_NUM_THREADS=1 first (``--python``; the run record's ``threads`` says 1). The grid:
1 and 2 cores per task, 0-3 workers, threads following the cores and fixed at 1 (at 1 core
the two are the same run), in interleaved rounds (the order turned each round, so load from
other work falls on all alike). A run's throughput is its steady window's samples/s
(runrecord/window.py); the measured speedup is the median over the rounds of the setting's
rate over the 1-core, 1-worker run of the same round.

The model's side: the 1-core, 1-worker run profiled (``--profile``); its facts gathered as
``tuneadvisor report`` gathers them (the profile, its run record, a site file of this
machine's cores) with the bundled job script made a CPU job (its ``--gres`` line left out:
these runs compute on the CPU, and a GPU job counts no intra-op threads) and OMP_NUM_THREADS
as the grid's runs had it; then the prediction (``forecast.predict``) of each grid setting.
``--replay DIR`` reads a finished run's measurements and profiles (DIR/omp.json) and
predicts again with the code as it is now: the model's columns after a change, against the
same measurements (said so in the section).

Recorded, never asserted. Replaces only its own section of bench/RESULTS.md.

    .venv/bin/python bench/omp_oversubscription.py --repeats 3          (15-25 minutes)
    .venv/bin/python bench/omp_oversubscription.py --replay DIR         (seconds)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: bench/ is on the path, the root is not
    sys.path.insert(0, str(ROOT))

from bench.prediction_bench import steady_rate  # noqa: E402
from bench.results_index import refresh, with_section  # noqa: E402
from bench.training_advice import TA, last_run, sh  # noqa: E402

RESULTS = ROOT / "bench" / "RESULTS.md"
BEGIN = "<!-- omp-oversubscription:begin -->"
END = "<!-- omp-oversubscription:end -->"
JOB = ROOT / "slurm" / "mnist_single.sbatch"
FOLLOW, FIXED = "cores", "1"  # OMP_NUM_THREADS: the task's cores, or 1
BASE = (1, 1, FOLLOW)  # the measured run: 1 core, 1 worker


def grid(cores: Sequence[int], workers: Sequence[int]) -> list[tuple[int, int, str]]:
    """(cores, workers, threads) of every run; at 1 core "fixed 1" is the same run."""
    return [
        (c, w, t)
        for c in cores
        for t in (FOLLOW, FIXED)
        for w in workers
        if not (c == 1 and t == FIXED)
    ]


def cpu_job(text: str, threads: str) -> str:
    """The bundled job script as a CPU job (no --gres line), OMP_NUM_THREADS following the
    cores or fixed at ``threads``."""
    lines = [ln for ln in text.splitlines() if "--gres" not in ln]
    if threads != FOLLOW:
        lines = [
            f"export OMP_NUM_THREADS={threads}" if ln.startswith("export OMP_NUM_THREADS=") else ln
            for ln in lines
        ]
    return "\n".join(lines) + "\n"


def predictions(
    profile: Path, work: Path, cores: int, settings: Sequence[tuple[int, int, str]]
) -> dict[str, dict[str, Any]]:
    """The model's prediction of each setting from the profiled 1-core, 1-worker run."""
    from tuneadvisor.advisor.forecast import predict
    from tuneadvisor.advisor.plan import Change, Plan
    from tuneadvisor.advisor.sizing import step_model
    from tuneadvisor.workspace.gather import gather
    from tuneadvisor.workspace.inputs import Inputs
    from tuneadvisor.workspace.load import analyze_profiles
    from tuneadvisor.workspace.read_files import read_job

    site = work / "site.toml"
    site.write_text(f"[partitions.here]\ncores = {cores}\ndefault = true\n")
    out: dict[str, dict[str, Any]] = {}
    for threads in (FOLLOW, FIXED):
        job = work / f"cpu-omp-{threads}.sbatch"
        job.write_text(cpu_job(JOB.read_text(), threads))
        inputs = Inputs(profiles=(str(profile),), job=str(job), site=str(site))
        facts = gather(inputs, analyze_profiles(inputs), job=read_job(str(job))).facts
        model = step_model(facts)
        sized = model.sizing
        out[f"sized-{threads}"] = {
            "workers": sized.workers if sized else None,
            "cores": sized.cores_per_task if sized else None,
        }
        for c, w, t in settings:
            if t != threads:
                continue
            plan = Plan(
                sbatch={"cpus-per-task": Change(c, ("bench",))},
                script={"num_workers": Change(w, ("bench",))},
            )
            pred, why = predict(facts, plan, model)
            key = f"{c}/{w}/{t}"
            if pred is None:
                out[key] = {"why": why}
                continue
            sp = pred.speedup
            out[key] = {
                "speedup": [sp.low, sp.expected, sp.high],
                "before": _without_threads_cost(facts, plan),
                "basis": list(pred.basis),
            }
    return out


def _without_threads_cost(facts: Mapping[str, object], plan: Any) -> list[float] | None:
    """The speedup range without the threads' cost of sharing cores (OVERSUBSCRIBED_MOST
    1.0: the model before it), for the table's comparison."""
    from tuneadvisor.advisor import steptime
    from tuneadvisor.advisor.forecast import predict

    kept = steptime.OVERSUBSCRIBED_MOST
    steptime.OVERSUBSCRIBED_MOST = 1.0
    try:
        pred, _ = predict(facts, plan)
    finally:
        steptime.OVERSUBSCRIBED_MOST = kept
    return None if pred is None else [pred.speedup.low, pred.speedup.expected, pred.speedup.high]


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (5 min {five:.2f})"


def measure(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """The profiled run of each cost, then the grid in interleaved rounds."""
    runs = work / "runs"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env["TUNEADVISOR_RUNS_DIR"] = str(runs)
    one = work / "python-omp1"  # OMP_NUM_THREADS=1 whatever the run sets
    one.write_text(f'#!/bin/sh\nOMP_NUM_THREADS=1 exec "{sys.executable}" "$@"\n')
    one.chmod(0o755)
    common = ["--synthetic", str(args.train), "--epochs", "1", "--max-steps", str(args.steps),
              "--log-interval", "1", "--max-eval-batches", "1", "--no-progress", "--no-watch",
              "--batch-size", str(args.batch_size), "--extra=--test-batch-size",
              "--extra=64"]  # fmt: skip

    def run(cost: str, cores: int, workers: int, threads: str, *extra: str) -> Path:
        python = ["--python", str(one)] if threads == FIXED else []
        sh([*TA, "run", "mnist_single", *common, "--input-cost", cost, "--cpus-per-task",
            str(cores), "--num-workers", str(workers), *python, *extra], ROOT, env)  # fmt: skip
        return Path(last_run(runs)["paths"]["dir"])

    costs = [c for c in args.costs.split(",") if c]
    settings = grid(args.cores, args.workers)
    data: dict[str, Any] = {
        "costs": {},
        "load_start": _load(),
        "args": {k: v for k, v in vars(args).items() if k not in ("replay", "out")},
    }
    for cost in costs:
        print(f"{cost}: the 1-core, 1-worker run profiled", flush=True)
        folder = run(cost, *BASE, "--profile")
        record = json.loads((folder / "run.json").read_text())
        data["costs"][cost] = {
            "profile": str(folder / record["paths"]["profiles"][0]),
            "rates": {f"{c}/{w}/{t}": [] for c, w, t in settings},
            "threads": {},
        }
    for round_no in range(args.repeats):
        data.setdefault("round_loads", []).append(_load())
        print(f"round {round_no + 1} of {args.repeats} (load {_load()})", flush=True)
        for cost in costs:
            order = settings if round_no % 2 == 0 else list(reversed(settings))
            for c, w, t in order:
                folder = run(cost, c, w, t)
                rate = steady_rate(folder / "run.json", args.warmup)
                key = f"{c}/{w}/{t}"
                data["costs"][cost]["rates"][key].append(rate)
                start = json.loads((folder / "run.json").read_text())
                data["costs"][cost]["threads"][key] = _threads(start)
                print(f"  {cost} {key}: {rate}", flush=True)
    data["load_end"] = _load()
    return data


def _threads(record: Mapping[str, Any]) -> int | None:
    """The intra-op threads the run's training reported (its start event's settings)."""
    text = json.dumps(record)
    marker = '"threads": '
    at = text.find(marker)
    if at < 0:
        return None
    digits = text[at + len(marker) :].split(",", 1)[0].split("}", 1)[0].strip()
    return int(digits) if digits.isdigit() else None


def speedups(rates: Mapping[str, Sequence[float | None]]) -> dict[str, list[float]]:
    """Each setting's rate over the base setting's of the same round."""
    base = rates[f"{BASE[0]}/{BASE[1]}/{BASE[2]}"]
    out: dict[str, list[float]] = {}
    for key, values in rates.items():
        out[key] = [v / b for v, b in zip(values, base, strict=False) if v and b]
    return out


def _fmt_span(span: Sequence[float]) -> str:
    return f"{span[0]:.2f}-{span[2]:.2f}x ({span[1]:.2f}x)"


def _paired(rates: Mapping[str, Sequence[float | None]]) -> str:
    """Threads following the cores over fixed at 1, the same setting in the same round."""
    said = []
    for key, values in rates.items():
        cores, workers, threads = key.split("/")
        fixed = rates.get(f"{cores}/{workers}/{FIXED}")
        if threads != FOLLOW or fixed is None:
            continue
        pairs = [f"{a / b:.2f}" for a, b in zip(values, fixed, strict=False) if a and b]
        said.append(f"{cores} cores, {workers} workers: {', '.join(pairs)}")
    return (
        "Threads following the cores over fixed at 1 (samples/s, the same setting, each "
        "round): " + "; ".join(said) + "."
    )


def section(data: Mapping[str, Any], preds: Mapping[str, Mapping[str, Any]], how: str) -> str:
    args = data["args"]
    lines = [
        BEGIN,
        "## Intra-op threads oversubscribed with workers: measured against the model (issue 31)",
        "",
        f"Recorded {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `{how}` (rewrites only this "
        f"section). Load average {data['load_start'].split()[0]} at the start, "
        f"{data['load_end'].split()[0]} at the end ({data['load_start']} and "
        f"{data['load_end']}), on {os.cpu_count()} CPUs shared with other work.",
        "",
        f"`mnist_single`, synthetic MNIST ({args['train']} images), batch {args['batch_size']}, "
        f"{args['steps']} steps a run, the compute on the CPU (real torch, no stand-in); a "
        f"run's rate is its steady window after step {args['warmup']}; {args['repeats']} "
        'interleaved rounds. Threads "cores": OMP_NUM_THREADS = the task\'s cores (what '
        '`tuneadvisor run` and the bundled job scripts set); "1": fixed at 1. Measured '
        "speedup: the median over the rounds of the setting's rate / the 1-core, 1-worker "
        "run's in the same round. Model: the prediction from the profiled 1-core, 1-worker "
        "run (its profile and run record, a site file of this machine's cores, the bundled job "
        "script as a CPU job with OMP_NUM_THREADS as the setting had it).",
        "",
    ]
    if data.get("round_loads"):
        lines += [f"Load average at each round's start: {', '.join(data['round_loads'])}.", ""]
    if data.get("replayed"):
        lines += [f"Model columns: {data['replayed']}", ""]
    for cost, c in data["costs"].items():
        rates = c["rates"]
        ratios = speedups(rates)
        pred = preds[cost]
        lines += [
            f"### Input cost {cost}",
            "",
            f"The model sizes: threads following the cores {pred['sized-cores']['cores']} "
            f"core(s), {pred['sized-cores']['workers']} worker(s); threads fixed at 1 "
            f"{pred['sized-1']['cores']} core(s), {pred['sized-1']['workers']} worker(s).",
            "",
            "| cores | workers | threads (run's) | samples/s, each round | measured speedup "
            "(rounds) | model speedup range (expected) | inside | without the threads' cost "
            "| inside |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for key, values in rates.items():
            cores, workers, threads = key.split("/")
            got = ratios.get(key) or []
            med = statistics.median(got) if got else None
            p = pred.get(key, {})
            span = p.get("speedup")
            before = p.get("before")

            def inside_of(s: Sequence[float] | None, m: float | None = med) -> str:
                return "-" if s is None or m is None else ("yes" if s[0] <= m <= s[2] else "NO")

            shown = ", ".join("-" if v is None else f"{v:,.0f}" for v in values)
            lines.append(
                f"| {cores} | {workers} | {threads} ({c['threads'].get(key)}) | {shown} | "
                + ("-" if med is None else f"{med:.2f}x")
                + f" ({', '.join(f'{x:.2f}' for x in got)}) | "
                + (_fmt_span(span) if span else f"none: {p.get('why')}")
                + f" | {inside_of(span)} | "
                + (_fmt_span(before) if before else "-")
                + f" | {inside_of(before)} |"
            )
        lines += ["", _paired(rates), ""]
    lines.append(END)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40, help="steps per run (default: 40)")
    parser.add_argument("--warmup", type=int, default=8, help="steps left out (default: 8)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds (default: 3)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--train", type=int, default=2048, help="synthetic training images")
    parser.add_argument("--costs", default="low,medium", help="input costs")
    parser.add_argument("--cores", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--replay", type=Path, help="a finished run's folder: predict again")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    t0 = time.perf_counter()
    if args.replay:
        work = args.replay
        data = json.loads((work / "omp.json").read_text())
        data["replayed"] = (
            f"predicted again at {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by "
            f"`.venv/bin/python bench/omp_oversubscription.py --replay` from the "
            f"measurements of {data['measured_at']} (the code as it is now)"
        )
        how = data["how"]
    else:
        work = Path(tempfile.mkdtemp(prefix="omp-bench-"))
        data = measure(args, work)
        data["measured_at"] = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
        data["how"] = (
            f".venv/bin/python bench/omp_oversubscription.py --repeats {args.repeats} "
            f"--steps {args.steps} --costs {args.costs}"
        )
        how = data["how"]
        data["seconds"] = time.perf_counter() - t0
        (work / "omp.json").write_text(json.dumps(data, indent=1))
    cores = os.cpu_count() or 2
    settings = [tuple(k.split("/")) for k in next(iter(data["costs"].values()))["rates"]]
    typed = [(int(c), int(w), t) for c, w, t in settings]
    preds = {
        cost: predictions(Path(c["profile"]), work, cores, typed)
        for cost, c in data["costs"].items()
    }
    (work / "predictions.json").write_text(json.dumps(preds, indent=1))
    text = section(data, preds, how)
    old = args.out.read_text(encoding="utf-8") if args.out.exists() else "# Benchmarks\n"
    args.out.write_text(refresh(with_section(old, text, BEGIN, END)), encoding="utf-8")
    print(text)
    print(f"wrote {args.out}; work in {work}")


if __name__ == "__main__":
    main()
