"""The end-to-end fuzz harness's short mode in the test command (issue 34): a few inputs from
each of issue 34's generators (bench/fuzz_inputs_gen.py) through the real command line, in a
forked process with its address space bounded, each command under the harness's timer.

The bounds asserted are the campaign's: exit 0 or one line and exit 2 (no traceback), no
command past 10 s (a hang guard: the harness stops it), peak RSS under 600 MB, and nothing
written outside the command's own folder (the working directory stays empty). The long mode
is ``bench/fuzz.py --inputs 0 --e2e-inputs N`` (bench/RESULTS.md)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import fuzz  # noqa: E402
import fuzz_inputs_gen  # noqa: E402

INPUTS = 1  # per target: the short mode (about 5-15 s each here)
# The predictions are cheap (well under a second each): enough of them to see that the
# generator's share read well (exit 0 through compare's every face) is there, not only the
# refusals.
PREDICTIONS = "e2e prediction (gen)"
PREDICTION_INPUTS = 12
HANG_S = 10.0
MEMORY_MIB = 600


@pytest.mark.parametrize("name", [t.name for t in fuzz_inputs_gen.TARGETS])
def test_generated_inputs_stay_within_the_bounds(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    target = next(t for t in fuzz.E2E_TARGETS if t.name == name)
    inputs = PREDICTION_INPUTS if name == PREDICTIONS else INPUTS
    tally = fuzz.run_target(target, inputs, 34, HANG_S, MEMORY_MIB)
    assert tally.inputs == inputs
    assert tally.accepted + tally.own_errors + sum(tally.escapes.values()) == inputs
    if name == PREDICTIONS:  # a third at least read and rendered, not refused
        assert tally.accepted >= inputs // 3, (tally.accepted, tally.own_errors)
        assert tally.own_errors > 0  # and the refusal path is still tested
    assert not tally.escapes, dict(tally.escapes) | tally.example
    assert tally.hangs == 0, tally.example
    assert tally.memory_over == 0, (tally.peak_rss_mib, tally.example)
    assert os.listdir(tmp_path) == []
