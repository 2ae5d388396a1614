"""Issue 31's numbers on this machine: does the step-time model's prediction hold, for each
kind of evidence (a line_profiler profile, a torch.profiler trace, a probe, a watch recording)?

All runs are ``mnist_single`` on synthetic MNIST with the device-time stand-in
(``--device-time-ms``: each step's device work is a sleep that uses no CPU; a test mode,
never a substitute for a GPU run).

Checked as an outsider would, round by round: each round, for each ``--input-cost``, the
one-worker, one-core run is measured again each way (profiled, traced, probed; recorded by
watch only in the first round: it gives no prediction without a GPU), ``tuneadvisor report
--format json`` on each with a site file of this machine's cores, then the plain baseline
(one worker, one core) and each predicted setting, without profiler or sampler, their order
turned each round. Each round's predictions are judged against the same round's runs (cases
= rounds x kinds x costs). A run's throughput is its one figure: the samples over the seconds
of its steady window (runrecord/window.py), not the median of per-step rates. Per evidence
kind: the share of cases inside the predicted samples/s range and speedup range, and the
median error of the expected samples/s and of the expected speedup (over the same round's
baseline). The node's drift: each round's baseline against the evidence runs' own rates.

``--load N`` starts N CPU burners (busy loops) before the first run and stops them at the
end, whatever ends it: the loaded machine, recorded in its own sub-section.

Recorded, never asserted. Replaces only its own sub-section of bench/RESULTS.md.

    .venv/bin/python bench/prediction_bench.py [--steps 40] [--repeats 3]      (~10 minutes)
    .venv/bin/python bench/prediction_bench.py --load 1                         (loaded)
    .venv/bin/python bench/prediction_bench.py --short [--load 1]               (a smoke run)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
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
# the loaded machine's sub-section, placed after the idle one's
LOAD_BEGIN = "<!-- prediction-bench-load:begin -->"
LOAD_END = "<!-- prediction-bench-load:end -->"
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
    measured: float | None = None  # the setting's window samples/s in the case's round
    measured_speedup: float | None = None  # the setting / the baseline, the same round
    round_no: int = 0
    evidence_rate: float | None = None  # the measured run's own samples/s (its run record)

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


BASE = (1, 1)  # the baseline and the measured runs: (cpus, workers)


def run_order(settings: Sequence[tuple[int, int]], round_no: int) -> list[tuple[int, int]]:
    """The baseline and each predicted setting once (the baseline's own setting predicted
    too is run once), the order turned in every other round: load that comes and goes falls
    on all alike."""
    order = [BASE, *sorted(set(settings) - {BASE})]
    return order[::-1] if round_no % 2 else order


def judge(
    cases: Sequence[Case], rates: Mapping[tuple[int, str, tuple[int, int]], float]
) -> list[Case]:
    """Each case against its own round's runs: the setting's rate, and its speedup over the
    same round's baseline (``rates`` by round, cost and setting; the baseline at BASE)."""
    out = []
    for c in cases:
        if c.setting is None:
            out.append(c)
            continue
        got = rates.get((c.round_no, c.cost, c.setting))
        base = rates.get((c.round_no, c.cost, BASE))
        speedup = got / base if got is not None and base else None
        out.append(replace(c, measured=got, measured_speedup=speedup))
    return out


@dataclass(frozen=True)
class Drift:
    """How far the node's speed moved: the rounds' baselines, and each against the measured
    runs of its round (their own rates, instrumented: a profiler costs some of it)."""

    cost: str
    baselines: tuple[float, ...]  # by round
    swing: float | None  # (max - min) / median of the baselines
    against_evidence: tuple[float, ...]  # each round's baseline / its measured runs' median


def drift(
    cost: str, baselines: Mapping[int, float], evidence: Mapping[int, Sequence[float]]
) -> Drift:
    rounds = sorted(baselines)
    values = tuple(baselines[r] for r in rounds)
    swing = (max(values) - min(values)) / statistics.median(values) if values else None
    against = tuple(
        baselines[r] / statistics.median(evidence[r]) for r in rounds if evidence.get(r)
    )
    return Drift(cost, values, swing, against)


