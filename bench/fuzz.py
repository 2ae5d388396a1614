"""A fuzzing campaign against every parser and the rule loader (issue 13), and end to end
through the command line (issue 23, ``bench/fuzz_e2e.py``), on demand.

Each parser gets mutations of the project's real fixtures (bytes flipped, cut, doubled,
spliced) and structure-aware hostile inserts (nesting thousands deep, numbers of thousands
of digits, NaN, control characters, command substitutions, wrong JSON types). Each parser
runs in its own forked process with its address space bounded, every input under a timer:

- an *escape* is any exception other than the parser's own error types (by signature:
  type and the innermost frame of the package),
- a *hang* is an input that takes longer than --hang-s,
- a *memory peak* is an input that leaves the process's peak RSS above --memory-mib (or
  that runs out of the bounded address space).

    .venv/bin/python bench/fuzz.py --inputs 3000 --e2e-inputs 1000 --seed 23 [--record]

The end-to-end targets (``e2e ...``) write each mutated input to a folder and run `report`
in every format, `apply` and `compare` on it in the campaign's process: an escape there is
a traceback out of ``cli.main``, an exit status other than 0 or 2, or exit 2 with more than
one line on stderr. Their timer is --hang-s per command.

With --record it replaces its own section of bench/RESULTS.md (between the fuzz markers).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import re
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.fuzz_bounds import bound_targets, seeds_of  # noqa: E402
from bench.process_size import address_space, resident_mib  # noqa: E402
from tuneadvisor.advisor.expressions import ExpressionError, compile_expression  # noqa: E402
from tuneadvisor.advisor.facts import FACTS, sample_value  # noqa: E402
from tuneadvisor.advisor.rules import RuleError, parse_rule  # noqa: E402
from tuneadvisor.advisor.site import parse_site  # noqa: E402
from tuneadvisor.errors import InputError  # noqa: E402
from tuneadvisor.files import checked_text, parse_json  # noqa: E402
from tuneadvisor.metrics.nvidia_smi_csv import NvidiaSmiCsvError, parse_nvidia_smi_csv  # noqa: E402
from tuneadvisor.metrics.recording import RecordingError, parse_recording  # noqa: E402
from tuneadvisor.profile.safe_pickle import PickleRejected, load_linestats  # noqa: E402
from tuneadvisor.profile.text_table import TableError, parse_table  # noqa: E402
from tuneadvisor.relaunch.records import read_record  # noqa: E402
from tuneadvisor.relaunch.saved_report import parse_report  # noqa: E402
from tuneadvisor.relaunch.settings import Settings, settings_from_report  # noqa: E402
from tuneadvisor.slurm.accounting.sacct import parse_sacct  # noqa: E402
from tuneadvisor.slurm.accounting.sacct.json_format import parse_sacct_json  # noqa: E402
from tuneadvisor.slurm.accounting.sacct.records import SacctError  # noqa: E402
from tuneadvisor.slurm.accounting.seff import SeffError, parse_seff  # noqa: E402
from tuneadvisor.slurm.client.scontrol import ScontrolError, parse_job  # noqa: E402
from tuneadvisor.slurm.client.sinfo import SinfoError, parse_sinfo  # noqa: E402
from tuneadvisor.slurm.client.squeue import SqueueError, parse_squeue_json  # noqa: E402
from tuneadvisor.slurm.jobscript.model import JobScript  # noqa: E402
from tuneadvisor.trainscript.scan import scan_script  # noqa: E402

sys.path.insert(0, str(REPO / "bench"))
import fuzz_e2e  # noqa: E402

RESULTS = REPO / "bench" / "RESULTS.md"
# What the end-to-end targets found before issue 23's fixes (the harness run on that tree).
BEFORE_ISSUE_23 = (
    "Before issue 23's fixes (the tree at 4caafc7 with this harness), `--inputs 0 "
    "--e2e-inputs 40 --seed 1` found 8 escapes in 320 inputs: ZeroDivisionError (seff "
    "`Nodes: 0`), OverflowError (seff durations, recordings, compare's scaling), ValueError "
    "(sacct --json, compare's plots of a NaN loss); the property test "
    "(tests/unit/test_hostile2_properties.py) found `#SBATCH --nodes=0` (ZeroDivisionError) "
    "and a `--gpus` count of 309 digits (OverflowError) and this campaign a torchrun "
    "`--nproc_per_node` of 75 digits (OverflowError in the plan), each fixed where it arose."
)
BEGIN = "<!-- fuzz:begin -->"
END = "<!-- fuzz:end -->"
FIX = REPO / "tests" / "fixtures"


class Hang(BaseException):
    """Raised by the timer inside a parser that ran too long (not an Exception: no parser
    may catch it)."""


@dataclass(frozen=True)
class Target:
    name: str
    seeds: tuple[str, ...]  # globs under tests/fixtures (or the repo)
    parse: Callable[[bytes], object]
    own: tuple[type[BaseException], ...]  # the parser's own error types: not escapes
    e2e: fuzz_e2e.E2eTarget | None = None  # through the command line, its mutations


def _text(parse: Callable[[str], object]) -> Callable[[bytes], object]:
    """A text parser behind the bounds its inputs pass on the way in (read_text_input)."""
    return lambda data: parse(checked_text(data.decode("utf-8", "replace"), "fuzz", "input"))


def _rule(text: str) -> object:
    """A rule file named after its id (the loader wants them to match)."""
    found = re.search(r'^id = "([a-z0-9-]+)"', text, re.M)
    return parse_rule(Path(f"{found.group(1) if found else 'fuzz'}.toml"), text)


def _record(data: bytes) -> object:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.json"
        path.write_bytes(data)
        return read_record(path)


def _report(data: bytes) -> object:
    doc = parse_json(data.decode("utf-8", "replace"), "report.json", "report")
    if not isinstance(doc, dict):
        raise InputError("report.json", "not a report")
    return settings_from_report(Settings(), parse_report(doc, "report.json"))


_SAMPLES = {name: sample_value(name) for name in FACTS}


def _expression(data: bytes) -> object:
    expr = compile_expression(data.decode("utf-8", "replace"), frozenset(FACTS))
    try:
        return expr.evaluate(_SAMPLES, {})
    except (ArithmeticError, ValueError, TypeError):  # the engine's "no value"
        return None


TARGETS = (
    Target("job script", ("jobscripts/*", "realworld/jobscripts/*"),
           _text(JobScript.parse), (InputError,)),
    Target("seff", ("slurm-22.05/*seff*", "realworld/accounting/*seff*", "slurm-22.05/0[4-9]*"),
           _text(parse_seff), (SeffError,)),
    Target("sacct -P", ("slurm-22.05/1[06]*", "slurm-22.05/08*"), _text(parse_sacct),
           (SacctError,)),
    Target("sacct --json", ("slurm-22.05/*sacct*.json",), _text(parse_sacct_json),
           (SacctError,)),
    Target("squeue --json", ("slurm-22.05/03-squeue.json",), _text(parse_squeue_json),
           (SqueueError,)),
    Target("scontrol show job", ("slurm-22.05/11*",), _text(parse_job), (ScontrolError,)),
    Target("sinfo", ("slurm-22.05/12*",), _text(parse_sinfo), (SinfoError,)),
    Target("watch recording", ("watch/*.jsonl",), _text(parse_recording), (RecordingError,)),
    Target("nvidia-smi CSV", ("nvidia-smi/*.csv",),
           _text(parse_nvidia_smi_csv), (NvidiaSmiCsvError,)),
    Target("line_profiler text", ("lprof/*.txt",),
           _text(lambda t: parse_table(t, "fuzz.txt")), (TableError,)),
    Target(".lprof pickle", ("lprof/*.lprof",), load_linestats, (PickleRejected,)),
    Target("training script", ("training_code/*.py", "scan_scripts/*.py"),
           _text(scan_script), ()),
    Target("rule file", ("../tuneadvisor/rules/*.toml",),
           _text(_rule), (RuleError,)),
    Target("site file", ("../examples/*/site.toml", "advice/*/site.toml"),
           _text(lambda t: parse_site(t, "site.toml")), (InputError,)),
    Target("rule expression", (), _expression, (ExpressionError,)),
    Target("report --format json", ("../tests/golden/*.json",), _report, (InputError,)),
    Target("run record", (), _record, (InputError,)),
    # issue 23, points 1-8: inputs that grow too fast, end to end (bench/fuzz_bounds.py)
    *bound_targets(Target),
)  # fmt: skip


def _e2e_target(e2e: fuzz_e2e.E2eTarget) -> Target:
    run = lambda data: fuzz_e2e.run_commands(e2e, data)  # noqa: E731
    return Target(e2e.name, e2e.seeds, run, (fuzz_e2e.Refused,), e2e)


E2E_TARGETS = tuple(_e2e_target(t) for t in fuzz_e2e.TARGETS)

EXPRESSION_SEEDS = (
    b"profile.loader_share >= 0.1",
    b"max(4, job.cpus_per_task * 2) - (0 if profile.loader_share >= 0.5 else 1)",
    b"round_up(job.mem_mib * 1.2, 1024) > 1",
    b"mem_text(max(1024, job.mem_mib))",
)

# Hostile pieces inserted into inputs: each stood for a class of issue 13.
HOSTILE = (
    b"[" * 3000, b"{" * 3000, b'{"a":' * 2000, b"9" * 5000, b"NaN", b"1e999", b"-Infinity",
    b"\x00", b"\r", b"\xef\xbb\xbf", b"$(touch /tmp/pwned)", b"`id`", b"\n;touch x\n",
    b"a." * 2000 + b"a = 1", b"'%2147483000s' % 1", b"4000000 ** 4000000", b"not " * 3000,
    b'"' + b"x" * 200_000 + b'"', b"#SBATCH --cpus-per-task=" + b"9" * 5000,
    b"\xff\xfe", b"\\", b"'", b'"', b"]" * 100, b"\t" * 100,
)  # fmt: skip

JSON_SWAPS: tuple[object, ...] = (None, 5, -1, 1e308, "x", "$(id)", [], {}, [[[]]], True,
                                  "9" * 50, {"a": [1, {"b": None}]})  # fmt: skip


def _run_record_seed() -> bytes:
    """A run record as `run` writes it (the fixtures hold none)."""
    from tuneadvisor.relaunch.records import Paths, RunRecord

    record = RunRecord(id="20260101-000000-mnist-0000", name="mnist_single", label=None,
                       status="completed", where="local", script="train.py",
                       launcher="python", settings=Settings(cpus_per_task=2), source={},
                       commands=(("python", "train.py"),), versions={"python": "3.11"},
                       started="2026-01-01T00:00:00+00:00", paths=Paths(dir=".", log="output.log"),
                       notes=())  # fmt: skip
    return json.dumps(record.to_json(), default=str).encode()


def _seeds(target: Target) -> list[bytes]:
    if target.e2e is not None:
        return fuzz_e2e.seeds(target.e2e)
    if target.name == "rule expression":
        return list(EXPRESSION_SEEDS)
    if target.name == "run record":
        return [_run_record_seed()]
    generated = seeds_of(target.name)
    if generated is not None:
        return generated
    found: list[bytes] = []
    for pattern in target.seeds:
        base = FIX if not pattern.startswith("..") else FIX / ".." / ".."
        for path in sorted(base.glob(pattern.removeprefix("../"))):
            if path.is_file() and path.stat().st_size < 2_000_000:
                data = path.read_bytes()
                # The recorded command above Slurm's output is not part of it.
                lines = data.split(b"\n")
                found.append(b"\n".join(x for x in lines if not x.startswith(b"$ ")))
    return found or [b""]


def _json_mutation(data: bytes, rng: random.Random) -> bytes | None:
    """A JSON seed with one value somewhere replaced by one of another type."""
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    slots = fuzz_e2e.json_slots(doc, max_depth=12, max_slots=2000)
    if not slots:
        return None
    node, key = rng.choice(slots)
    node[key] = rng.choice(JSON_SWAPS)
    return json.dumps(doc).encode()


def mutations(seeds: list[bytes], rng: random.Random) -> Iterator[bytes]:
    """Endless mutated inputs."""
    while True:
        data = bytearray(rng.choice(seeds))
        kind = rng.randrange(7)
        if kind == 0 and data:  # flip bytes
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif kind == 1:  # cut
            data = data[: rng.randint(0, len(data))]
        elif kind == 2 and data:  # duplicate a slice
            a = rng.randrange(len(data))
            b = min(len(data), a + rng.randint(1, 4096))
            data[a:a] = data[a:b] * rng.randint(1, 50)
        elif kind == 3:  # splice two seeds
            other = rng.choice(seeds)
            data = data[: rng.randint(0, len(data))] + other[rng.randint(0, len(other)) :]
        elif kind == 4:  # structure-aware: one JSON value of another type
            swapped = _json_mutation(bytes(data), rng)
            if swapped is not None:
                data = bytearray(swapped)
        else:  # a hostile piece at a random place (at a line start half the time)
            piece = rng.choice(HOSTILE)
            at = rng.randint(0, len(data))
            if rng.random() < 0.5:
                line = data.rfind(b"\n", 0, at)
                at = line + 1
            data[at:at] = piece
        yield bytes(data)


@dataclass
class Tally:
    inputs: int = 0
    own_errors: int = 0
    accepted: int = 0  # ended well with nothing refused (for an e2e target: exit 0 each)
    escapes: Counter[str] = field(default_factory=Counter)
    hangs: int = 0
    memory_over: int = 0
    slowest_s: float = 0.0
    peak_rss_mib: float = 0.0
    example: dict[str, str] = field(default_factory=dict)  # signature -> input (repr, cut)


def _signature(exc: BaseException) -> str:
    if isinstance(exc, fuzz_e2e.Escape):
        return f"Escape: {exc}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "tuneadvisor" in f.filename]
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    return f"{type(exc).__name__} at {where}"


KEEP = os.environ.get("FUZZ_KEEP")  # a folder: each escape's first input is written there


def _keep(target: Target, name: str, data: bytes) -> None:
    """The whole input of an escape, to reproduce it (FUZZ_KEEP=DIR)."""
    if KEEP:
        slug = re.sub(r"[^A-Za-z0-9.]+", "-", f"{target.name} {name}")[:120]
        (Path(KEEP) / slug).write_bytes(data)


def _on_alarm(signum: int, frame: object) -> None:
    raise Hang


def _campaign(target: Target, count: int, seed: int, hang_s: float, memory_mib: int,
              out: Any) -> None:  # fmt: skip
    """In the child: run ``count`` inputs, send the tally back."""
    # The bound is on what the inputs cost, not on the process this was forked from (a pytest
    # worker that ran other tests first may hold hundreds of MiB, all counted in a forked
    # child's RSS): the address space allowed and the RSS judged both start from here.
    limit = address_space() + ((memory_mib + 1024) << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    base_mib = resident_mib()
    signal.signal(signal.SIGALRM, _on_alarm)
    rng = random.Random(f"{seed}:{target.name}")
    tally = Tally()
    if target.e2e is not None:
        source = fuzz_e2e.mutations(_seeds(target), rng, mutations, fuzz_e2e.fresh(target.e2e))
        hang_s *= len(target.e2e.commands)  # the timer is per command
    else:
        source = mutations(_seeds(target), rng)
    for data in (next(source) for _ in range(count)):
        tally.inputs += 1
        start = time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, hang_s)
        try:
            target.parse(data)
        except Hang:
            tally.hangs += 1
            tally.example.setdefault("hang", repr(data[:200]))
        except MemoryError:
            tally.memory_over += 1
            tally.example.setdefault("MemoryError", repr(data[:200]))
        except (InputError, *target.own):  # InputError: the entry bounds' one line
            tally.own_errors += 1
        except Exception as exc:
            name = _signature(exc)
            tally.escapes[name] += 1
            if name not in tally.example:
                tally.example[name] = repr(data[:200])
                _keep(target, name, data)
        else:
            tally.accepted += 1
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        tally.slowest_s = max(tally.slowest_s, time.monotonic() - start)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - base_mib
        if rss > memory_mib and rss > tally.peak_rss_mib:
            tally.memory_over += 1
            tally.example.setdefault("memory", repr(data[:200]))
        tally.peak_rss_mib = max(tally.peak_rss_mib, rss)
    out.put(tally)


def run_target(target: Target, count: int, seed: int, hang_s: float, memory_mib: int) -> Tally:
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_campaign, args=(target, count, seed, hang_s, memory_mib, queue))
    child.start()
    while True:  # the child dies only on a bug of this script (or a hard kill): say so
        try:
            tally: Tally = queue.get(timeout=5)
            break
        except Exception:  # queue.Empty
            if not child.is_alive():
                raise RuntimeError(f"{target.name}: the campaign's process died") from None
    child.join()
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=2000, help="inputs per parser")
    parser.add_argument("--e2e-inputs", type=int, default=300,
                        help="inputs per end-to-end target (0: none)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--hang-s", type=float, default=5.0)
    parser.add_argument("--memory-mib", type=int, default=500)
    parser.add_argument("--only", help="one parser by name")
    parser.add_argument("--record", action="store_true", help="write bench/RESULTS.md")
    args = parser.parse_args()
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    rows: list[tuple[str, Tally]] = []
    for target in (*TARGETS, *E2E_TARGETS):
        if args.only and target.name != args.only:
            continue
        count = args.e2e_inputs if target.e2e is not None else args.inputs
        if not count:
            continue
        tally = run_target(target, count, args.seed, args.hang_s, args.memory_mib)
        rows.append((target.name, tally))
        escapes = sum(tally.escapes.values())
        print(f"{target.name:22} {tally.inputs:6} inputs  accepted {tally.accepted:6}  "
              f"own errors {tally.own_errors:6}  "
              f"escapes {escapes:4}  hangs {tally.hangs}  memory over {tally.memory_over}  "
              f"slowest {tally.slowest_s:.2f} s  peak {tally.peak_rss_mib:.0f} MiB",
              flush=True)  # fmt: skip
        for name, n in tally.escapes.most_common():
            print(f"    {n:5}  {name}   e.g. {tally.example[name][:120]}")
    took = time.monotonic() - t0
    if args.record:
        _record_results(args, rows, took, load0, os.getloadavg()[0])
    failed = any(t.escapes or t.hangs or t.memory_over for _, t in rows)
    return 1 if failed else 0


def _record_results(
    args: argparse.Namespace, rows: list[tuple[str, Tally]], took: float, load0: float,
    load1: float,
) -> None:  # fmt: skip
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    command = (f".venv/bin/python bench/fuzz.py --inputs {args.inputs} --e2e-inputs "
               f"{args.e2e_inputs} --seed {args.seed} --record")  # fmt: skip
    lines = [
        BEGIN,
        "## Hostile input campaign (issues 13 and 23)",
        "",
        f"Recorded {when} UTC by `{command}` in {took:.0f} s (1-minute load average "
        f"{load0:.2f} at the start, {load1:.2f} at the end, on {os.cpu_count()} CPUs). "
        f"Each target ran in its own process, every input under a {args.hang_s:.0f} s timer "
        "(per command for the end-to-end ones), "
        f"the address space capped at {args.memory_mib} MiB + 1 GiB and peak RSS held to "
        f"{args.memory_mib} MiB. For a parser an "
        "escape is an exception other than its own error types; for an `e2e` target (the "
        "input through `report` in text, markdown and JSON, `apply` or `compare`, in "
        "`cli.main`: bench/fuzz_e2e.py) a traceback, an exit status other than 0 or 2, or "
        "exit 2 with more than one line, and *own errors* counts the inputs refused with one "
        "line and exit 2. The end-to-end inputs mix the byte-level mutations with issue 23's "
        "classes: numbers of 309-999 digits, `1e999`, `Infinity` and `NaN`; Unicode digits; "
        "jobstats' gzip+base64 summary decoded, mutated (nesting up to 20,000 deep, huge "
        "numbers, Unicode-digit keys) and encoded again; control characters; names of up to "
        "5,000 characters; 2,000 prefix words on a launch line; `--nodes=0`.",
        "",
        "| target | inputs | own errors | escapes | hangs | memory over "
        f"{args.memory_mib} MiB | slowest input | peak RSS |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, t in rows:
        lines.append(
            f"| {name} | {t.inputs:,} | {t.own_errors:,} | {sum(t.escapes.values())} | "
            f"{t.hangs} | {t.memory_over} | {t.slowest_s:.2f} s | {t.peak_rss_mib:.0f} MiB |"
        )
    total = sum(t.inputs for _, t in rows)
    escapes = Counter[str]()
    for _, t in rows:
        escapes.update(t.escapes)
    lines += ["", f"{total:,} inputs in all.", "", BEFORE_ISSUE_23]
    if escapes:
        lines.append("Escapes by signature: " + "; ".join(f"{n} x {s}" for s, n in escapes.items()))
    lines.append(END)
    section = "\n".join(lines) + "\n"
    text = RESULTS.read_text()
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + section + text[text.index(END) + len(END) + 1 :]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    sys.path.insert(0, str(REPO / "bench"))
    from results_index import refresh

    RESULTS.write_text(refresh(text))


if __name__ == "__main__":
    raise SystemExit(main())
