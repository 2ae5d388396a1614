"""Fuzzing the loader with real files cut and mutated: each case loads or raises InputError.

Each batch runs in a subprocess whose address space is capped (RLIMIT_AS), so an input that
makes the loader allocate gigabytes fails the test with a MemoryError instead of taking the
machine down. The cases are seeded: a failure prints the case, and rerunning reproduces it.

Run one batch by hand: ``python tests/process/test_lprof_fuzz.py pickle|text SEED COUNT``.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lprof"
PICKLES = ["lp4.1.3.lprof", "lp4.2.0.lprof", "lp5.1.0.lprof", "lp5.1.0-rank1.lprof"]
TABLES = ["lp5.1.0.txt", "lp5.1.0-rmt.txt", "lp4.2.0-m-nosource.txt", "lp5.1.0-r-wide.txt"]
MEMORY_CAP = 1 << 30  # bytes of address space for the worker: ~1 GiB
HANG_GUARD_S = 600  # kills a hung worker; not a speed check
# Bytes that mean something to the unpickler: MARK, STOP, memo ops, REDUCE, containers, ...
PICKLE_BYTES = b"(.0\x94hjqrRb]}ae\x93\x81\x8a\x8b\x95\x80\xff\x00"
Case = tuple[str, bytes]


# -- the worker (runs in the capped subprocess) -------------------------------------------


def _mutate(data: bytes, rng: random.Random, donors: list[bytes], alphabet: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randint(0, len(buf))
        kind = rng.choice(("flip", "insert", "delete", "splice", "repeat"))
        if kind == "flip" and pos < len(buf):
            buf[pos] ^= rng.randint(1, 255)
        elif kind == "insert":
            pick = rng.choice((alphabet, bytes(range(256))))
            buf[pos:pos] = bytes(rng.choice(pick) for _ in range(rng.randint(1, 8)))
        elif kind == "delete":
            del buf[pos : pos + rng.randint(1, 16)]
        elif kind == "splice":
            donor = rng.choice(donors)
            start = rng.randint(0, len(donor))
            chunk = donor[start : start + rng.randint(1, 64)]
            buf[pos : pos + rng.randint(0, len(chunk))] = chunk
        else:  # repeat a span: nesting, memo slots and rows over and over
            span = bytes(buf[pos : pos + rng.randint(1, 12)])
            buf[pos:pos] = span * rng.randint(2, 50)
    return bytes(buf)


def _text_edit(data: bytes, rng: random.Random) -> bytes:
    """Line-level damage a paste can do: lost, doubled or swapped lines, edited digits."""
    lines = data.split(b"\n")
    at = rng.randrange(len(lines))
    kind = rng.choice(("drop", "double", "swap", "digit"))
    if kind == "drop":
        del lines[at]
    elif kind == "double":
        lines.insert(at, lines[at])
    elif kind == "swap":
        other = rng.randrange(len(lines))
        lines[at], lines[other] = lines[other], lines[at]
    else:
        line = bytearray(lines[at])
        digits = [i for i, b in enumerate(line) if chr(b).isdigit()]
        if digits:
            line[rng.choice(digits)] = rng.choice(b"0123456789.e ")
        lines[at] = bytes(line)
    return b"\n".join(lines)


def pickle_cases(seed: int, count: int) -> Iterator[Case]:
    donors = [(FIXTURES / name).read_bytes() for name in PICKLES]
    for name, data in zip(PICKLES, donors, strict=True):
        for cut in range(len(data) + 1):
            yield f"{name}[:{cut}]", data[:cut]
    rng = random.Random(seed)
    for number in range(count):
        data = rng.choice(donors)
        yield f"pickle mutation {number} (seed {seed})", _mutate(data, rng, donors, PICKLE_BYTES)


def text_cases(seed: int, count: int) -> Iterator[Case]:
    donors = [(FIXTURES / name).read_bytes() for name in TABLES]
    rng = random.Random(seed)
    for name, data in zip(TABLES, donors, strict=True):
        cuts = {i + 1 for i, b in enumerate(data) if b == ord("\n")}
        cuts |= {rng.randint(0, len(data)) for _ in range(100)}
        for cut in sorted(cuts):
            yield f"{name}[:{cut}]", data[:cut]
    for number in range(count):
        data = rng.choice(donors)
        if rng.random() < 0.5:
            data = _text_edit(data, rng)
        else:
            data = _mutate(data, rng, donors, b" \n.0123456789e=-\x1b[m")
        yield f"text mutation {number} (seed {seed})", data


def worker(kind: str, seed: int, count: int) -> int:
    """Load every case; print a JSON summary, or the first case that broke the rules."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    from tuneadvisor.errors import InputError
    from tuneadvisor.profile.lprof import load_profile

    cases: Callable[[int, int], Iterator[Case]] = pickle_cases if kind == "pickle" else text_cases
    outcome: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "case"
        for label, data in cases(seed, count):
            path.write_bytes(data)
            try:
                load_profile(path)
                outcome["loaded"] += 1
            except InputError as exc:
                if not str(exc).startswith(f"{path}: ") or "\n" in str(exc):
                    print(json.dumps({"case": label, "bad message": str(exc)}))
                    return 1
                outcome["rejected"] += 1
            except BaseException:  # MemoryError under the cap included: that is the point
                print(json.dumps({"case": label, "data": data.hex()}))
                traceback.print_exc()
                return 1
    print(json.dumps(outcome))
    return 0


def memory_cap_works() -> int:
    """The harness's own check: a plain unpickler on a memo bomb hits the cap."""
    import pickle
    import resource
    import struct

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    # Memo slot 2**28: the C unpickler grows its memo to 2**29 slots (4 GiB) at once.
    bomb = b"\x80\x04N" + b"r" + struct.pack("<I", 1 << 28) + b"."
    try:
        pickle.loads(bomb)
    except MemoryError:
        print(json.dumps({"memory_error": True}))
        return 0
    print(json.dumps({"memory_error": False}))
    return 1


# -- the tests ----------------------------------------------------------------------------


def run(*args: str) -> dict[str, int]:
    proc = subprocess.run(
        [sys.executable, __file__, *args],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    result: dict[str, int] = json.loads(proc.stdout.splitlines()[-1])
    return result


@pytest.mark.slow
def test_the_memory_cap_turns_a_blow_up_into_a_failure() -> None:
    assert run("memory-cap") == {"memory_error": True}


@pytest.mark.slow
def test_fuzzed_pickles_load_or_raise_input_error() -> None:
    count = 3000
    outcome = run("pickle", "20240611", str(count))
    truncations = sum((FIXTURES / name).stat().st_size + 1 for name in PICKLES)
    assert outcome["loaded"] + outcome["rejected"] == truncations + count
    assert outcome["loaded"] >= len(PICKLES)  # the whole files, at least
    assert outcome["rejected"] > truncations


@pytest.mark.slow
def test_fuzzed_tables_load_or_raise_input_error() -> None:
    outcome = run("text", "20240612", "3000")
    assert outcome["loaded"] >= len(TABLES)
    assert outcome["rejected"] > 0


if __name__ == "__main__":
    if sys.argv[1:] == ["memory-cap"]:
        sys.exit(memory_cap_works())
    sys.exit(worker(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
