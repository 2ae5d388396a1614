"""SM activity in a watch recording: optional fields of a GPU's sample and one header line
for why some GPU has none; recordings written before them read as before, and a reader that
does not know them skips them."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tuneadvisor.metrics.model import GpuSample
from tuneadvisor.metrics.recording import RecordingHeader, RecordingWriter, parse_recording
from tuneadvisor.metrics.snapshot import Snapshot
from tuneadvisor.workspace.gather import gather
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.read_measured import read_metrics

U0 = "GPU-fbeb7f21-0738-07b7-fe70-90ad97879162"
_PCT = st.floats(min_value=0, max_value=100, allow_nan=False).map(lambda v: round(v, 3))


def _write(path: Path, gpus: list[GpuSample], header: RecordingHeader) -> None:
    writer = RecordingWriter(path, header)
    for i, gpu in enumerate(gpus):
        writer.write(Snapshot(t=float(i), gpus=(gpu,)))
    writer.close()


@settings(max_examples=25, deadline=None)
@given(rounds=st.lists(st.tuples(_PCT, st.none() | _PCT, _PCT, _PCT), min_size=1, max_size=5))
def test_activity_round_trips(tmp_path_factory, rounds) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path_factory.mktemp("rec") / "watch.jsonl"
    gpus = [
        GpuSample(t=float(i), index=0, uuid=U0, name="NVIDIA H200", util_pct=util,
                  sm_active_pct=sm, tensor_active_pct=tensor, dram_active_pct=dram)
        for i, (util, sm, tensor, dram) in enumerate(rounds)
    ]  # fmt: skip
    _write(path, gpus, RecordingHeader(interval_s=1.0, host="n1"))
    read = [s.gpus[0] for s in parse_recording(path.read_text()).snapshots]
    assert [
        (g.util_pct, g.sm_active_pct, g.tensor_active_pct, g.dram_active_pct) for g in read
    ] == [
        (round(u, 3), None if s is None else round(s, 3), round(t, 3), round(d, 3))
        for u, s, t, d in rounds
    ]


def test_why_there_is_none_is_one_header_line(tmp_path: Path) -> None:
    path = tmp_path / "watch.jsonl"
    why = "no SM activity (NVML GPM): GPU 0: this GPU has no GPM (Hopper or newer has it)"
    gpu = GpuSample(t=0.0, index=0, uuid=U0, util_pct=97.0)
    _write(path, [gpu, gpu], RecordingHeader(interval_s=1.0, activity_no_data=why, host="n1"))
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["activity_no_data"] == why
    assert all("GPM" not in line for line in lines[1:])  # never each round
    assert parse_recording(path.read_text()).headers[0].activity_no_data == why
    # a header without it (written before, or a GPU with GPM) has no such key
    _write(tmp_path / "b.jsonl", [gpu], RecordingHeader(interval_s=1.0, host="n1"))
    assert "activity_no_data" not in json.loads((tmp_path / "b.jsonl").read_text().splitlines()[0])


def test_an_older_recording_reads_as_before(tmp_path: Path) -> None:
    """A recording of before the activity fields: no SM facts, nothing made up; the report
    says the figures are utilization only."""
    path = tmp_path / "old.jsonl"
    header = {"format": "tuneadvisor-watch", "version": 1, "started": "2026-01-01T00:00:00",
              "host": "n1", "interval_s": 1.0, "window_s": 60.0, "target": "pid 1",
              "gpu_no_data": None, "driver": "550.54.15", "job": None}  # fmt: skip
    rows = [{"t": float(i), "gpus": [{"index": 0, "uuid": U0, "util_pct": 98.0}]} for i in range(5)]
    path.write_text("\n".join(json.dumps(o) for o in [header, *rows]) + "\n")
    series = read_metrics([str(path)])
    assert series is not None
    facts = series.facts()
    assert facts["gpu.util.mean"] == 98.0
    assert not any(k.startswith(("gpu.sm_active", "gpu.tensor", "gpu.activity")) for k in facts)
    # the report says what its GPU figures are, and that SM-level questions are not judged
    notes = gather(Inputs(metrics=(str(path),)), None, env={}).notes
    said = [n for n in notes if n.startswith("GPU figures from the recording samples")]
    assert said and "utilization (share of time any kernel ran) only" in said[0]
    assert "busy-but-underused, tensor-cores-idle, memory-bandwidth-bound" in said[0]


def test_a_field_a_reader_does_not_know_is_skipped(tmp_path: Path) -> None:
    """Forward: a later writer's field this reader does not know leaves the rest readable."""
    path = tmp_path / "new.jsonl"
    header = {"format": "tuneadvisor-watch", "version": 1, "host": "n1", "interval_s": 1.0}
    row = {"t": 0.0, "gpus": [{"index": 0, "sm_active_pct": 12.5, "fp8_active_pct": 3.0}]}
    path.write_text(json.dumps(header) + "\n" + json.dumps(row) + "\n")
    (snap,) = parse_recording(path.read_text()).snapshots
    assert snap.gpus[0].sm_active_pct == 12.5
