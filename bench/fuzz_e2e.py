"""The end-to-end half of the hostile-input campaign (issue 23): each mutated input goes
through the real command line, from the file through its facts, the advice, the plan and
every renderer (`report` in text, markdown and JSON, `apply` of a job script, `compare`'s
tables and terminal plots), not through its parser alone.

An input *escapes* when a command raises (``cli.main`` turns an ``InputError`` into one line
and exit status 2, anything else is a traceback), returns another status than 0 or 2, or
says more than one line on stderr with status 2. `bench/fuzz.py --e2e` runs these targets
under the same timer and memory bound as the parsers.

The mutations add to the byte-level ones the classes issue 23 found: numbers of 309-999
digits and beyond float range (``1e999``, ``Infinity``, ``NaN``), Unicode digits (``²``,
``٣``), blobs inside fields (jobstats' gzip+base64 summary in AdminComment: decoded, its
JSON mutated or nested thousands deep, encoded again), control characters, names longer
than the system allows, launch lines of 2,000 prefix words and ``--nodes=0``.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import json
import random
import re
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures"

# The job script beside an input that is not one: a plan needs a script to change.
JOB = """#!/bin/bash
#SBATCH --job-name=train
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=2
#SBATCH --gres=gpu:1
#SBATCH --mem=8G
#SBATCH --time=01:00:00
srun python train.py --epochs 2
"""
TRAIN = """import torch
from torch.utils.data import DataLoader
loader = DataLoader(range(10), batch_size=4, num_workers=0)
for x in loader:
    torch.cuda.synchronize()