@contextmanager
def burners(n: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``n`` CPU burners (busy loops, each leaving when its parent is gone) for the block;
    stopped however it ends (an exception, Ctrl-C, SIGTERM: raised as SystemExit here)."""
    loop = "import os\np = os.getppid()\nwhile os.getppid() == p:\n    pass\n"
    procs: list[subprocess.Popen[bytes]] = []
    old = signal.getsignal(signal.SIGTERM)

    def _term(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    if n > 0:
        signal.signal(signal.SIGTERM, _term)
    try:
        for _ in range(n):
            procs.append(subprocess.Popen([sys.executable, "-c", loop], stdin=subprocess.DEVNULL))
        yield procs
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()
        if n > 0:
            signal.signal(signal.SIGTERM, old)


def place_section(text: str, section: str, begin: str, end: str, after: str) -> str:
    """``text`` with the part from ``begin`` to ``end`` replaced by ``section``; where it is
    not there yet, put right after the ``after`` marker (else at the end)."""
    if begin in text or after not in text:
        return with_section(text, section, begin, end)
    head, rest = text.split(after, 1)
    return head + after + "\n\n" + section + rest


def others_of(record: Mapping[str, Any]) -> float | None:
    """Other processes' load the run record measured on the CPUs the run could use."""
    others = (record.get("resources") or {}).get("cpu_others") or {}
    value = others.get("others_cores")
    return float(value) if isinstance(value, int | float) else None


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


def _case(kind: str, cost: str, report: Mapping[str, Any], batch: int, round_no: int = 0) -> Case:
    advice = report["advice"]
    pred = advice.get("prediction")
    seen = advice.get("facts", {}).get("run.samples_per_s")
    evidence = float(seen) if isinstance(seen, int | float) else None
    if not pred:
        why = advice.get("no_prediction") or "(nothing said)"
        return Case(kind, cost, None, why, None, None, round_no=round_no, evidence_rate=evidence)
    setting = (int(pred["setting"]["cpus_per_task"]), int(pred["setting"]["num_workers"]))
    sp = pred["speedup"]
    return Case(
        kind, cost, setting, None, predicted_rate(pred, batch),
        (sp["low"], sp["expected"], sp["high"]), round_no=round_no, evidence_rate=evidence,
    )  # fmt: skip


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f} %"


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (5 min {five:.2f})"


@dataclass
class _Bench:
    """What the rounds measured: every case, every plain run's rate and other load."""

    cases: list[Case]
    rates: dict[tuple[int, str, tuple[int, int]], float]
    others: dict[tuple[int, str, tuple[int, int]], float]  # the plain runs' records
    evidence_rates: dict[tuple[str, int], list[float]]  # (cost, round): the measured runs'
    work: Path


