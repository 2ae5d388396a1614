"""torch.profiler traces (issue 22): agreement with HTA, speed and memory against HTA's parser,
a generated 1 GB trace, and `report` of a trace of a few MB.

    bash bench/hta_venv.sh                                      # HTA in a venv of its own
    bench/.hta-venv/bin/python bench/trace_bench.py             # the recorded run
    bench/.hta-venv/bin/python bench/trace_bench.py --gb 0.05   # a quick check of the harness

Run with an interpreter that has HolisticTraceAnalysis 0.5.0; tuneadvisor's children run with
$TUNEADVISOR_PYTHON (default the checkout's .venv/bin/python: the project's dependencies), the
worktree on PYTHONPATH. Each measurement runs in its own child process, so its peak RSS is its
own:

- A1 agreement: on each real trace with device events (tests/fixtures/realworld/traces), HTA's
  ``get_temporal_breakdown`` (idle, compute, non-compute over the span from the first to the
  last GPU event, the last ProfilerStep left out as HTA's parser does) against the same three
  from what our reader keeps (its columns over the same span). Target: within 2 percentage
  points per category.
- N1 speed and memory: reading one trace, ours (``read_trace_set``) and HTA's default parser
  (``TraceAnalysis(trace_dir=...)``), the same file, one after the other, median of 3 runs
  each: the largest real trace (9 MiB of JSON) and a generated one of 100 MB (the verdict).
  Targets: ours >= 3x faster; our peak RSS growth (VmHWM after reading less VmRSS before it,
  the peak reset through /proc/self/clear_refs) <= a quarter of the uncompressed trace.
- N2 a generated 1 GB trace (real events of the A100 trace repeated, times and correlation ids
  shifted), written to a temporary folder, never to the repository: time and peak RSS.
- N3 `tuneadvisor report` of a trace of a few MB: within the start-up budget of issue 19
  (2.0 s, the 50,000-line report's).

Rewrites the section between the trace-bench markers of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "fixtures" / "realworld" / "traces"
BEGIN, END = "<!-- trace-bench:begin -->", "<!-- trace-bench:end -->"
SPEED_FILE = "a100-nccl-rank0.json.gz"  # 750 kB gz, 20 MB of JSON: the largest real one
GPU_TRACES = ("a100-nccl-rank0.json.gz", "ddp-2rank-sampled/rank-0.json.gz",
              "ddp-2rank-sampled/rank-1.json.gz", "h200-pageable-sync.pt.trace.json.gz",
              "h200-pinned.pt.trace.json.gz", "h200-tiny.pt.trace.json.gz")  # fmt: skip

# --------------------------------------------------------------------------- children

CHILD_OURS = """
import json, sys, time
from tuneadvisor.profile.trace.reader import read_trace_set

def _status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
open("/proc/self/clear_refs", "w").write("5")  # the peak RSS starts again from here
base = _status("VmRSS")
t = time.perf_counter()
ts = read_trace_set([sys.argv[1]])
dt = time.perf_counter() - t
peak = _status("VmHWM")
print(json.dumps({"s": dt, "base_kib": base, "peak_kib": peak,
                  "events": sum(r.events for r in ts.ranks),
                  "steps": sum(len(r.steps) for r in ts.ranks)}))
"""

CHILD_HTA = """
import json, logging, sys, time, warnings
warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis

def _status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
open("/proc/self/clear_refs", "w").write("5")  # the peak RSS starts again from here
base = _status("VmRSS")
t = time.perf_counter()
ta = TraceAnalysis(trace_dir=sys.argv[1])
dt = time.perf_counter() - t
peak = _status("VmHWM")
out = {"s": dt, "base_kib": base, "peak_kib": peak}
if len(sys.argv) > 2:
    df = ta.get_temporal_breakdown(visualize=False)
    out["breakdown"] = {str(r["rank"]): {"idle": r["idle_time_pctg"],
                        "compute": r["compute_time_pctg"],
                        "non_compute": r["non_compute_time_pctg"]}
                        for _, r in df.iterrows()}
print(json.dumps(out))
"""

CHILD_OURS_SPAN = """
import json, sys
from tuneadvisor.profile.trace import classify as c
from tuneadvisor.profile.trace.collect import CODE, Collected
from tuneadvisor.profile.trace.stream import events
col = Collected()
for ev in events(sys.argv[1]):
    col.add(ev)
