"""The device-time stand-in is named in the run record: its own ``test_mode`` field, else
what the training's start event said (issue 21, part 6)."""

from __future__ import annotations

from dataclasses import replace

from tuneadvisor.runrecord.measured import Measured, Summary
from tuneadvisor.runrecord.parts import Paths
from tuneadvisor.runrecord.record import RunRecord
from tuneadvisor.runrecord.settings import Settings

STAND_IN = "device-time-stand-in"


def _record(**fields: object) -> RunRecord:
    base = RunRecord(
        id="r1", name="mnist_single", label=None, status="completed", where="local",
        script="mnist_single.py", launcher="python", settings=Settings(), source={},
        commands=(), versions={}, started="2026-01-01T00:00:00Z",
        paths=Paths(dir=".", log="train.log"), notes=(),
    )  # fmt: skip
    return replace(base, **fields)  # type: ignore[arg-type]


def _measured(start: dict[str, object]) -> Measured:
    return Measured(start=start, summary=Summary(), steps=(), epochs=(), events=())


def test_a_record_without_the_test_mode_writes_no_such_key() -> None:
    """Backward compatible: records of ordinary runs are what they were."""
    assert "test_mode" not in _record().to_json()
    assert "test_mode" not in _record(measured=_measured({"batch_size": 64})).to_json()


def test_the_start_events_test_mode_reaches_the_record_and_reads_back() -> None:
    record = _record(measured=_measured({"test_mode": STAND_IN, "device_time_ms": "50"}))
    data = record.to_json()
    assert data["test_mode"] == STAND_IN
    again = RunRecord.from_json(data)
    assert again.test_mode == STAND_IN and again.to_json() == data


def test_the_records_own_field_wins_and_an_old_record_reads_as_none() -> None:
    own = _record(test_mode=STAND_IN, measured=_measured({}))
    assert own.to_json()["test_mode"] == STAND_IN
    assert RunRecord.from_json(_record().to_json()).stated_test_mode is None


def test_runs_progress_line_shows_an_epoch_that_evaluated_nothing() -> None:
    """The test mode's epoch event has accuracy null: a dash, not a crash."""
    import io

    from rich.console import Console

    from tuneadvisor.commands.run import ProgressView

    out = io.StringIO()
    view = ProgressView(Console(file=out, width=200), "r1", Settings(), live=False)
    view({"event": "epoch", "epoch": 1, "accuracy": None, "test_loss": None})
    view({"event": "epoch", "epoch": 2, "accuracy": 0.5, "test_loss": 1.0})
    assert out.getvalue().splitlines()[0].startswith("epoch 1: accuracy -,")
    assert "epoch 2: accuracy 50.0 %" in out.getvalue()
