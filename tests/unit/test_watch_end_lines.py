"""The last lines `watch -- CMD` prints after its screen (issue 33 §4, round three): the
screen's output pane leaves the bundled scripts' ``TUNEADVISOR {json}`` progress records
out, and the first hour's step 6 then printed them as half of the last ten lines."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from tuneadvisor.commands.watch import _progress_record
from tuneadvisor.watch import start
from tuneadvisor.watch.output import OutputLines


def _end(output: OutputLines, hidden: Any) -> None:
    run: Any = SimpleNamespace(program=None, output=output)
    target: Any = SimpleNamespace(label="job 7")
    start._print_end(None, target, run, lambda *a: "summary\n", None, hidden)  # type: ignore[arg-type]


def test_the_last_lines_leave_the_progress_records_out(capsys: pytest.CaptureFixture[str]) -> None:
    output = OutputLines()
    for step in range(1, 31):
        output.feed(f"Train Epoch: 1 [{64 * step}/60000]\tLoss: 0.5\n")
        record = {"event": "step", "step": step, "loss": 0.5}
        output.feed(f"TUNEADVISOR {json.dumps(record)}\n")
    output.feed("Test set: Average loss: 0.15, Accuracy: 963/1000 (96%)\n")
    _end(output, _progress_record)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("── the last 10 lines of the job's output")
    shown = printed[1:11]
    assert not any(line.startswith("TUNEADVISOR ") for line in shown)
    assert shown[-1].startswith("Test set:") and shown[0].startswith(
        f"Train Epoch: 1 [{64 * (30 - 8)}/"
    )
    assert printed[-1] == "summary"


def test_without_a_filter_every_line_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    output = OutputLines()
    for n in range(12):
        output.feed(f"TUNEADVISOR {json.dumps({'event': 'step', 'step': n})}\n")
    _end(output, None)
    printed = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("TUNEADVISOR ") for line in printed) == 10


def test_a_line_that_only_looks_like_a_record_is_shown() -> None:
    assert _progress_record('TUNEADVISOR {"event": "end"}')
    assert not _progress_record("TUNEADVISOR is a word here")
    assert not _progress_record('TUNEADVISOR {"no": "event"}')