device = {CODE[k] for k in c.DEVICE_KINDS}
# HTA keeps the device work of every ProfilerStep but the last (its parser drops the last
# iteration, which may be cut short, and work launched outside any step): the kernels,
# copies and sets whose runtime call ran inside one of those steps' host spans
steps = sorted(col.steps, key=lambda s: s[1])
kept_steps = steps[:-1] if len(steps) > 1 else steps
kept = {col.corrs[i] for i in range(len(col.starts))
        if col.kinds[i] == CODE[c.RUNTIME]
        and any(s[1] <= col.starts[i] <= s[2] for s in kept_steps)}
spans = [(col.starts[i], col.ends[i], col.kinds[i]) for i in range(len(col.starts))
         if col.kinds[i] in device and (not steps or col.corrs[i] in kept)]
def union(xs):
    xs = sorted(xs); total = 0.0; cur = None
    for s, e in xs:
        if cur is None or s > cur[1]:
            if cur: total += cur[1] - cur[0]
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    return total + (cur[1] - cur[0] if cur else 0.0)
def shares(spans):
    lo = min(s for s, _, _ in spans); hi = max(e for _, e, _ in spans)
    busy = union([(s, e) for s, e, _ in spans])
    compute = union([(s, e) for s, e, k in spans if k == CODE[c.KERNEL]])
    span = hi - lo
    return {"idle": 100 * (span - busy) / span, "compute": 100 * compute / span,
            "non_compute": 100 * (busy - compute) / span}
