"""The trace shapes of bench/fuzz_trace_gen.py in its short mode (issue 34): each shape through
`report` (text, markdown, JSON) and `compare`, each command in its own forked process, within
the campaign's bounds: 10 s, 600 MB, exit 0 or 2 with one line, no traceback, nothing written
outside the output. The long mode runs in bench/ (bench/RESULTS.md)."""

from __future__ import annotations

import random

import pytest

from bench import fuzz_trace_gen as gen

SHAPES = list(gen.shapes(random.Random(0)))


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_a_trace_shape_stays_within_the_bounds(shape: gen.Shape) -> None:
    outcome = gen.run_shape(shape)
    # wall time is the one bound other tenants of a loaded machine break: the bound is held
    # on the command's CPU time, and one that runs three times the bound is killed (a hang)
    assert outcome.status == "ok", outcome
    assert outcome.rss_mb <= gen.MEMORY_MB and not outcome.stray, outcome
    assert outcome.cpu_s <= gen.TIME_S, outcome
