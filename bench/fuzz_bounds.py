"""Inputs whose cost grows far faster than their size (issue 23, points 1-8), for the fuzz
harness and on their own.

Each class has a generator of hostile inputs (``SEEDS``: the issue's examples and their
neighbours, at sizes the unbounded code took minutes or gigabytes on) and an end-to-end
entry (``ENTRIES``: from the bytes of the file through the code that uses what the parser
returns, as ``report``, ``compare`` or ``run --from`` would). ``bench/fuzz.py`` adds them to
its targets (``bound_targets``), so its mutations start from them too.

On its own, each seed runs once in its own forked process with its address space bounded,
and its time and peak RSS are recorded:

    .venv/bin/python bench/fuzz_bounds.py [--record]

With --record it replaces its own section of bench/RESULTS.md (between the fuzz-bounds
markers). A row fails when its input ends in anything but the class's own error or a
result, or passes the time or memory bound given.
"""

from __future__ import annotations

import argparse
import base64
import gc
import gzip
import json
import multiprocessing
import os
import resource
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tuneadvisor.errors import InputError  # noqa: E402
from tuneadvisor.files import checked_text  # noqa: E402

RESULTS = REPO / "bench" / "RESULTS.md"
BEGIN = "<!-- fuzz-bounds:begin -->"
END = "<!-- fuzz-bounds:end -->"
REAL_SACCT = (
    REPO / "tests/fixtures/realworld/accounting/jobstats-sacct-P-gpu-completed-60155093.txt"
)
RECORDING_HEAD = (
    b'{"format":"tuneadvisor-watch","version":1,"started":"2026-01-01T00:00:00+0000",'
    b'"host":"h","interval_s":1,"target":"pid 1","gpu_no_data":null}\n'
)


def _text(data: bytes) -> str:
    return checked_text(data.decode("utf-8", "replace"), "fuzz", "input")


# --------------------------------------------------------------------------- 1. variables


def variable_seeds() -> list[bytes]:
    doubling = "A=xxxxxxxxxxxxxxxx\n" + "A=$A$A\n" * 40
    many_refs = "A=" + "x" * 4000 + "\nB=" + "$A" * 30_000 + "\n"
    chain = "".join(f"V{i}=$V{i - 1}$V{i - 1}\n" for i in range(1, 60))
    exported = "export P=/p\n" + "export P=$P:$P\n" * 40
    return [
        f"#!/bin/bash\n#SBATCH --time=1:00\n{body}srun python $A/train.py ${{V59}} $P\n".encode()
        for body in (doubling, many_refs, "V0=ab\n" + chain, exported)
    ]


def variable_entry(data: bytes) -> object:
    from tuneadvisor.slurm.launch_line.search import find_launches, unfollowed_launch

    text = _text(data)
    return find_launches(text), unfollowed_launch(text)


# --------------------------------------------------------------------------- 2. jobstats


def jobstats_seeds() -> list[bytes]:
    header, row = REAL_SACCT.read_text().splitlines()[:2]
    fields = row.split("|")
    at = header.split("|").index("AdminComment")
    pad = gzip.compress(b" " * (16 << 20), 9)
    bombs = [
        gzip.compress(b'{"nodes": {}, "x": "') + pad * 64 + gzip.compress(b'"}'),  # 1 GiB
        gzip.compress(b"[" * (64 << 20), 9),  # 64 MiB of nesting
        gzip.compress(
            json.dumps({"nodes": {f"n{i}": {"cpus": 4} for i in range(50_000)}}).encode()
        ),
    ]
    seeds = []
    for blob in bombs:
        fields[at] = "JS1:" + base64.b64encode(blob).decode()
        seeds.append(f"{header}\n{'|'.join(fields)}\n".encode())
    return seeds


def jobstats_entry(data: bytes) -> object:
    from tuneadvisor.slurm.accounting.sacct import parse_sacct
    from tuneadvisor.slurm.accounting.sacct.gpu import accounting_gpu

    return [accounting_gpu(job) for job in parse_sacct(_text(data))]


# --------------------------------------------------------------------------- 3. Slurm output

_ENDLESS = b"#endless\n"


def slurm_output_seeds() -> list[bytes]:
    record = (REPO / "tests/fixtures/slurm-22.05/11-scontrol-show-job.txt").read_bytes()
    lines = [x for x in record.split(b"\n") if not x.startswith(b"$ ")]
    return [_ENDLESS + b"\n".join(lines), b"\n".join(lines) * 20_000]


