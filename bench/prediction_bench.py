"""Issue 31's numbers on this machine: does the step-time model's prediction hold, for each
kind of evidence (a line_profiler profile, a torch.profiler trace, a probe, a watch recording)?

All runs are ``mnist_single`` on synthetic MNIST with the device-time stand-in
(``--device-time-ms``: each step's device work is a sleep that uses no CPU; a test mode,
never a substitute for a GPU run).

For each ``--input-cost``: the one-worker, one-core run measured four ways (profiled, traced,
probed, recorded); ``tuneadvisor report --format json`` on each with a site file of this
machine's cores; then, in interleaved rounds (load from other work falls on all alike), the
plain one-worker, one-core run (the baseline) and each predicted setting, without profiler or
sampler. A run's throughput is its one figure: the samples over the seconds of its steady
window (runrecord/window.py), not the median of per-step rates. Per evidence kind: the share
of cases whose measured rate lies inside the predicted range, and the median error of the
expected samples/s and of the expected speedup (over the baseline, measured in the same
round).

Recorded, never asserted. Replaces only its own section of bench/RESULTS.md.

    .venv/bin/python bench/prediction_bench.py [--steps 40] [--repeats 3]     (10-15 minutes)
    .venv/bin/python bench/prediction_bench.py --short                        (a smoke run)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: bench/ is on the path, the root is not
    sys.path.insert(0, str(ROOT))

from bench.results_index import refresh, with_section  # noqa: E402
from bench.training_advice import TA, last_run, sh  # noqa: E402

RESULTS = ROOT / "bench" / "RESULTS.md"
BEGIN = "<!-- prediction-bench:begin -->"
END = "<!-- prediction-bench:end -->"
TOLERANCE = 0.25  # the issue's +-25 %
REACH = 0.90  # one apply against the sweep's best
TUNE_REACH = 0.95  # tune against the sweep's best
TUNE_SHARE = 1 / 3  # of the sweep's time
MAX_WORKERS = 3


@dataclass(frozen=True)
class Predicted:
    """The prediction's samples/s: low, expected, high."""

    low: float
    expected: float
    high: float
    derived: bool  # from the predicted step time and the batch size (the report gave none)


def predicted_rate(prediction: Mapping[str, Any], batch_size: int) -> Predicted:
    """Samples/s as the report predicts it; where it gives only the step time (it did not
    know the batch size), ``batch_size`` over the step time (a longer step: fewer samples)."""
    given = prediction.get("samples_per_s")
    if given:
        return Predicted(given["low"], given["expected"], given["high"], derived=False)
    step = prediction["step_s"]
    return Predicted(
        batch_size / step["high"], batch_size / step["expected"], batch_size / step["low"], True
    )


def within(expected: float, measured: float, tolerance: float = TOLERANCE) -> bool:
    """The measured figure lies within +-``tolerance`` of the expected one."""
    return expected > 0 and abs(measured / expected - 1.0) <= tolerance


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def applied_setting(job_text: str) -> tuple[int | None, int | None]:
    """(cpus-per-task, workers) of a job script `apply` wrote: the #SBATCH line, and the launch
    line's --num-workers (a number, or ${SLURM_CPUS_PER_TASK...}: the cores)."""
    cpus_m = re.search(r"^#SBATCH\s+--cpus-per-task[= ](\d+)", job_text, re.MULTILINE)
    cpus = int(cpus_m.group(1)) if cpus_m else None
    workers_m = re.search(r"--num-workers[= ](\S+)", job_text)
    if workers_m is None:
        return cpus, None
    value = workers_m.group(1)
    if value.isdigit():
        return cpus, int(value)
    if "SLURM_CPUS_PER_TASK" in value:
        return cpus, cpus
    return cpus, None


def time_to_reach(trials: Sequence[tuple[float | None, float]], target: float) -> float | None:
    """The trials' time (each: its samples/s, its seconds; in the order they ran) until the
    end of the first that reaches ``target``; None when none does."""
    spent = 0.0
    for rate_, seconds in trials:
        spent += seconds
        if rate_ is not None and rate_ >= target:
            return spent
    return None


