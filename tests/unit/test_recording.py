"""Recordings (JSON Lines) round-trip, tolerate a cut last line, and read through --metrics;
the ring store stays bounded after a million rounds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tuneadvisor.errors import InputError
from tuneadvisor.metrics.model import GpuSample, HostSample
from tuneadvisor.metrics.recording import (
    RecordingError,
    RecordingHeader,
    RecordingWriter,
    parse_recording,
    sniff,
)
from tuneadvisor.metrics.ring import SnapshotStore, merge_snapshots
from tuneadvisor.metrics.snapshot import GpuProcess, ProcSample, Snapshot
from tuneadvisor.workspace.read_measured import read_metrics

U0 = "GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"


def snap(t: float, util: float = 90.0, mark: str | None = None) -> Snapshot:
    return Snapshot(
        t=t,
        gpus=(
            GpuSample(
                t=t,
                index=0,
                uuid=U0,
                name="NVIDIA A100-SXM4-40GB",
                util_pct=util,
                mem_used_mib=17935.0,
                mem_total_mib=40960.0,
                power_w=312.45,
            ),
        ),
        gpu_procs=(GpuProcess(gpu_key=U0, pid=42, used_mib=17920.0),),
        host=HostSample(
            t=t,
            cpu_pct_per_core=(100.0, 12.5),
            mem_used_mib=2048.0,
            proc_cpu_pct=101.0,
            proc_rss_mib=900.0,
            proc_count=2,
            main_cpu_pct=99.0,
            workers=1,
        ),
        procs=(
            ProcSample(
                pid=42,
                ppid=1,
                name="python",
                cmdline="python train.py",
                role="main",
                cpu_pct=99.0,
                rss_mib=800.0,
                state="running",
            ),
            ProcSample(
                pid=43,
                ppid=42,
                name="python",
                cmdline="python train.py",
                role="worker",
                cpu_pct=2.0,
                rss_mib=100.0,
                denied=("io",),
            ),
        ),
        no_data=("GPU-x: PCIe rx: Not Supported",),
        sampler_cpu_pct=0.4,
        mark=mark,
    )


def write(path: Path, snaps: list[Snapshot]) -> None:
    writer = RecordingWriter(path, RecordingHeader(interval_s=1.0, target="pid 42"))
    for s in snaps:
        writer.write(s)
    writer.close()


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    original = [
        snap(100.0 + i, util=10.0 * i, mark="warm-up done" if i == 2 else None) for i in range(5)
    ]
    write(path, original)
    text = path.read_text()
    assert sniff(text)
    assert text.count("python train.py") == 2  # static fields only on first sight
    rec = parse_recording(text)
    assert rec.header is not None and rec.header.target == "pid 42"
    assert json.loads(text.splitlines()[0])["version"] == 1
    assert rec.notes == ()
    assert [s.t for s in rec.snapshots] == [0.0, 1.0, 2.0, 3.0, 4.0]
    first = rec.snapshots[0]
    assert first.gpus[0] == GpuSample(
        t=0.0,
        index=0,
        uuid=U0,
        name="NVIDIA A100-SXM4-40GB",
        util_pct=0.0,
        mem_used_mib=17935.0,
        mem_total_mib=40960.0,
        power_w=312.45,
    )
    assert first.host is not None and first.host.cpu_pct_per_core == (100.0, 12.5)
    last = rec.snapshots[-1]
    assert [(p.pid, p.role, p.cmdline, p.denied) for p in last.procs] == [
        (42, "main", "python train.py", ()),
        (43, "worker", "python train.py", ("io",)),
    ]
    assert rec.snapshots[2].mark == "warm-up done"
    assert last.gpu_procs == (GpuProcess(gpu_key=U0, pid=42, used_mib=17920.0),)
    facts = rec.series().facts()
    assert facts["gpu.util.mean"] == 20.0
    assert facts["host.proc.main_cpu_pct.mean"] == 99.0
    assert facts["host.proc.workers.max"] == 1


def test_a_line_cut_short_by_a_dying_node_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    write(path, [snap(float(i)) for i in range(3)])
    text = path.read_text()
    cut = text[: len(text) - 40]  # the last round half written, no newline
    rec = parse_recording(cut)
    assert len(rec.snapshots) == 2
    assert rec.notes == ("line 4: cut short (the run was killed?); dropped",)


def test_a_broken_line_in_the_middle_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    write(path, [snap(float(i)) for i in range(3)])
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = lines[2][:30] + "\n"
    with pytest.raises(RecordingError, match="line 3: not JSON"):
        parse_recording("".join(lines))


def test_two_runs_appended_keep_their_clocks_apart(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    write(path, [snap(float(i)) for i in range(3)])
    write(path, [snap(500.0 + i) for i in range(3)])
    rec = parse_recording(path.read_text())
    assert len(rec.headers) == 2
    times = [s.t for s in rec.snapshots]
    assert times == sorted(times) and len(set(times)) == 6


def test_metrics_option_sniffs_a_recording(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    write(path, [snap(float(i), util=4.0) for i in range(12)])
    series = read_metrics([str(path)])
    assert series is not None and series.source == "recording"
    assert series.facts()["gpu.samples"] == 12
    bad = tmp_path / "bad.jsonl"
    bad.write_text(path.read_text().replace('"t":3.0', '"t":"x"', 1))
    with pytest.raises(InputError, match="broken tuneadvisor watch recording: line 5"):
        read_metrics([str(bad)])


def test_report_reads_a_recording(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tuneadvisor.cli import main

    path = tmp_path / "rec.jsonl"
    write(path, [snap(float(i), util=4.0) for i in range(12)])
    assert main(["report", "--metrics", str(path), "--format", "json"]) == 0
    ids = [f["id"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert "gpu-idle" in ids


def test_merge_keeps_peaks_and_averages_rates() -> None:
    merged = merge_snapshots([snap(0.0, util=10.0), snap(1.0, util=30.0)])
    gpu = merged.gpus[0]
    assert merged.t == 0.0 and gpu.util_pct == 20.0 and gpu.mem_used_mib == 17935.0
    assert merged.host is not None and merged.host.cpu_pct_per_core == (100.0, 12.5)


@pytest.mark.slow  # about 10 s
def test_a_million_rounds_in_bounded_memory() -> None:
    store = SnapshotStore(recent=100, history=64)
    one = snap(0.0)
    for i in range(1_000_000):
        store.add(Snapshot(t=float(i), gpus=one.gpus, host=one.host))
        assert len(store) <= 100 + 64 + 1 or i < 10
    assert store.count == 1_000_000
    assert store.width > 10_000 and len(store._pending) <= 16  # buckets wide, never held
    assert len(store.recent) == 100 and len(store.history) < 64
    timeline = store.timeline()
    assert timeline[0].t == 0.0 and timeline[-1].t == 999_999.0
    assert [s.t for s in timeline] == sorted(s.t for s in timeline)