def _rounds(args: argparse.Namespace, costs: Sequence[str], kinds: Sequence[str]) -> _Bench:
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
        return Path(last_run(runs)["paths"]["dir"])

    def measured(kind: str, cost: str, round_no: int) -> tuple[list[str], Path]:
        """The one-worker, one-core run measured as ``kind``: the report's evidence (each
        with its run record beside it) and the run's folder."""
        if kind == "profile":
            folder = run(cost, *BASE, "--profile", "--no-watch")
            record = json.loads((folder / "run.json").read_text())
            return [str(folder / record["paths"]["profiles"][0])], folder
        if kind == "trace":
            folder = run(cost, *BASE, "--profile", "torch", "--no-watch")
            return sorted(str(p) for p in folder.glob("*.pt.trace.json*")), folder
        if kind == "probe":
            probe = work / f"probe-{cost}-{round_no}.json"
            steps = max(5, args.steps // 4)  # each of its windows: REPEATS x this
            folder = run(cost, *BASE, "--no-watch", "--extra=--probe", f"--extra={probe}",
                         "--extra=--probe-steps", f"--extra={steps}")  # fmt: skip
            beside = folder / probe.name  # beside its run record, as the others are
            shutil.copy(probe, beside)
            return ["--probe", str(beside)], folder
        folder = run(cost, *BASE)  # with its sampler: the recording
        return ["--metrics", str(folder / "metrics.jsonl")], folder

    bench = _Bench([], {}, {}, {}, work)
    for round_no in range(args.repeats):
        print(f"round {round_no + 1} of {args.repeats} (load {_load()})", flush=True)
        for cost in costs:
            mine: list[Case] = []
            for kind in kinds:
                if kind == "recording" and round_no > 0:
                    continue  # it gives no prediction without a GPU: measured once
                print(f"  {cost}: the one-worker, one-core run, {kind}", flush=True)
                evidence, folder = measured(kind, cost, round_no)
                report = json.loads(ta("report", "--format", "json", *evidence, *job))
                (work / f"report-{cost}-{kind}-{round_no}.json").write_text(json.dumps(report))
                own = steady_rate(folder / "run.json", args.warmup)
                if own:
                    bench.evidence_rates.setdefault((cost, round_no), []).append(own)
                mine.append(_case(kind, cost, report, args.batch_size, round_no))
            wanted = [c.setting for c in mine if c.setting is not None]
            for cpus, workers in run_order(wanted, round_no):
                folder = run(cost, cpus, workers, "--no-watch")
                key = (round_no, cost, (cpus, workers))
                got = steady_rate(folder / "run.json", args.warmup)
                if got:
                    bench.rates[key] = got
                others = others_of(json.loads((folder / "run.json").read_text()))
                if others is not None:
                    bench.others[key] = others
            bench.cases += mine
    return bench


def _case_row(c: Case) -> str:
    head = f"| {c.round_no + 1} | {c.cost} | {c.kind} |"
    if c.setting is None:
        return f"{head} - | {c.why} | | | | |"
    assert c.rate is not None and c.speedup is not None
    return (
        f"{head} cpus {c.setting[0]}, workers {c.setting[1]} | "
        f"{c.speedup[0]:.2f}-{c.speedup[2]:.2f}x (expected {c.speedup[1]:.2f}x); "
        f"{_fmt(c.rate.low)}-{_fmt(c.rate.high)} samples/s (expected {_fmt(c.rate.expected)}) | "
        + ("-" if c.measured_speedup is None else f"{c.measured_speedup:.2f}x")
        + f" ({_pct(c.speedup_error)}) | "
        + ("-" if c.measured is None else _fmt(c.measured))
        + f" ({_pct(c.error)}) | "
        + {None: "-", True: "inside", False: "outside"}[c.inside]
        + " | "
        + {None: "-", True: "inside", False: "outside"}[c.inside_speedup]
        + " |"
    )


def _drift_rows(bench: _Bench, costs: Sequence[str]) -> list[str]:
    rows = []
    for cost in costs:
        base = {r: v for (r, c, s), v in bench.rates.items() if c == cost and s == BASE}
        ev = {r: v for (c, r), v in bench.evidence_rates.items() if c == cost}
        d = drift(cost, base, ev)
        own = ", ".join(
            f"{_fmt(min(ev[r]))}-{_fmt(max(ev[r]))}" if len(ev[r]) > 1 else _fmt(ev[r][0])
            for r in sorted(ev)
        )
        swing = "-" if d.swing is None else f"{100 * d.swing:.0f} %"
        against = ", ".join(f"{x:.2f}" for x in d.against_evidence)
        rows.append(
            f"| {cost} | {', '.join(_fmt(x) for x in d.baselines) or '-'} | {swing} | "
            f"{own or '-'} | {against or '-'} |"
        )
    return rows


def _others_line(bench: _Bench) -> str:
    rounds = sorted({r for r, _, _ in bench.others})
    if not rounds:
        return "Other load on the runs' CPUs: not read (no run record had it)."
    said = []
    for r in rounds:
        values = [v for (rr, _, _), v in bench.others.items() if rr == r]
        said.append(f"round {r + 1} {statistics.mean(values):.2f} (max {max(values):.2f})")
    return (
        "Other processes' load on the CPUs the plain runs could use, cores' worth (their run "
        f"records' `resources.cpu_others.others_cores`, mean of the round's runs): "
        f"{'; '.join(said)}."
    )


def _section(
    args: argparse.Namespace, costs: Sequence[str], kinds: Sequence[str], bench: _Bench,
    elapsed: float, load0: str, load1: str,
) -> str:  # fmt: skip
    judged = judge(bench.cases, bench.rates)
    summary = summarize(judged)
    cores = os.cpu_count() or 2
    load = f" --load {args.load}" if args.load else ""
    cmd = (
        f".venv/bin/python bench/prediction_bench.py --short{load}"
        if args.short
        else f".venv/bin/python bench/prediction_bench.py --steps {args.steps} --warmup "
        f"{args.warmup} --repeats {args.repeats} --costs {','.join(costs)} --kinds "
        f"{','.join(kinds)}{load}"
    )
    all_inside = [c.inside for c in judged if c.inside is not None]
    kind_rows = [
        f"| {k.kind} | {k.cases} | {k.no_prediction} | {_pct(k.inside)} | "
        f"{_pct(k.inside_speedup)} | {_pct(k.error)} | {_pct(k.speedup_error)} | "
        + ("-" if k.speedup_error is None else verdict(k.speedup_error <= SPEEDUP_GOAL))
        + " |"
        for k in summary
    ]
    agreements = [
        f"{cost}, round {r + 1}: "
        + agreement([c for c in judged if c.cost == cost and c.round_no == r])
        for cost in costs
        for r in range(args.repeats)
    ]
    first = [c for c in judged if c.setting is not None and c.round_no == 0]
    begin, end = (LOAD_BEGIN, LOAD_END) if args.load else (BEGIN, END)
    title = (
        f"### On a loaded machine: {args.load} CPU burner(s) (`--load {args.load}`) beside "
        "every run"
        if args.load
        else "### On an idle machine (no `--load`)"
    )
    heading = (
        []
        if args.load
        else ["## The step-time model's prediction from each kind of evidence (issues 21, 31)", ""]
    )
    return "\n".join([
        begin,
        *heading,
        title,
        "",
        f"Recorded {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `{cmd}` in {elapsed:.0f} s "
        f"(rewrites only this sub-section). Load average {load0} at the start, {load1} at the "
        f"end, on {cores} CPUs shared with other work"
        + (f", {args.load} of it the bench's own burners." if args.load else "."),
        "",
        f"**Test stand-in, not a GPU:** every run is `mnist_single` with `--device-time-ms "
        f"{args.device_time_ms}` (a step's device work is a sleep that uses no CPU).",
        "",
        f"Synthetic MNIST ({args.train} images), batch {args.batch_size}, {args.steps} steps a "
        f"run; a run's throughput is the samples over the seconds of its steps after the first "
        f"{args.warmup} (runrecord/window.py). {args.repeats} round(s); each round measures the "
        "one-worker, one-core run again each way (the recording in the first round only), "
        "makes a report of each (+ `slurm/mnist_single.sbatch` + a site file of "
        f"{cores} cores), then runs the plain baseline (1 core, 1 worker) and each predicted "
        "setting (no profiler, no sampler; the order turned each round). Each round's "
        "prediction is judged by that round's runs: the measured speedup is the setting over "
        "the same round's baseline.",
        "",
        "#### Per evidence kind (goals: speedup within 25 %; inside the range in 4 of 5 cases)",
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
        "The same job measured several ways: " + "; ".join(agreements) + ".",
        "",
        "#### The node's drift",
        "",
        "| input cost | baselines by round, samples/s | swing (max - min) / median | the "
        "measured runs' own rates by round (instrumented) | baseline / the measured runs' "
        "median, by round |",
        "|---|---|---|---|---|",
        *_drift_rows(bench, costs),
        "",
        _others_line(bench),
        "",
        "#### Each case",
        "",
        "| round | input cost | evidence | predicted setting | predicted | measured speedup "
        "(error) | measured samples/s (error) | samples/s range | speedup range |",
        "|---|---|---|---|---|---|---|---|---|",
        *(_case_row(c) for c in judged),
        "",
        "Each report's prediction basis, round 1:",
        "",
        *(
            f"- {c.cost}, {c.kind}: "
            + "; ".join(
                json.loads(
                    (bench.work / f"report-{c.cost}-{c.kind}-0.json").read_text()
                )["advice"]["prediction"]["basis"]
            )
            for c in first
        ),
        end,
    ])  # fmt: skip


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
    parser.add_argument("--load", type=int, default=0, help="CPU burners beside every run")
    parser.add_argument("--short", action="store_true", help="a smoke run: medium, 1 round")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.load < 0:
        parser.error("--load: a count of CPU burners, 0 or more")
    if args.short:
        args.costs, args.repeats, args.steps, args.warmup = "medium", 1, 20, 5
    costs = [c.strip() for c in args.costs.split(",") if c.strip()]
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip() in KINDS]
    t0 = time.perf_counter()
    with burners(args.load):
        load0 = _load()
        bench = _rounds(args, costs, kinds)
        load1 = _load()
    elapsed = time.perf_counter() - t0
    section = _section(args, costs, kinds, bench, elapsed, load0, load1)
    text = args.out.read_text(encoding="utf-8") if args.out.exists() else "# Benchmarks\n"
    if args.load:
        text = place_section(text, section, LOAD_BEGIN, LOAD_END, after=END)
    else:
        text = with_section(text, section, BEGIN, END)
    args.out.write_text(refresh(text), encoding="utf-8")
    print(section)
    print(f"wrote {args.out} ({elapsed:.0f} s); work in {bench.work}")


if __name__ == "__main__":
    main()