def kept_within_noise(tune: Mapping[str, Any]) -> tuple[bool, str]:
    """Did `tune` keep a change (best != base) whose gain over the base lies inside the two
    trials' measured spreads? (True, why) when it did."""
    base, best = tune.get("base"), tune.get("best")
    if not base or not best or not base.get("samples_per_s") or not best.get("samples_per_s"):
        return False, "no base or best trial"
    if base["settings"] == best["settings"]:
        return False, f"kept the base setting ({base['settings']})"
    gain = best["samples_per_s"] / base["samples_per_s"] - 1.0
    noise = float(base.get("spread") or 0.0) + float(best.get("spread") or 0.0)
    said = f"{100 * gain:+.1f} % against the spreads' +-{100 * noise:.1f} %"
    return gain <= noise, said


def window_rate(steps: Sequence[Mapping[str, Any]], warmup: int) -> float | None:
    """Samples over seconds of the steps after the warm-up: with several workers the batches
    arrive in bursts, so the per-step rates swing and their median can sit far from this."""
    steady = [s for s in steps if s["step"] > warmup and s.get("step_time_s")]
    seconds = sum(float(s["step_time_s"]) for s in steady)
    samples = sum(float(s["samples_per_s"]) * float(s["step_time_s"]) for s in steady)
    return samples / seconds if seconds > 0 else None


def _fmt(x: float) -> str:
    return f"{x:,.1f}"


def _records(runs_dir: Path, ids: Sequence[str]) -> list[dict[str, Any]]:
    """The run records of ``ids`` under ``runs_dir`` (those found)."""
    found = []
    for run_id in ids:
        paths = list(runs_dir.glob(f"**/{run_id}/run.json"))
        if paths:
            found.append(json.loads(paths[0].read_text()))
    return found


def _wall(records: Sequence[Mapping[str, Any]]) -> float:
    """Seconds the runs took (their records' wall_s)."""
    return sum(float(r.get("wall_s") or 0.0) for r in records)


def _best(rates: Mapping[tuple[int, int], float]) -> tuple[tuple[int, int], float]:
    key = max(rates, key=lambda k: rates[k])
    return key, rates[key]


KINDS = ("profile", "trace", "probe", "recording")
SPEEDUP_GOAL = 0.25  # every evidence kind within 25 % of the expected speedup
INSIDE_GOAL = 0.8  # the measured rate inside the range in at least 4 of 5 cases


@dataclass(frozen=True)
class Case:
    """One evidence kind at one input cost: what its report predicted, what was measured."""

    kind: str
    cost: str
    setting: tuple[int, int] | None  # (cpus, workers) predicted; None: no prediction
    why: str | None  # the no_prediction line
    rate: Predicted | None  # predicted samples/s
    speedup: tuple[float, float, float] | None  # predicted low, expected, high
    measured: float | None = None  # median window samples/s of the setting's runs
    measured_speedup: float | None = None  # median of the rounds' setting / baseline

    @property
    def inside(self) -> bool | None:
        if self.rate is None or self.measured is None:
            return None
        return self.rate.low <= self.measured <= self.rate.high

    @property
    def inside_speedup(self) -> bool | None:
        if self.speedup is None or self.measured_speedup is None:
            return None
        return self.speedup[0] <= self.measured_speedup <= self.speedup[2]

    @property
    def error(self) -> float | None:
        if self.rate is None or self.measured is None or self.rate.expected <= 0:
            return None
        return self.measured / self.rate.expected - 1.0

    @property
    def speedup_error(self) -> float | None:
        if self.speedup is None or self.measured_speedup is None or self.speedup[1] <= 0:
            return None
        return self.measured_speedup / self.speedup[1] - 1.0


@dataclass(frozen=True)
class KindSummary:
    kind: str
    cases: int  # with a prediction and a measurement
    no_prediction: int
    inside: float | None  # share inside the samples/s range
    inside_speedup: float | None  # share inside the speedup range
    error: float | None  # median |error| of the expected samples/s
    speedup_error: float | None  # median |error| of the expected speedup


