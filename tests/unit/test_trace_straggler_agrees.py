"""A rank the trace report names as the straggler is the one rank-straggler-trace fires on,
and a rank it does not name gives no finding (issue 33 §3): one measure (StepTime.work_us)
and one threshold for both, over the real multi-rank traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tuneadvisor.cli import main

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"
SETS = [
    REAL / "traces-run" / "mnist_ddp-2rank-cpu",
    REAL / "traces" / "cpu-ddp-gloo",
    REAL / "traces" / "h200-ddp-gloo",
    REAL / "traces" / "ddp-2rank-sampled",
]


@pytest.mark.parametrize("folder", SETS, ids=lambda p: p.name)
def test_a_named_straggler_is_a_finding(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(folder), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    named = data["traces"]["straggler"]
    fired = [f for f in data["findings"] if f["id"] == "rank-straggler-trace"]
    assert bool(named) == bool(fired), (named, fired)
    if named:
        (finding,) = fired
        assert finding["evidence"]["slowest rank"] == named["label"]
        ratio = finding["evidence"]["its working time / the others' median"]
        assert ratio == round(1 + named["excess"], 2)  # the same measure in both


def test_a_cpu_trace_says_each_thing_once(capsys: pytest.CaptureFixture[str]) -> None:
    """Host communication is shown (gloo's all-reduce), so it is not said to be unshowable;
    the no-device note is said once for the ranks it is about (and once in Not read); the
    DataLoader finding does not speak of a GPU the run did not have."""
    assert main(["report", str(SETS[0])]) == 0
    text = capsys.readouterr().out
    assert "communication 39.2 %" in text
    assert "communication time" not in text
    # once in the trace section (with its ranks), once in Not read (with its files)
    assert text.count("no device events") == 2
    assert "rank 0, rank 1: no device events" in text
    assert "GPU had nothing to do" not in text