# HTA 0.5.0 keeps ts and dur as whole microseconds (truncated): the same, so truncated
cut = [(float(int(s)), float(int(s) + int(e - s)), k) for s, e, k in spans]
print(json.dumps({"exact": shares(spans), "truncated": shares(cut)}))
"""


# tuneadvisor runs with the project's interpreter (its dependencies), HTA with this one
OURS_PY = os.environ.get(
    "TUNEADVISOR_PYTHON", str(Path(__file__).resolve().parents[1] / ".venv" / "bin" / "python")
)


def child(code: str, *args: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    python = sys.executable if code is CHILD_HTA else OURS_PY
    run = subprocess.run([python, "-c", code, *args], capture_output=True, text=True,
                         env=env, timeout=3600)  # fmt: skip
    if run.returncode != 0:
        raise SystemExit(f"child failed: {run.stderr[-2000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- parts


def agreement(tmp: Path) -> list[str]:
    rows = [
        "| trace | category | HTA (%) | ours, µs truncated as HTA (%) | difference (pp) "
        "| ours, exact (%) |",
        "|---|---|---|---|---|---|",
    ]
    worst = worst_exact = 0.0
    for name in GPU_TRACES:
        folder = tmp / ("agree-" + name.replace("/", "-"))
        folder.mkdir()
        shutil.copy(REAL / name, folder / Path(name).name)
        hta = child(CHILD_HTA, str(folder), "breakdown")["breakdown"]
        (theirs,) = hta.values()  # type: ignore[attr-defined]
        ours = child(CHILD_OURS_SPAN, str(REAL / name))
        cut, exact = ours["truncated"], ours["exact"]
        for cat in ("idle", "compute", "non_compute"):
            diff = float(cut[cat]) - float(theirs[cat])  # type: ignore[index]
            worst = max(worst, abs(diff))
            worst_exact = max(worst_exact, abs(float(exact[cat]) - float(theirs[cat])))  # type: ignore[index]
            rows.append(
                f"| {name} | {cat} | {theirs[cat]:.2f} | {cut[cat]:.2f} | {diff:+.2f} "  # type: ignore[index]
                f"| {exact[cat]:.2f} |"  # type: ignore[index]
            )
    verdict = "PASS" if worst <= 2.0 else "MISS"
    return [
        f"A1: largest difference {worst:.2f} pp with HTA's whole microseconds (target <= 2): "
        f"**{verdict}**; {worst_exact:.2f} pp against our exact sums. HTA 0.5.0 truncates each "
        "event's `ts` and `dur` to whole microseconds: on the H200 traces, whose kernels last "
        "0.8-2 µs, that drops up to half of the compute time (a 1.567 µs kernel counts 1, a "
        "0.8 µs one 0); our breakdown keeps the fractions.",
        "",
        *rows,
    ]


def _side_by_side(folder: Path, name: str, runs: int) -> tuple[dict[str, object], ...]:
    pairs = [(child(CHILD_OURS, str(folder / name)), child(CHILD_HTA, str(folder)))
             for _ in range(runs)]  # fmt: skip
    mid = runs // 2
    ours = sorted((p[0] for p in pairs), key=lambda r: float(r["s"]))[mid]  # type: ignore[arg-type]
    hta = sorted((p[1] for p in pairs), key=lambda r: float(r["s"]))[mid]  # type: ignore[arg-type]
    return ours, hta


def _growth(r: dict[str, object]) -> int:
    return (int(r["peak_kib"]) - int(r["base_kib"])) * 1024  # type: ignore[call-overload]


def speed(tmp: Path, mb: float) -> list[str]:
    """The largest real trace, and a generated one of ``mb`` MB (fixed costs left behind)."""
    real = tmp / "speed-real"
    real.mkdir()
    shutil.copy(REAL / SPEED_FILE, real / SPEED_FILE)
    gen = tmp / "speed-generated"
    gen.mkdir()
    gen_size, copies = generate(gen / "generated.pt.trace.json", mb / 1000)
    cases = [
        (f"`{SPEED_FILE}` (real)", real, SPEED_FILE,
         len(gzip.decompress((REAL / SPEED_FILE).read_bytes()))),
        (f"generated, {copies} copies of it", gen, "generated.pt.trace.json", gen_size),
    ]  # fmt: skip
    rows = [
        "| trace | JSON (MiB) | ours (s) | HTA (s) | ours faster | our growth (MiB) | "
        "HTA's growth (MiB) | our growth / JSON |",
        "|---|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for label, folder, name, raw in cases:
        ours, hta = _side_by_side(folder, name, 3)
        ratio = float(hta["s"]) / float(ours["s"])  # type: ignore[arg-type]
        grew = _growth(ours)
        rows.append(
            f"| {label} | {raw / 2**20:.1f} | {ours['s']:.2f} | {hta['s']:.2f} | {ratio:.1f}x "
            f"| {grew / 2**20:.1f} | {_growth(hta) / 2**20:.0f} | {grew / raw:.0%} |"
        )
        verdicts.append((label, ratio, grew / raw))
    label, ratio, share = verdicts[-1]
    return [
        "N1: reading one trace, tuneadvisor `read_trace_set` against HTA 0.5.0's default parser "
        "(`TraceAnalysis(trace_dir=...)`), the same file, median of 3 alternating runs each",
        "",
        *rows,
        "",
        f"On the {label} trace: {ratio:.1f}x HTA (target >= 3x): "
        f"**{'PASS' if ratio >= 3 else 'MISS'}**; growth {share:.0%} of the JSON (target <= 25 %): "
        f"**{'PASS' if share <= 0.25 else 'MISS'}**. On the real 9 MiB file the fixed costs "
        "(gzip and parser buffers, the name tables) weigh more: its row is the small-file case.",
    ]


def generate(path: Path, gigabytes: float) -> tuple[int, int]:
    """A trace of about ``gigabytes`` of JSON: the A100 trace's events repeated, each copy's
    times and correlation ids shifted past the last, its steps renumbered."""
    doc = json.loads(gzip.decompress((REAL / SPEED_FILE).read_bytes()))
    events = [e for e in doc["traceEvents"] if e.get("ph") in ("X", "i")]
    ts = [e["ts"] for e in events if isinstance(e.get("ts"), float | int)]
    span = max(ts) - min(ts) + 1000
    target = int(gigabytes * 1e9)
    written = copies = 0
    with path.open("w") as out:
        head = {k: v for k, v in doc.items() if k != "traceEvents"}
        out.write(json.dumps(head)[:-1] + ', "traceEvents": [')
        first = True
        while written < target:
            shift, corr = copies * span, copies * 1_000_000
            for e in events:
                e2 = dict(e)
                if isinstance(e2.get("ts"), float | int):
                    e2["ts"] = e2["ts"] + shift
                name = e2.get("name", "")
                if isinstance(name, str) and name.startswith("ProfilerStep#"):
                    e2["name"] = f"ProfilerStep#{int(name[13:]) + copies * 10}"
                args = e2.get("args")
                if isinstance(args, dict) and "correlation" in args:
                    e2["args"] = {**args, "correlation": args["correlation"] + corr}
                text = ("" if first else ", ") + json.dumps(e2)
                first = False
                out.write(text)
                written += len(text)
            copies += 1
        out.write("]}")
    return path.stat().st_size, copies


def big(tmp: Path, gigabytes: float) -> list[str]:
    path = tmp / "big.pt.trace.json"
    t = time.perf_counter()
    size, copies = generate(path, gigabytes)
    made = time.perf_counter() - t
    ours = child(CHILD_OURS, str(path))
    grew = (int(ours["peak_kib"]) - int(ours["base_kib"])) * 1024  # type: ignore[call-overload]
    path.unlink()
    return [
        f"N2: a generated trace of {size / 2**30:.2f} GiB ({copies} copies of the A100 trace, "
        f"{ours['events']} events, {ours['steps']} steps; written in {made:.0f} s, not kept)",
        "",
        "| read | time (s) | MB/s | peak RSS while reading (MiB) | growth while reading (MiB) |",
        "|---|---|---|---|---|",
        f"| tuneadvisor `read_trace_set` | {ours['s']:.1f} | {size / 1e6 / float(ours['s']):.0f} "  # type: ignore[arg-type]
        f"| {int(ours['peak_kib']) / 1024:.0f} | {grew / 2**20:.0f} |",  # type: ignore[call-overload]
        "",
        f"Growth while reading: {grew / size:.1%} of the file.",
    ]


def report_startup(tmp: Path) -> list[str]:
    """`report` of the few-MB DDP folder (two ranks), median of 5 after a warm-up."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp / "cache")}
    target = REAL / "ddp-2rank-sampled"
    cmd = [OURS_PY, "-m", "tuneadvisor", "report", str(target)]
    times = []
    for i in range(6):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True, timeout=120)
        if i:
            times.append(time.perf_counter() - t)
    med = sorted(times)[len(times) // 2]
    raw = sum(len(gzip.decompress(p.read_bytes())) for p in target.iterdir())
    ok = "PASS" if med <= 2.0 else "MISS"
    return [f"N3: `report {target.relative_to(ROOT)}` (2 ranks, {raw / 2**20:.1f} MiB of JSON): "
            f"median {med:.2f} s of 5 (budget 2.0 s): **{ok}**"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gb", type=float, default=1.0, help="size of the generated trace")
    parser.add_argument("--speed-mb", type=float, default=100.0,
                        help="size of the generated trace read side by side with HTA")  # fmt: skip
    parser.add_argument("--no-record", action="store_true", help="print, do not write RESULTS")
    args = parser.parse_args()
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="trace-bench-") as tmp_name:
        tmp = Path(tmp_name)
        parts = [agreement(tmp), speed(tmp, args.speed_mb), big(tmp, args.gb),
                 report_startup(tmp)]  # fmt: skip
    load1 = os.getloadavg()[0]
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    cmd = "bench/.hta-venv/bin/python bench/trace_bench.py"
    cmd += f" --gb {args.gb}" if args.gb != 1.0 else ""
    cmd += f" --speed-mb {args.speed_mb:g}" if args.speed_mb != 100.0 else ""
    body = [
        BEGIN,
        "## torch.profiler traces (issue 22)",
        "",
        f"Recorded {now} UTC by `{cmd}` (rewrites only this section). Load average {load0:.2f} "
        f"at the start, {load1:.2f} at the end, on {os.cpu_count()} CPUs.",
        "",
    ]
    for part in parts:
        body += [*part, ""]
    body += [
        "HTA's temporal breakdown is over the span from the first to the last GPU event, with "
        "compute = the union of compute kernels and non-compute = the rest of the GPU's busy "
        "time (communication, copies, memsets), the last ProfilerStep's device work left out "
        "(HTA's parser drops the last iteration: on the sampled DDP ranks it kept 577 of 1,154 "
        "device events); ours is the same three from the reader's columns over the same span. "
        "The step breakdown itself (the plugin's) is over each step's window, host time "
        "included, so its shares have another denominator.",
        END,
    ]
    section = "\n".join(body)
    print(section)
    if args.no_record:
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from results_index import record_section

    record_section(section, BEGIN, END)


if __name__ == "__main__":
    main()
