"""The scan's own opcode decoder (``safe_pickle.opcodes``) reads every pickle as
``pickletools.genops`` does: the same opcodes, arguments and offsets, and an error exactly
where genops raises one (issue 29: genops cost most of reading a 50,000-line profile)."""

from __future__ import annotations

import io
import pickle
import pickletools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuneadvisor.profile.safe_pickle import PickleRejected, opcodes

FIX = Path(__file__).resolve().parent.parent / "fixtures"
SEEDS = [path.read_bytes() for path in sorted((FIX / "lprof").glob("*.lprof"))]
# Every protocol's encoding of what a profile holds and more: protocol 0's text opcodes
# (INT, LONG, FLOAT, STRING, UNICODE, GET/PUT), long integers, bytes, nested containers.
VALUES: list[Any] = [
    {("train.py", 12, "train"): [(13, 4, 1200), (14, 4, 2**70)], "unit": 1e-9},
    [None, True, False, -1, 255, 65535, 2**31, -(2**63), 1.5, float("inf"), "é\ud800", b"x"],
    (b"\x00" * 300, "y" * 300, frozenset({1, 2}), {3}, bytearray(b"ab"), ((),)),
]
PICKLES = [pickle.dumps(v, protocol=p) for v in VALUES for p in range(pickle.HIGHEST_PROTOCOL + 1)]
IDS = [p.name for p in sorted((FIX / "lprof").glob("*.lprof"))] + [
    f"value{v}-protocol{p}" for v in range(len(VALUES)) for p in range(pickle.HIGHEST_PROTOCOL + 1)
]


def genops_oracle(data: bytes) -> list[tuple[str, str, int | None]]:
    """What the scan read before: genops, its errors turned into the scan's as it did."""
    stream = io.BytesIO(data)
    out = []
    try:
        for opcode, arg, pos in pickletools.genops(stream):
            out.append((opcode.name, repr(arg), pos))
    except Exception as exc:  # noqa: BLE001 - genops raises any type on bad bytes, as the scan saw it
        if stream.tell() >= len(data):
            raise PickleRejected("truncated pickle: the file ends inside it") from None
        raise PickleRejected(f"corrupt pickle: {exc}") from None
    return out


def decoded(data: bytes) -> list[tuple[str, str, int | None]]:
    return [(name, repr(arg), pos) for name, arg, pos in opcodes(data)]  # repr: NaN == NaN


def outcome(read: Any, data: bytes) -> tuple[str, object]:
    try:
        return "ok", read(data)
    except PickleRejected as exc:
        return "rejected", str(exc)


@pytest.mark.parametrize("data", SEEDS + PICKLES, ids=IDS)
def test_real_pickles_decode_as_genops_reads_them(data: bytes) -> None:
    assert decoded(data) == genops_oracle(data)
    assert decoded(data)[-1][0] == "STOP"


@pytest.mark.parametrize("data", SEEDS + PICKLES, ids=IDS)
def test_every_cut_of_a_real_pickle_fails_as_genops_does(data: bytes) -> None:
    for cut in range(len(data)):
        assert outcome(decoded, data[:cut]) == outcome(genops_oracle, data[:cut])


@settings(max_examples=300, deadline=None, database=None)
@given(
    seed=st.sampled_from(SEEDS + PICKLES),
    at=st.integers(min_value=0, max_value=10_000),
    patch=st.binary(min_size=1, max_size=12),
    tail=st.binary(max_size=40),
)
def test_any_bytes_decode_or_fail_as_genops(
    seed: bytes, at: int, patch: bytes, tail: bytes
) -> None:
    """Mutations of real pickles (a patch over some bytes), and bytes after a prefix of one."""
    at %= len(seed)
    for data in (seed[:at] + patch + seed[at + len(patch) :], seed[:at] + tail, patch + tail):
        assert outcome(decoded, data) == outcome(genops_oracle, data)