def slurm_output_entry(data: bytes) -> object:
    """scontrol printing ``data`` (once, or without end after the #endless marker), read by
    the client as `report --jobid` reads it."""
    from tuneadvisor.slurm.client import SlurmClient

    with tempfile.TemporaryDirectory() as folder:
        endless = data.startswith(_ENDLESS)  # a MiB per cat: the fake's forks cost little
        (Path(folder) / "scontrol.out").write_bytes(
            data * (1 + (1 << 20) // len(data)) if endless else data
        )
        once = '/bin/cat "$0.out"'
        fake = Path(folder) / "scontrol"
        body = f"while :; do {once}; done" if endless else once
        fake.write_text(f"#!/bin/sh\n{body}\n")
        fake.chmod(0o755)
        return SlurmClient(env={"PATH": folder}, timeout_s=30).show_job("1")


# --------------------------------------------------------------------------- 4. recordings


def recording_seeds() -> list[bytes]:
    wide = b'{"t":0,"gpus":[' + b",".join([b"{}"] * 3_000_000) + b"]}\n"
    procs = b'{"t":0,"procs":[' + b",".join(b'{"pid":%d}' % i for i in range(100_000)) + b"]}\n"
    nodes = (
        b'{"t":0,"gpus":[' + b",".join(b'{"uuid":"n%d:g"}' % i for i in range(100_000)) + b"]}\n"
    )
    return [RECORDING_HEAD + line for line in (wide, procs, nodes)]


def recording_entry(data: bytes) -> object:
    from tuneadvisor.metrics.recording import parse_recording

    return parse_recording(_text(data)).series().facts()


def run_record_seeds() -> list[bytes]:
    steps = [{"event": "step", "step": i, "step_time_s": 0.1, "samples_per_s": 640.0}
             for i in range(100_000)]  # fmt: skip
    record = {"kind": "tuneadvisor-run", "schema": 1, "id": "r", "name": "mnist_single",
              "status": "completed", "settings": {}, "steps": steps,
              "paths": {"profiles": [], "metrics": []}}  # fmt: skip
    return [json.dumps(record).encode()]


def run_record_entry(data: bytes) -> object:
    from tuneadvisor.relaunch.records import read_record

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.json"
        path.write_bytes(data)
        record = read_record(path)
        return record.facts(), record.samples_per_s


# --------------------------------------------------------------------------- 5. wrappers

_WRAPPERS = {
    f"{me}.sh": "#!/bin/bash\n" + f"./{other}.sh\n" * 200 + f"./{me}.sh\n" * 50
    for me, other in (("a", "b"), ("b", "c"), ("c", "a"))
}


def wrapper_seeds() -> list[bytes]:
    return [b"#!/bin/bash\n#SBATCH --time=1:00\n" + b"srun ./a.sh\n" * 200]


def wrapper_entry(data: bytes) -> object:
    from tuneadvisor.slurm.launch_line.search import find_launches, unfollowed_launch

    with tempfile.TemporaryDirectory() as folder:
        for name, body in _WRAPPERS.items():
            (Path(folder) / name).write_text(body)
        job = Path(folder) / "job.sbatch"
        job.write_bytes(data)
        return find_launches(_text(data), job), unfollowed_launch(_text(data), job)


# --------------------------------------------------------------------------- 6. repair


def repair_seeds() -> list[bytes]:
    lines = ["#!/bin/bash", "#SBATCH --time=1:00:00"]
    lines += ["#SBATCH " + " ".join(f"--zq{j:04d}x" for j in range(i, i + 10))
              for i in range(0, 4000, 10)]  # fmt: skip
    values = [f"#SBATCH --time=1:00:0{i % 10}x" for i in range(2000)]
    return [
        "\n".join([*lines, "srun python t.py"]).encode() + b"\n",
        "\n".join(["#!/bin/bash", *values, "srun python t.py"]).encode() + b"\n",
    ]


def repair_entry(data: bytes) -> object:
    from tuneadvisor.slurm.jobscript.model import JobScript
    from tuneadvisor.slurm.jobscript.repair import repair_directives

    notes: list[str] = []
    return repair_directives(JobScript.parse(_text(data)), frozenset({"mem"}), notes), notes


# --------------------------------------------------------------------------- 7. imports


def import_seeds() -> list[bytes]:
    return ["".join(f"import mod{i:05d}\n" for i in range(10_000)).encode()]


def import_entry(data: bytes) -> object:
    from tuneadvisor.trainscript.parsed import parse_script
    from tuneadvisor.trainscript.scan import scan_script
    from tuneadvisor.workspace.loader_module import follow_loader
    from tuneadvisor.workspace.script_modules import read_program

    text = _text(data)
    with tempfile.TemporaryDirectory() as folder:
        for i in range(3):
            (Path(folder) / f"mod{i:05d}.py").write_text(text)
        script = Path(folder) / "train.py"
        script.write_text(text)
        program = read_program(str(script), parse_script(text))
        return follow_loader(str(script), text, scan_script(text), program.elsewhere)


# --------------------------------------------------------------------------- 8. run --from


def report_seeds() -> list[bytes]:
    def report(directives: dict[str, str], script: dict[str, Any]) -> bytes:
        plan = {"script": {k: {"value": v, "because": ["x"]} for k, v in script.items()}}
        plan = {"sbatch": {}, "env": {}, **plan}  # a report the schema takes
        return json.dumps({"tool": {"name": "tuneadvisor", "version": "0", "schema": 1},
                           "profile": None, "findings": [],
                           "job": {"path": "job.sbatch", "directives": directives},
                           "advice": {"plan": plan}}).encode()  # fmt: skip

    return [
        report({"ntasks": "200000", "cpus-per-task": "100000"}, {}),
        report({"ntasks": "1000000"}, {}),
        report({}, {"num_workers": 1_000_000}),
    ]


def report_entry(data: bytes) -> object:
    from tuneadvisor.files import parse_json
    from tuneadvisor.relaunch.local_allocation import emulate
    from tuneadvisor.relaunch.local_processes import check_local_processes
    from tuneadvisor.relaunch.saved_report import parse_report
    from tuneadvisor.relaunch.settings import Settings, settings_from_report

    doc = parse_json(data.decode("utf-8", "replace"), "report.json", "report")
    settings = settings_from_report(Settings(), parse_report(doc, "report.json"))
    check_local_processes(settings, 2, "report.json", tasks_given=False, workers_given=False)
    return emulate(settings, name="fuzz", submit_dir=".", cores=[0, 1])


# --------------------------------------------------------------------------- the classes

Entry = Callable[[bytes], object]


def _own() -> dict[str, tuple[type[BaseException], ...]]:
    from tuneadvisor.metrics.recording import RecordingError
    from tuneadvisor.slurm.accounting.jobstats import JobstatsError
    from tuneadvisor.slurm.accounting.sacct.records import SacctError

    return {"recording": (RecordingError,), "jobstats": (SacctError, JobstatsError)}


# name -> (seeds, entry, the class's own errors besides InputError)
CLASSES: dict[str, tuple[Callable[[], list[bytes]], Entry, str]] = {
    "1 variables that double": (variable_seeds, variable_entry, ""),
    "2 jobstats gzip bomb": (jobstats_seeds, jobstats_entry, "jobstats"),
    "3 endless Slurm output": (slurm_output_seeds, slurm_output_entry, ""),
    "4 rounds of millions": (recording_seeds, recording_entry, "recording"),
    "4 run record steps": (run_record_seeds, run_record_entry, ""),
    "5 wrappers calling wrappers": (wrapper_seeds, wrapper_entry, ""),
    "6 thousands of refused options": (repair_seeds, repair_entry, ""),
    "7 ten thousand imports": (import_seeds, import_entry, ""),
    "8 reports that multiply": (report_seeds, report_entry, ""),
}


def own_errors(name: str) -> tuple[type[BaseException], ...]:
    key = CLASSES[name][2]
    return (InputError, *_own().get(key, ()))


def _as_one_command(entry: Entry) -> Entry:
    """``entry`` followed by what the end of a command does: the training-script parser
    freezes what it built out of the cyclic collector (trainscript/parsed.py gc_paused),
    which a command leaves to its exit; many inputs in one process would pile it up."""

    def run(data: bytes) -> object:
        try:
            return entry(data)
        finally:
            gc.unfreeze()
            gc.collect()

    return run


def bound_targets(make: Callable[..., Any]) -> tuple[Any, ...]:
    """The classes as ``bench/fuzz.py`` targets (``make``: its Target): no seed globs, their
    seeds come from ``seeds_of``."""
    return tuple(make(f"bounds: {name}", (), _as_one_command(entry), own_errors(name))
                 for name, (_, entry, _) in CLASSES.items())  # fmt: skip


def seeds_of(target_name: str) -> list[bytes] | None:
    """A bound target's generated seeds; None for another target."""
    name = target_name.removeprefix("bounds: ")
    return CLASSES[name][0]() if target_name.startswith("bounds: ") and name in CLASSES else None


# --------------------------------------------------------------------------- on its own


def _one(entry: Entry, data: bytes, own: tuple[type[BaseException], ...], limit_mib: int,
         out: Any) -> None:  # fmt: skip
    limit = (limit_mib + 1024) << 20  # the bound plus the interpreter's own
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    start = time.monotonic()
    try:
        entry(data)
        outcome = "result"
    except own as exc:
        outcome = f"{type(exc).__name__}: {str(exc)[:90]}"
    except MemoryError:
        outcome = "ESCAPE MemoryError"
    except Exception as exc:
        frames = traceback.extract_tb(exc.__traceback__)
        outcome = f"ESCAPE {type(exc).__name__} at {Path(frames[-1].filename).name}"
    took = time.monotonic() - start
    out.put((outcome, took, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def measure(name: str, data: bytes, limit_mib: int, hang_s: float) -> tuple[str, float, float]:
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    entry = CLASSES[name][1]
    child = context.Process(target=_one, args=(entry, data, own_errors(name), limit_mib, queue))
    child.start()
    child.join(hang_s)
    if child.is_alive():
        child.kill()
        child.join()
        return "HANG", hang_s, float("nan")
    return queue.get(timeout=5) if not queue.empty() else ("DIED", 0.0, float("nan"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hang-s", type=float, default=60.0)
    parser.add_argument("--memory-mib", type=int, default=500)
    parser.add_argument("--record", action="store_true", help="write bench/RESULTS.md")
    args = parser.parse_args()
    load0, t0 = os.getloadavg()[0], time.monotonic()
    rows = []
    for name, (seeds, _, _) in CLASSES.items():
        for number, data in enumerate(seeds(), start=1):
            outcome, took, rss = measure(name, data, args.memory_mib, args.hang_s)
            bad = outcome.startswith(("ESCAPE", "HANG", "DIED")) or rss > args.memory_mib
            rows.append((name, number, len(data), outcome, took, rss, bad))
            print(f"{name:32} #{number} {len(data):>11,} B  {took:6.2f} s  {rss:6.0f} MiB  "
                  f"{'FAIL ' if bad else ''}{outcome}", flush=True)  # fmt: skip
    if args.record:
        _record(args, rows, time.monotonic() - t0, load0, os.getloadavg()[0])
    return 1 if any(row[-1] for row in rows) else 0


def _record(args: argparse.Namespace, rows: list[tuple[Any, ...]], took: float, load0: float,
            load1: float) -> None:  # fmt: skip
    from bench.results_index import refresh, with_section

    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    lines = [
        BEGIN,
        "## Inputs that grow too fast: bounds of issue 23, points 1-8",
        "",
        f"Recorded {when} UTC by `.venv/bin/python bench/fuzz_bounds.py --record` in {took:.0f} s "
        f"(1-minute load average {load0:.2f} at the start, {load1:.2f} at the end, on "
        f"{os.cpu_count()} CPUs). Each input ran once, end to end from its bytes, in its own "
        f"process (address space {args.memory_mib} MiB + 1 GiB, {args.hang_s:.0f} s to "
        "finish); the outcome is the class's own one-line error or a result. Before the "
        "bounds these inputs took minutes or gigabytes (issue 23).",
        "",
        "| class | input | size | outcome | time | peak RSS |",
        "|---|---|---|---|---|---|",
    ]
    for name, number, size, outcome, secs, rss, bad in rows:
        shown = outcome.replace("|", "/")
        lines.append(f"| {name} | #{number} | {size:,} B | {'**FAIL** ' if bad else ''}{shown} "
                     f"| {secs:.2f} s | {rss:.0f} MiB |")  # fmt: skip
    lines.append(END)
    text = with_section(RESULTS.read_text(), "\n".join(lines), BEGIN, END)
    RESULTS.write_text(refresh(text))


if __name__ == "__main__":
    sys.exit(main())
