"""torch.profiler trace shapes for the hostile-input campaign (issue 34, classes 1, 2, 5-8):
a generator of traces of every size, nesting, per-step count and name the reader must bear,
and a runner that puts each through `report` (text, markdown, JSON) and `compare` in its own
forked process, with the bounds asserted: 10 s, 600 MB, exit 0 or 2, no traceback, one line
on stderr with 2, nothing written outside the output folder.

    .venv/bin/python bench/fuzz_trace_gen.py --short          # the test command's mode
    .venv/bin/python bench/fuzz_trace_gen.py --long [--record]  # bench: bigger, more seeds

``bench/fuzz_e2e.py`` imports ``seed_traces`` for its mutations (the "e2e trace" target);
the tests import ``shapes`` to hold the reader's properties over many shapes.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import os
import random
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.process_size import address_space, resident_mib  # noqa: E402

RESULTS = REPO / "bench" / "RESULTS.md"
BEGIN = "<!-- fuzz-trace:begin -->"
END = "<!-- fuzz-trace:end -->"
TIME_S = 10.0
MEMORY_MB = 600

# What a name may carry from a hostile file: escapes to the terminal, forged report lines,
# markup, a format brace, a regex's worst case, sheer length.
HOSTILE_NAMES = (
    "\x1b]52;c;cHduZWQ=\x07",  # OSC 52: write the clipboard
    "\x1b[2J\x1b[H",  # clear the screen
    "\x1b]0;pwned\x07",  # the window title
    "x\nFindings: none\n",  # a forged report line
    "\r\x9b2Jkernel",
    "[bold red]markup[/]",
    "{0}{name}{",
    "gemm" * 5000 + "x" * 20_000,  # TENSOR_CORE_RE's old backtracking
    "fp16" + "gemm" * 3000,
    "k" * 200_000,
)
CATEGORIES = ("kernel", "cpu_op", "cuda_runtime", "gpu_memcpy", "user_annotation",
              "Kernel", "Operator", "Runtime", "Memcpy", "python_function")  # fmt: skip
ODD_VALUES: tuple[Any, ...] = ([1, 2], {"a": 1}, None, True, 3.5, "", ["x"] * 3)


@dataclass(frozen=True)
class Shape:
    name: str  # what the shape is (the class it tests)
    data: bytes  # the file's bytes
    file: str = "rank0.pt.trace.json"  # the name it is written under


def _event(cat: str, name: str, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    ev: dict[str, Any] = {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1,
                          "ts": ts, "dur": dur}  # fmt: skip
    if args:
        ev["args"] = args
    return ev


def step_trace(steps: int, per_step: int, rng: random.Random, *, names: tuple[str, ...] = (),
               capital: bool = False, span: int = 0) -> list[dict[str, Any]]:  # fmt: skip
    """``steps`` ProfilerSteps of ``per_step`` ops, launches and kernels each (names drawn
    from ``names`` too), and ``span`` ops longer than many steps."""
    events: list[dict[str, Any]] = []
    corr = 0
    cats = ("Operator", "Runtime", "Kernel") if capital else ("cpu_op", "cuda_runtime", "kernel")
    op, run, ker = cats
    step_us = 10.0 * (per_step + 2)
    for s in range(steps):
        t0 = 1000.0 + s * step_us
        mark = op if capital else "user_annotation"  # torch 1.8 wrote the step as an Operator
        events.append(_event(mark, f"ProfilerStep#{s}", t0, step_us - 1))
        for k in range(per_step):
            corr += 1
            name = rng.choice(names) if names and rng.random() < 0.3 else f"aten::op{k % 7}"
            t = t0 + 10.0 * k
            events.append(_event(op, name, t, 4.0))
            events.append(_event(run, "cudaLaunchKernel", t + 1, 2.0, correlation=corr))
            kname = rng.choice(names) if names and rng.random() < 0.3 else f"gemm_{k % 5}"
            events.append(_event(ker, kname, t + 3, rng.uniform(1, 12), correlation=corr))
        if rng.random() < 0.5:
            events.append(_event(run, "cudaStreamSynchronize", t0 + step_us - 3, 1.0))
    for i in range(span):
        events.append(_event(op, f"long_op{i}", 1000.0 + i, steps * step_us))
    return events


def _doc(events: list[dict[str, Any]], **header: Any) -> dict[str, Any]:
    return {"schemaVersion": 1, **header, "traceEvents": events}


def _dump(doc: Any, gz: bool = False) -> bytes:
    data = json.dumps(doc, ensure_ascii=False).encode()
    return gzip.compress(data, mtime=0) if gz else data


def _gz_stream(head: bytes, item: bytes, count: int, tail: bytes) -> bytes:
    """A .gz of ``head + item * count + tail``, written in pieces (never whole in memory)."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=9) as f:
        f.write(head)
        chunk = item * 4096
        for _ in range(count // 4096):
            f.write(chunk)
        f.write(item * (count % 4096))
        f.write(tail)
    return out.getvalue()


def shapes(rng: random.Random, scale: int = 1) -> Iterator[Shape]:
    """Every class of trace shape once, sized by ``scale`` (1: the test's short mode; the
    bench's long mode uses 10 and more seeds). Each draw differs with ``rng``."""
    n = scale
    bomb = min(scale, 3)  # the bombs stay the sizes (50-600 kB of .gz) at any scale
    # sizes and per-step counts
    yield Shape("many small steps", _dump(_doc(step_trace(rng.randint(50, 200) * n, 3, rng))))
    yield Shape("few crowded steps", _dump(_doc(step_trace(2, rng.randint(500, 3000) * n, rng))))
    yield Shape("steps over many steps", _dump(_doc(step_trace(300 * n, 2, rng, span=200 * n))))
    # names: escapes, forged lines, long, backtracking
    yield Shape("hostile names", _dump(_doc(step_trace(5, 40, rng, names=HOSTILE_NAMES))))
    many = tuple(f"kernel_{rng.random()}" for _ in range(3000 * n))
    yield Shape("many distinct names", _dump(_doc(step_trace(4, 800 * n, rng, names=many))))
    # older forms: capital categories, a top-level array
    yield Shape("torch 1.8 capitals", _dump(_doc(step_trace(6, 20, rng, capital=True))))
    yield Shape("top-level array", _dump(step_trace(6, 20, rng)))
    # odd but valid JSON in name, cat, pid, tid, ts
    odd = step_trace(4, 20, rng)
    for ev in rng.sample(odd, k=min(len(odd), 30)):
        ev[rng.choice(("name", "cat", "pid", "tid", "ts", "dur", "args"))] = rng.choice(ODD_VALUES)
    yield Shape("unhashable fields", _dump(_doc(odd)))
    # numbers out of range
    big = step_trace(4, 10, rng)
    big.append({"ph": "i", "name": "[memory]", "ts": 1000, "pid": 1, "tid": 1,
                "args": {"Device Id": 0, "Device Type": 1, "Total Allocated": 1e20}})  # fmt: skip
    yield Shape("memory past the device", _dump(_doc(big, deviceProperties=[
        {"name": "GPU", "computeMajor": 8, "totalGlobalMem": 80e9}])))  # fmt: skip
    yield Shape("no steps, 0.3 µs", _dump(_doc([_event("kernel", "k", 1.0, 0.3)])))
    no_steps = [e for e in step_trace(20, 10, rng) if "ProfilerStep" not in e["name"]]
    yield Shape("no ProfilerStep", _dump(_doc(no_steps)))
    # the bombs: each a small file
    props = b'{"name": "GPU", "computeMajor": 8, "totalGlobalMem": 1},'
    yield Shape("deviceProperties bomb", _gz_stream(
        b'{"deviceProperties": [', props, 200_000 * bomb, b'{}], "traceEvents": []}'),
        "rank0.pt.trace.json.gz")  # fmt: skip
    kernel = b'{"ph": "X", "cat": "kernel", "name": "k", "ts": 1500, "dur": 1, "pid": 0, "tid": 7},'
    step = b'{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "ts": 1000, "dur": 9e9},'
    yield Shape("millions of kernels in one step", _gz_stream(
        b'{"traceEvents": [' + step, kernel, 600_000 * bomb, b"{}]}"),
        "rank0.pt.trace.json.gz")  # fmt: skip
    steps = b'{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#7", "ts": 1, "dur": 1},'
    yield Shape("a million ProfilerSteps", _gz_stream(b'{"traceEvents": [', steps, 300_000 * bomb,
                b"{}]}"), "rank0.pt.trace.json.gz")  # fmt: skip
    yield Shape("a gzip bomb of spaces", _gz_stream(b'{"traceEvents": [', b" " * 1024,
                90_000 * bomb, b"]}"), "rank0.pt.trace.json.gz")  # fmt: skip
    tokens = b"[1,2,3,4,5,6,7,8,9,0],"
    yield Shape("a header of many tokens", _gz_stream(b'{"other": [', tokens, 100_000 * bomb,
                b'[]], "traceEvents": []}'), "rank0.pt.trace.json.gz")  # fmt: skip
    skipped = b'{"ph": "X", "cat": "c%d", "name": "n", "ts": 1, "dur": 1},'
    yield Shape("distinct skipped categories", b'{"traceEvents": [' + b"".join(
        skipped % i for i in range(60_000 * bomb)) + b"{}]}")  # fmt: skip


def seed_traces() -> list[bytes]:
    """Small shapes as seeds of fuzz_e2e's byte-level mutations (plain JSON: a mutated .gz
    only tests gzip)."""
    rng = random.Random(34)
    return [s.data for s in shapes(rng) if not s.file.endswith(".gz") and len(s.data) < 400_000]


# ------------------------------------------------------------------------------ running


@dataclass(frozen=True)
class Outcome:
    shape: str
    status: str  # "ok", "refused" (exit 2, one line) or what escaped
    seconds: float  # the slowest command's wall time
    rss_mb: float
    cpu_s: float = 0.0  # the slowest command's CPU time (user + system): on a shared machine
    # the wall time measures the other tenants too; the bound is held on this
    stray: tuple[str, ...] = ()  # files written outside the output folder


COMMANDS: tuple[tuple[str, ...], ...] = (
    ("report", "{F}", "--format", "text"),
    ("report", "{F}", "--format", "markdown"),
    ("report", "{F}", "--format", "json"),
    ("compare", "{F}", "{F}"),
)


def _say(line: str) -> None:
    """To the real stderr (the command's own is captured)."""
    (sys.__stderr__ or sys.stderr).write(line)


def _child(argv: tuple[str, ...], path: str) -> int:
    """One command on the file; 0 all well, 3 an escape (its account on stderr)."""
    from tuneadvisor.cli import main

    args = [a.replace("{F}", path) for a in argv]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(args)
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:  # the escape is what is measured
            _say(f"{argv[0]}: {type(exc).__name__}: {exc}"[:300] + "\n")
            return 3
    said = err.getvalue().strip().splitlines()
    text = out.getvalue()
    if status not in (0, 2) or (status == 2 and len(said) != 1) or "Traceback" in text:
        _say(f"{argv[0]}: exit {status}, stderr {said[:3]}\n")
        return 3
    if status == 0 and argv[0] == "report" and "\x1b" in text:
        _say(f"{argv[0]}: an escape reached the output\n")
        return 3
    return 0


def run_shape(shape: Shape, time_s: float = TIME_S, memory_mb: int = MEMORY_MB) -> Outcome:
    """The shape through every command, each in a forked child (the package imported before
    the fork): the worst command's wall time and peak RSS."""
    import tuneadvisor.cli  # noqa: F401 - imported once, before the children fork

    worst_s, worst_mb, worst_cpu, verdict = 0.0, 0.0, 0.0, "ok"
    with tempfile.TemporaryDirectory() as folder:
        out_dir = Path(folder) / "out"
        out_dir.mkdir()
        path = out_dir / shape.file
        path.write_bytes(shape.data)
        before = set(os.listdir(folder))
        for argv in COMMANDS:
            started = time.monotonic()
            # judged from the size the child starts with (this process's, at the fork)
            base_mb, space = resident_mib(), address_space()
            pid = os.fork()
            if pid == 0:  # the child: its address space bound (the bound plus the interpreter)
                code = 3
                try:
                    os.chdir(out_dir)
                    limit = space + ((memory_mb + 1024) << 20)
                    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
                    code = _child(argv, str(path))
                finally:
                    os._exit(code)
            _, ended, usage = _wait(pid, time_s * 3)
            worst_s = max(worst_s, time.monotonic() - started)
            worst_mb = max(worst_mb, usage.ru_maxrss / 1024 - base_mb if usage is not None else 0.0)
            if usage is not None:
                worst_cpu = max(worst_cpu, usage.ru_utime + usage.ru_stime)
            if ended is None:
                verdict = f"{argv[0]} hangs: killed after {time_s * 3:.0f} s"
            elif ended == 3:
                verdict = f"{argv[0]} escapes"
            elif ended != 0:
                verdict = f"{argv[0]}: child exit {ended}"
            if verdict != "ok":
                break
        stray = tuple(sorted(set(os.listdir(folder)) - before))
    return Outcome(shape.name, verdict, worst_s, worst_mb, cpu_s=worst_cpu, stray=stray)


def _wait(pid: int, timeout: float) -> tuple[int, int | None, Any]:
    end = time.monotonic() + timeout
    while True:
        got, status, usage = os.wait4(pid, os.WNOHANG)
        if got:
            return got, os.waitstatus_to_exitcode(status), usage
        if time.monotonic() > end:
            os.kill(pid, 9)
            _, _, usage = os.wait4(pid, 0)
            return pid, None, usage
        time.sleep(0.05)


def failures(outcome: Outcome, time_s: float = TIME_S, memory_mb: int = MEMORY_MB) -> list[str]:
    out = []
    if outcome.status != "ok":
        out.append(outcome.status)
    if outcome.cpu_s > time_s:
        out.append(f"{outcome.cpu_s:.1f} s of CPU > {time_s:g} s")
    if outcome.rss_mb > memory_mb:
        out.append(f"{outcome.rss_mb:.0f} MB > {memory_mb} MB")
    if outcome.stray:
        out.append(f"wrote {outcome.stray}")
    return out


def campaign(
    seeds: int, scale: int, say: Callable[[str], None] = print, only: str = ""
) -> list[Outcome]:
    outcomes = []
    for seed in range(seeds):
        for shape in shapes(random.Random(seed), scale):
            if not shape.name.startswith(only):
                continue
            o = run_shape(shape)
            outcomes.append(o)
            bad = failures(o)
            say(f"seed {seed} {shape.name:<34} {o.cpu_s:6.2f} s CPU {o.seconds:6.2f} s wall "
                f"{o.rss_mb:6.0f} MB "
                f"{'FAIL ' + '; '.join(bad) if bad else 'ok'}")  # fmt: skip
    return outcomes


def _record(outcomes: list[Outcome], argv: str) -> None:
    worst_c = max(outcomes, key=lambda o: o.cpu_s)
    worst_t = max(outcomes, key=lambda o: o.seconds)
    worst_m = max(outcomes, key=lambda o: o.rss_mb)
    bad = [o for o in outcomes if failures(o)]
    by_shape: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_shape.setdefault(o.shape, []).append(o)
    rows = [f"| {name} | {max(x.cpu_s for x in os_):.2f} | {max(x.seconds for x in os_):.2f} "
            f"| {max(x.rss_mb for x in os_):.0f} | {sum(1 for x in os_ if failures(x))} |"
            for name, os_ in by_shape.items()]  # fmt: skip
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    section = "\n".join([
        BEGIN,
        "## Trace reader under hostile shapes (issue 34; bench/fuzz_trace_gen.py)",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, `{argv}`: {len(outcomes)} runs "
        f"({len(by_shape)} shapes x {len(outcomes) // max(len(by_shape), 1)} seeds), each "
        f"through `report` (text, markdown, JSON) and `compare` (which reads the file twice), "
        f"every command in its own forked process; {len(bad)} failing the bounds ({TIME_S:g} s "
        f"of CPU a command, {MEMORY_MB} MB, exit 0/2 with one line, no traceback, nothing "
        f"written outside). Shared machine: {os.cpu_count()} cores, load average {load} at "
        "the end, so wall times are several tenants' (the bound is held on CPU time).",
        f"Worst command: {worst_c.cpu_s:.2f} s of CPU ({worst_c.shape}); {worst_t.seconds:.2f} s "
        f"wall ({worst_t.shape}); peak RSS {worst_m.rss_mb:.0f} MB ({worst_m.shape}).",
        "",
        "| shape | worst CPU s | worst wall s | worst MB | failing |",
        "|---|---:|---:|---:|---:|",
        *rows,
        END,
    ])  # fmt: skip
    text = RESULTS.read_text() if RESULTS.exists() else ""
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + section + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    RESULTS.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--short", action="store_true", help="one seed at scale 1 (the tests')")
    mode.add_argument("--long", action="store_true", help="3 seeds at scale 10 (bench)")
    parser.add_argument("--record", action="store_true", help="write bench/RESULTS.md")
    parser.add_argument("--shape", default="", help="only the shapes whose name starts so "
                        "(e.g. 'millions of kernels'); not with --record")  # fmt: skip
    args = parser.parse_args()
    seeds, scale = (3, 10) if args.long else (1, 1)
    outcomes = campaign(seeds, scale, only=args.shape)
    if args.record and not args.shape:
        _record(outcomes, "python bench/fuzz_trace_gen.py " + " ".join(sys.argv[1:]))
    return 1 if any(failures(o) for o in outcomes) else 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    raise SystemExit(main())