def summarize(cases: Sequence[Case]) -> list[KindSummary]:
    """Per evidence kind, in KINDS order (kinds with no case left out)."""
    out = []
    for kind in KINDS:
        mine = [c for c in cases if c.kind == kind]
        if not mine:
            continue
        judged = [c for c in mine if c.inside is not None or c.inside_speedup is not None]

        def share(flags: list[bool | None]) -> float | None:
            seen = [f for f in flags if f is not None]
            return sum(seen) / len(seen) if seen else None

        def median_abs(values: list[float | None]) -> float | None:
            seen = [abs(v) for v in values if v is not None]
            return statistics.median(seen) if seen else None

        out.append(
            KindSummary(
                kind=kind,
                cases=len(judged),
                no_prediction=sum(c.setting is None for c in mine),
                inside=share([c.inside for c in judged]),
                inside_speedup=share([c.inside_speedup for c in judged]),
                error=median_abs([c.error for c in judged]),
                speedup_error=median_abs([c.speedup_error for c in judged]),
            )
        )
    return out


def agreement(cases: Sequence[Case]) -> str:
    """The same job measured several ways: one setting? do the speedup ranges overlap?"""
    predicted = [c for c in cases if c.setting is not None and c.speedup is not None]
    if not predicted:
        return "no prediction"
    settings = sorted({c.setting for c in predicted if c.setting is not None})
    low = max(c.speedup[0] for c in predicted if c.speedup is not None)
    high = min(c.speedup[2] for c in predicted if c.speedup is not None)
    said = ", ".join(f"cpus {s[0]} workers {s[1]}" for s in settings)
    overlap = f"overlap {low:.2f}-{high:.2f}x" if low <= high else "do not overlap"
    return (
        f"{'one setting' if len(settings) == 1 else f'{len(settings)} settings'} ({said}) "
        f"from {len(predicted)} kind(s); speedup ranges {overlap}"
    )


def steady_rate(record_path: Path, warmup: int) -> float | None:
    """The run's one throughput figure: samples over seconds of its steady window."""
    from tuneadvisor.runrecord.record import read_record
    from tuneadvisor.runrecord.window import window

    record = read_record(record_path)
    steady = window([s for s in record.steps if s.step > warmup])
    return steady.samples_per_s if steady is not None else None