"""


# What no input may print raw: ESC, CSI, BEL and the other C0/C1 controls (not \t \n \r)
_RAW_ESCAPE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


class Escape(Exception):
    """A command that ended another way than exit 0 or one line and exit 2."""


class Refused(Exception):
    """Every command ended well, one or more with one line and exit 2 (the input refused)."""


@dataclass(frozen=True)
class E2eTarget:
    name: str
    seeds: tuple[str, ...]  # globs under tests/fixtures
    file: str  # the name the input is written under
    commands: tuple[tuple[str, ...], ...]  # argv, {F} the input, {D} the folder


FORMATS = ("text", "markdown", "json")


def _reports(*args: str) -> tuple[tuple[str, ...], ...]:
    return tuple(("report", *args, "--format", fmt) for fmt in FORMATS)


TARGETS = (
    E2eTarget("e2e seff", ("slurm-22.05/*seff*", "realworld/accounting/*seff*"), "seff.txt",
              (*_reports("--job", "{D}/job.sbatch", "--seff", "{F}"),
               ("apply", "--job", "{D}/job.sbatch", "--seff", "{F}", "-o", "{D}/out.sbatch"))),
    E2eTarget("e2e sacct -P + jobstats",
              ("realworld/accounting/jobstats-sacct-P-*", "slurm-22.05/17*"), "sacct.txt",
              (*_reports("--job", "{D}/job.sbatch", "--sacct", "{F}"),
               ("apply", "--job", "{D}/job.sbatch", "--sacct", "{F}", "-o", "{D}/out.sbatch"))),
    E2eTarget("e2e sacct --json", ("slurm-22.05/05-sacct.json",), "sacct.json",
              (*_reports("--job", "{D}/job.sbatch", "--sacct", "{F}"),
               ("apply", "--job", "{D}/job.sbatch", "--sacct", "{F}", "-o", "{D}/out.sbatch"))),
    E2eTarget("e2e job script", ("jobscripts/*.sh", "realworld/jobscripts/*"), "job.sbatch",
              (*_reports("--job", "{F}"), ("apply", "--job", "{F}", "-o", "{D}/out.sbatch"))),
    E2eTarget("e2e recording", ("watch/*.jsonl",), "m.jsonl",
              (*_reports("--job", "{D}/job.sbatch", "--metrics", "{F}"),)),
    E2eTarget("e2e nvidia-smi CSV", ("nvidia-smi/*.csv",), "m.csv",
              (*_reports("--job", "{D}/job.sbatch", "--metrics", "{F}"),)),
    E2eTarget("e2e training script", ("training_code/*.py",), "train.py",
              (*_reports("--job", "{D}/job.sbatch", "--script", "{F}"),
               ("apply", "--job", "{D}/job.sbatch", "--script", "{F}", "-o", "{D}/out.sbatch"))),
    E2eTarget("e2e line_profiler text", ("lprof/*.txt",), "profile.txt",
              (*_reports("--job", "{D}/job.sbatch", "{F}"),)),
    # issue 34: torch.profiler trace shapes (bench/fuzz_trace_gen.py), mutated
    E2eTarget("e2e torch.profiler trace", (), "rank0.pt.trace.json",
              (*_reports("--job", "{D}/job.sbatch", "{F}"),
               ("compare", "{F}", "{F}", "--format", "text"))),
    E2eTarget("e2e run record", (), "run/run.json",
              (("compare", "{D}/run", "{D}/base", "--format", "text"),
               ("compare", "{D}/run", "{D}/base", "--format", "json"))),
)  # fmt: skip


# ------------------------------------------------------------------------------ seeds


def run_record(rate: float = 100.0, ranks: int = 1, name: str = "r") -> dict[str, Any]:
    """A finished mnist_ddp run as `run` writes it (the fixtures hold none)."""
    steps = [{"event": "step", "epoch": 1, "step": 2 * (i + 1), "step_time_s": t,
              "samples_per_s": rate, "loss": 2.0 / (i + 1)}
             for i, t in enumerate((0.30, 0.32, 0.31, 0.35))]  # fmt: skip
    return {
        "kind": "tuneadvisor-run", "schema": 1, "id": name, "name": "mnist_ddp",
        "label": name, "status": "completed", "launcher": "srun",
        "settings": {"ntasks": ranks, "nodes": 1, "cpus_per_task": 1, "gpus": 0},
        "start": {"world_size": ranks, "train_samples": 768, "batch_size": 32},
        "summary": {"samples_per_s_median": rate, "final_accuracy": 0.8},
        "steps": steps,
        "epochs": [{"epoch": 1, "accuracy": 0.5, "train_loss": 1.0},
                   {"epoch": 2, "accuracy": 0.8, "train_loss": 0.5}],
        "paths": {"profiles": [], "metrics": []},
    }  # fmt: skip


def seeds(target: E2eTarget) -> list[bytes]:
    made = fuzz_inputs_gen.seeds(target)  # issue 34's generated inputs
    if made is not None:
        return list(made)
    if target.name == "e2e run record":
        return [json.dumps(run_record()).encode()]
    if target.name == "e2e torch.profiler trace":
        try:  # bench/ on the path (bench/fuzz.py), or the repository (tests)
            from fuzz_trace_gen import seed_traces  # type: ignore[import-not-found]
        except ImportError:
            from bench.fuzz_trace_gen import seed_traces

        return list(seed_traces())
    found = []
    for pattern in target.seeds:
        for path in sorted(FIX.glob(pattern)):
            if path.is_file() and path.stat().st_size < 2_000_000:
                lines = path.read_bytes().split(b"\n")
                # the recorded commands above Slurm's output are not part of it
                found.append(b"\n".join(x for x in lines if not x.startswith(b"$ ")))
    return found or [b""]


# -------------------------------------------------------------------------- mutations

_DIGITS = re.compile(rb"[0-9]+(?:\.[0-9]+)?")
_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_./-]{2,}")
_BLOB = re.compile(rb"JS1:([A-Za-z0-9+/=]{16,})")
_NODES = re.compile(rb"(--nodes[= ]|-N ?|Nodes: *|NNodes\|?|\"nodes\": ?)([0-9]+)")
UNICODE_DIGITS = ("²", "³", "٣", "０", "۵", "१", "߁", "¹")
FLOAT_RANGE = ("1e999", "-1e400", "inf", "-inf", "nan", "Infinity", "NaN", "1e308", "1e30")
CONTROLS = (b"\x1b]0;pwned\x07", b"\x1b[2J", b"\xc2\x9b2J", b"\r", b"\x00", b"\x08" * 20,
            b"\x1b[8m", b"\x7f")  # fmt: skip


def _big_number(rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        return rng.choice(FLOAT_RANGE).encode()
    digits = "9" * rng.randint(309, 999)
    return (digits + (".5" if rng.random() < 0.2 else "")).encode()


def _number(data: bytes, rng: random.Random) -> bytes:
    found = list(_DIGITS.finditer(data))
    if not found:
        return data
    match = rng.choice(found)
    return data[: match.start()] + _big_number(rng) + data[match.end() :]


def _unicode_digit(data: bytes, rng: random.Random) -> bytes:
    found = [m.start() for m in re.finditer(rb"[0-9]", data)]
    if not found:
        return data
    at = rng.choice(found)
    return data[:at] + rng.choice(UNICODE_DIGITS).encode() + data[at + 1 :]


def _control(data: bytes, rng: random.Random) -> bytes:
    at = rng.randint(0, len(data))
    return data[:at] + rng.choice(CONTROLS) + data[at:]


def _long_name(data: bytes, rng: random.Random) -> bytes:
    found = list(_WORD.finditer(data))
    if not found:
        return data
    match = rng.choice(found)
    name = b"n" * rng.choice((256, 300, 4097, 5000))
    if rng.random() < 0.5:
        name += b".py"
    return data[: match.start()] + name + data[match.end() :]


def _prefix_words(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    spots = [i for i, line in enumerate(lines) if b"python" in line or b"srun" in line]
    at = rng.choice(spots) if spots else rng.randrange(len(lines))
    word = rng.choice((b"env ", b"srun ", b"time ", b"nohup ", b"A=1 ", b"env A=1 "))
    lines[at] = word * rng.choice((200, 2000)) + lines[at]
    return b"\n".join(lines)


def _nodes_zero(data: bytes, rng: random.Random) -> bytes:
    found = list(_NODES.finditer(data))
    if not found:
        extra = rng.choice(
            (
                b"#SBATCH --nodes=0\n",
                b"#SBATCH --ntasks-per-node=0\n",
                b"#SBATCH --cpus-per-task=0\n",
                b"#SBATCH --gpus-per-task=0\n",
            )
        )
        head = data.find(b"\n") + 1
        return data[:head] + extra + data[head:]
    match = rng.choice(found)
    return data[: match.start(2)] + b"0" + data[match.end(2) :]


_DEEP = "\x00deep\x00"  # where _dumps puts nesting too deep for json.dumps to write


def _dumps(doc: Any, rng: random.Random) -> str:
    """The document as JSON, each deep mark nested 100 to 20,000 deep (as text)."""
    depth = rng.choice((100, 1000, 5000, 20000))
    opening, closing = ("[" * depth, "]" * depth) if rng.random() < 0.5 else (
        '{"a": ' * depth, "}" * depth)  # fmt: skip
    return json.dumps(doc).replace(json.dumps(_DEEP), opening + "1" + closing)


def json_slots(doc: Any, *, max_depth: int, max_slots: int) -> list[tuple[Any, Any]]:
    """Every (container, key) of a decoded JSON document, down to ``max_depth``: the places a
    mutation may put a value (fuzz.py's JSON mutations use it too)."""
    slots: list[tuple[Any, Any]] = []

    def walk(node: Any, depth: int) -> None:
        if depth > max_depth or len(slots) > max_slots:
            return
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in list(items):
            slots.append((node, key))
            if isinstance(value, dict | list):
                walk(value, depth + 1)

    if isinstance(doc, dict | list):
        walk(doc, 0)
    return slots


def _mutate_doc(doc: Any, rng: random.Random) -> Any:
    """One value of a decoded JSON document replaced by a hostile one."""
    slots = json_slots(doc, max_depth=10, max_slots=500)
    if not slots:
        return doc
    node, key = rng.choice(slots)
    pick = rng.randrange(7)
    if pick == 0:
        node[key] = _DEEP
    elif pick == 1:
        node[key] = int("9" * rng.randint(309, 600))
    elif pick == 2:
        node[key] = rng.choice((float("inf"), float("-inf"), float("nan"), 1e308, -1.0, 0))
    elif pick == 3 and isinstance(node, dict):  # a Unicode digit as a key (a GPU index)
        node[rng.choice(UNICODE_DIGITS) + str(key)[:2]] = node.pop(key)
    elif pick == 4:
        node[key] = rng.choice(("x", "\x1b]0;t\x07", "²", [], {}, None, True, "9" * 50))
    elif pick == 5:
        node[key] = {str(i): i for i in range(rng.choice((10, 1000)))}
    else:
        node[key] = "n" * 5000
    return doc


def _blob(data: bytes, rng: random.Random) -> bytes:
    """jobstats' summary in AdminComment decoded, mutated and encoded again (or made of
    other bytes: not gzip, not base64, gzip of something that is not JSON)."""
    match = _BLOB.search(data)
    if match is None:
        return _json_inside(data, rng)
    try:  # an earlier mutation may have left no summary there
        doc = json.loads(gzip.decompress(base64.b64decode(match[1])))
    except (ValueError, OSError, EOFError, RecursionError, zlib.error):
        doc = {}
    pick = rng.randrange(5)
    if pick == 0:
        payload = base64.b64encode(rng.randbytes(rng.choice((16, 400))))
    elif pick == 1:
        payload = base64.b64encode(gzip.compress(rng.randbytes(64)))
    elif pick == 2:
        payload = base64.b64encode(gzip.compress(b"[" * 50_000))
    else:
        text = _dumps(_mutate_doc(doc, rng), rng)
        payload = base64.b64encode(gzip.compress(text.encode()))
    return data[: match.start(1)] + payload + data[match.end(1) :]


def _json_inside(data: bytes, rng: random.Random) -> bytes:
    """A JSON document (or a JSON line of a recording) with one value made hostile."""
    lines = data.split(b"\n")
    spots = [i for i, line in enumerate(lines) if line.strip().startswith((b"{", b"["))]
    if spots and len(spots) < len(lines) - 1:  # JSON Lines
        at = rng.choice(spots)
        with contextlib.suppress(ValueError, RecursionError):
            lines[at] = _dumps(_mutate_doc(json.loads(lines[at]), rng), rng).encode()
        return b"\n".join(lines)
    try:
        return _dumps(_mutate_doc(json.loads(data), rng), rng).encode()
    except (ValueError, RecursionError):
        return _number(data, rng)


CLASSES: tuple[Callable[[bytes, random.Random], bytes], ...] = (
    _number, _number, _unicode_digit, _unicode_digit, _control, _long_name, _prefix_words,
    _nodes_zero, _blob, _blob, _json_inside,
)  # fmt: skip


# A generated target's share of inputs drawn fresh from its generator and not mutated: its
# inputs are hostile already, and mutating each of them (a byte of JSON flipped, a number of
# 400 digits) left only the refusal path tested (all 30 predictions refused, issue 34).
FRESH_SHARE = 0.5


def fresh(target: E2eTarget) -> Callable[[random.Random], bytes] | None:
    """The generator of one of issue 34's generated targets (None: a target of fixtures)."""
    return fuzz_inputs_gen.maker(target)


def mutations(
    seeds: list[bytes],
    rng: random.Random,
    byte_level: Callable[..., Iterator[bytes]],
    fresh: Callable[[random.Random], bytes] | None = None,
) -> Iterator[bytes]:
    """Endless inputs: ``FRESH_SHARE`` of them fresh from the generator ``fresh`` when there
    is one; of the rest, 40 % the byte-level mutations of the parsers' campaign, 60 % the
    classes above (one to three of them on one seed)."""
    bytewise = byte_level(seeds, rng)
    while True:
        if fresh is not None and rng.random() < FRESH_SHARE:
            yield fresh(rng)
            continue
        if rng.random() < 0.4:
            yield next(bytewise)
            continue
        data = rng.choice(seeds)
        for _ in range(rng.choice((1, 1, 2, 3))):
            # a mutation that cannot apply to what an earlier one left is skipped: the
            # harness's own errors must not end the campaign
            with contextlib.suppress(Exception):
                data = rng.choice(CLASSES)(data, rng)
        yield data


# ----------------------------------------------------------------------------- running


def run_commands(target: E2eTarget, data: bytes) -> None:
    """Every command of the target on this input, in a fresh folder; ``Escape`` (or the
    exception itself) when one ends another way than 0 or one line and 2."""
    from tuneadvisor.cli import main

    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        (base / "job.sbatch").write_text(JOB)
        (base / "train.py").write_text(TRAIN)
        (base / "base").mkdir()
        (base / "base" / "run.json").write_text(json.dumps(run_record(180.0, 2, "base")))
        path = base / target.file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        refused = False
        for argv in target.commands:
            args = [a.replace("{F}", str(path)).replace("{D}", folder) for a in argv]
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    status = main(args)
                except SystemExit as exc:  # argparse's usage errors
                    status = exc.code if isinstance(exc.code, int) else 1
            said = err.getvalue().strip().splitlines()
            raw = _RAW_ESCAPE.search(out.getvalue() + err.getvalue())
            if raw is not None and "json" not in argv:  # issue 34: one sanitiser on every face
                raise Escape(f"{argv[0]}: a raw control character {raw.group()!r} printed")
            if status == 2 and len(said) != 1:
                raise Escape(f"{argv[0]}: exit 2 with {len(said)} lines on stderr")
            if status not in (0, 2):
                raise Escape(f"{argv[0]}: exit {status}")
            refused = refused or status == 2
    if refused:
        raise Refused


# Issue 34's generators (bench/fuzz_inputs_gen.py) add their targets; imported last, as they
# build on this module's targets and run records.
import fuzz_inputs_gen  # noqa: E402

TARGETS = (*TARGETS, *fuzz_inputs_gen.TARGETS)