def _case(kind: str, cost: str, report: Mapping[str, Any], batch: int) -> Case:
    advice = report["advice"]
    pred = advice.get("prediction")
    if not pred:
        return Case(kind, cost, None, advice.get("no_prediction") or "(nothing said)", None, None)
    setting = (int(pred["setting"]["cpus_per_task"]), int(pred["setting"]["num_workers"]))
    sp = pred["speedup"]
    return Case(
        kind, cost, setting, None, predicted_rate(pred, batch),
        (sp["low"], sp["expected"], sp["high"]),
    )  # fmt: skip


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f} %"


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (5 min {five:.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40, help="steps per run (default: 40)")
    parser.add_argument("--warmup", type=int, default=8, help="steps left out (default: 8)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds (default: 3)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device-time-ms", type=int, default=20, help="the stand-in's step")
    parser.add_argument("--costs", default="low,medium,high", help="input costs")
    parser.add_argument("--kinds", default=",".join(KINDS), help="evidence kinds")
    parser.add_argument("--train", type=int, default=4096, help="synthetic training images")
    parser.add_argument("--short", action="store_true", help="a smoke run: medium, 1 round")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.short:
        args.costs, args.repeats, args.steps, args.warmup = "medium", 1, 20, 5
    costs = [c.strip() for c in args.costs.split(",") if c.strip()]
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip() in KINDS]
    t0 = time.perf_counter()
    load0 = _load()
    cores = os.cpu_count() or 2
    work = Path(tempfile.mkdtemp(prefix="prediction-bench-"))
    runs = work / "runs"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env["TUNEADVISOR_RUNS_DIR"] = str(runs)
    common = ["--synthetic", str(args.train), "--epochs", "1", "--max-steps", str(args.steps),
              "--log-interval", "1", "--max-eval-batches", "1", "--no-progress",
              "--batch-size", str(args.batch_size), "--extra=--test-batch-size", "--extra=64",
              f"--extra=--device-time-ms={args.device_time_ms}"]  # fmt: skip
    site = work / "site.toml"
    site.write_text(f"[partitions.here]\ncores = {cores}\ndefault = true\n")
    job = ["--job", "slurm/mnist_single.sbatch", "--site", str(site)]

    def ta(*argv: str) -> str:
        return sh([*TA, *argv], ROOT, env).stdout

    def run(cost: str, cpus: int, workers: int, *extra: str) -> Path:
        ta("run", "mnist_single", *common, "--input-cost", cost, "--cpus-per-task", str(cpus),
           "--num-workers", str(workers), *extra)  # fmt: skip
        latest = last_run(runs)
        return Path(latest["paths"]["dir"])

    # the measured run, four ways; a report on each
    cases: list[Case] = []
    for cost in costs:
        for kind in kinds:
            print(f"{cost}: the one-worker, one-core run, {kind}", flush=True)
            if kind == "profile":
                folder = run(cost, 1, 1, "--profile", "--no-watch")
                record = json.loads((folder / "run.json").read_text())
                evidence = [str(folder / record["paths"]["profiles"][0])]
            elif kind == "trace":
                folder = run(cost, 1, 1, "--profile", "torch", "--no-watch")
                evidence = sorted(str(p) for p in folder.glob("*.pt.trace.json*"))
            elif kind == "probe":
                probe = work / f"probe-{cost}.json"
                steps = max(5, args.steps // 4)  # each of its windows: REPEATS x this
                run(cost, 1, 1, "--no-watch", "--extra=--probe", f"--extra={probe}",
                    "--extra=--probe-steps", f"--extra={steps}")  # fmt: skip
                evidence = ["--probe", str(probe)]
            else:
                folder = run(cost, 1, 1)  # with its sampler: the recording
                evidence = ["--metrics", str(folder / "metrics.jsonl")]
            report = json.loads(ta("report", "--format", "json", *evidence, *job))
            (work / f"report-{cost}-{kind}.json").write_text(json.dumps(report))
            cases.append(_case(kind, cost, report, args.batch_size))

    # interleaved rounds: the baseline and every predicted setting, plain (no profiler, no
    # sampler), the order turned each round
    wanted = {(c.cost, c.setting) for c in cases if c.setting is not None}
    rates: dict[tuple[str, tuple[int, int]], list[float]] = {k: [] for k in wanted}
    ratios: dict[tuple[str, tuple[int, int]], list[float]] = {k: [] for k in wanted}
    baseline: dict[str, list[float]] = {c: [] for c in costs}
    for round_no in range(args.repeats):
        print(f"round {round_no + 1} of {args.repeats} (load {_load()})", flush=True)
        for cost in costs:
            settings = sorted(s for c, s in wanted if c == cost)
            if round_no % 2:
                settings.reverse()
            base = steady_rate(run(cost, 1, 1, "--no-watch") / "run.json", args.warmup)
            if base:
                baseline[cost].append(base)
            for cpus, workers in settings:
                got = steady_rate(run(cost, cpus, workers, "--no-watch") / "run.json", args.warmup)
                if got:
                    rates[(cost, (cpus, workers))].append(got)
                    if base:
                        ratios[(cost, (cpus, workers))].append(got / base)
    judged = [
        replace(
            c,
            measured=statistics.median(rates[(c.cost, c.setting)])
            if rates.get((c.cost, c.setting)) else None,
            measured_speedup=statistics.median(ratios[(c.cost, c.setting)])
            if ratios.get((c.cost, c.setting)) else None,
        )
        if c.setting is not None else c
        for c in cases
    ]  # fmt: skip
    summary = summarize(judged)
    elapsed = time.perf_counter() - t0
    load1 = _load()

    cmd = (
        ".venv/bin/python bench/prediction_bench.py --short"
        if args.short
        else f".venv/bin/python bench/prediction_bench.py --steps {args.steps} --warmup "
        f"{args.warmup} --repeats {args.repeats} --costs {','.join(costs)} --kinds "
        f"{','.join(kinds)}"
    )
    all_inside = [c.inside for c in judged if c.inside is not None]
    kind_rows = [
        f"| {k.kind} | {k.cases} | {k.no_prediction} | {_pct(k.inside)} | "
        f"{_pct(k.inside_speedup)} | {_pct(k.error)} | {_pct(k.speedup_error)} | "
        + (
            "-"
            if k.speedup_error is None
            else ("PASS" if k.speedup_error <= SPEEDUP_GOAL else "MISS")
        )
        + " |"
        for k in summary
    ]
    case_rows = []
    for c in judged:
        if c.setting is None:
            case_rows.append(f"| {c.cost} | {c.kind} | - | {c.why} | | | | |")
            continue
        assert c.rate is not None and c.speedup is not None
        case_rows.append(
            f"| {c.cost} | {c.kind} | cpus {c.setting[0]}, workers {c.setting[1]} | "
            f"{c.speedup[0]:.2f}-{c.speedup[2]:.2f}x (expected {c.speedup[1]:.2f}x); "
            f"{_fmt(c.rate.low)}-{_fmt(c.rate.high)} samples/s (expected "
            f"{_fmt(c.rate.expected)}) | "
            + ("-" if c.measured_speedup is None else f"{c.measured_speedup:.2f}x")
            + f" ({_pct(c.speedup_error)}) | "
            + ("-" if c.measured is None else _fmt(c.measured))
            + f" ({_pct(c.error)}) | "
            + f"{'inside' if c.inside else 'outside'} | "
            + f"{'inside' if c.inside_speedup else 'outside'} |"
        )
    base_line = ", ".join(
        f"{cost} {_fmt(statistics.median(v))} ({', '.join(_fmt(x) for x in v)})"
        for cost, v in baseline.items()
        if v
    )
    lines = [
        BEGIN,
        "## The step-time model's prediction from each kind of evidence (issues 21, 31)",
        "",
        f"Recorded {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `{cmd}` in {elapsed:.0f} s "
        f"(rewrites only this section). Load average {load0} at the start, {load1} at the end, "
        f"on {cores} CPUs shared with other work.",
        "",
        f"**Test stand-in, not a GPU:** every run is `mnist_single` with `--device-time-ms "
        f"{args.device_time_ms}` (a step's device work is a sleep that uses no CPU). No GPU "
        "was lent to this session: `bench/gpu_acceptance.py` (one apply against a sweep on a "
        "real card) did not run.",
        "",
        f"Synthetic MNIST ({args.train} images), batch {args.batch_size}, {args.steps} steps a "
        f"run; a run's throughput is the samples over the seconds of its steps after the first "
        f"{args.warmup} (runrecord/window.py); {args.repeats} interleaved round(s): each round "
        "runs the plain one-worker, one-core baseline and every predicted setting (no profiler, "
        "no sampler). The measured speedup is the median of the rounds' setting / baseline. "
        f"Each report: the measured run's evidence + `slurm/mnist_single.sbatch` + a site file "
        f"of {cores} cores.",
        "",
        f"Baselines (1 core, 1 worker), samples/s: {base_line or '-'}.",
        "",
        "### Per evidence kind (goals: speedup within 25 %; inside the range in 4 of 5 cases)",
        "",
        "| evidence | cases | no prediction | inside the samples/s range | inside the speedup "
        "range | median error, expected samples/s | median error, expected speedup | speedup "
        "+-25 % |",
        "|---|---|---|---|---|---|---|---|",
        *kind_rows,
        "",
        f"All cases: {sum(1 for x in all_inside if x)} of {len(all_inside)} measured rates "
        "inside the predicted samples/s range.",
        "",
        "The same job measured four ways: "
        + "; ".join(f"{cost}: {agreement([c for c in judged if c.cost == cost])}" for cost in costs)
        + ".",
        "",
        "### Each case",
        "",
        "| input cost | evidence | predicted setting | predicted | measured speedup (error) | "
        "measured samples/s (error) | samples/s range | speedup range |",
        "|---|---|---|---|---|---|---|---|",
        *case_rows,
        "",
        "Each report's prediction basis:",
        "",
        *(
            f"- {c.cost}, {c.kind}: "
            + "; ".join(
                json.loads((work / f"report-{c.cost}-{c.kind}.json").read_text())["advice"][
                    "prediction"
                ]["basis"]
            )
            for c in judged
            if c.setting is not None
        ),
        END,
    ]
    section = "\n".join(lines)
    text = args.out.read_text(encoding="utf-8") if args.out.exists() else "# Benchmarks\n"
    args.out.write_text(refresh(with_section(text, section, BEGIN, END)), encoding="utf-8")
    print(section)
    print(f"wrote {args.out} ({elapsed:.0f} s); work in {work}")


if __name__ == "__main__":
    main()
