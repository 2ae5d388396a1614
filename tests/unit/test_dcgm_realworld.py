"""Real DCGM outputs (tests/fixtures/realworld/dcgm/, see its MANIFEST) read by --metrics:
what each file holds per GPU and over time, through the same path a report takes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tuneadvisor.cli import main
from tuneadvisor.workspace.gather import gather
from tuneadvisor.workspace.inputs import Inputs

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "dcgm"
MIB = 1024 * 1024


def _read(name: str):  # type: ignore[no-untyped-def]
    gathered = gather(Inputs(metrics=(str(REAL / name),)), None, env={})
    assert gathered.metrics is not None
    return gathered


def test_dmon_nvlink_of_four_h800s_over_six_rounds() -> None:
    gathered = _read("h800-dmon-nvlink-4gpu.txt")
    series = gathered.metrics
    assert series is not None and series.source == "dcgmi-dmon"
    assert [g.key for g in series.gpus] == ["gpu3", "gpu2", "gpu1", "gpu0"]  # as dmon lists
    assert {len(g.samples) for g in series.gpus} == {6}
    gpu0 = series.gpu("gpu0")
    assert gpu0 is not None
    assert gpu0.samples[0].nvlink_tx_mib_s == pytest.approx(20779220484 / MIB)
    assert gpu0.samples[0].nvlink_rx_mib_s == pytest.approx(21900091841 / MIB)
    assert gpu0.samples[4].nvlink_tx_mib_s == 0.0  # a quiet round is 0, not missing
    # no times in dmon: counted, not timed, and said so
    assert "gpu.duration_s" not in gathered.facts
    assert any("prints no times" in n for n in series.notes)
    assert gathered.facts["gpu.samples"] == 6
    assert gathered.facts["gpu.nvlink.mean_mib_s"] > 10_000  # tens of GB/s both ways
    # NVLink traffic alone is no utilization and no SM activity: nothing SM-level follows
    assert "gpu.util.mean" not in gathered.facts and "gpu.sm_active.mean" not in gathered.facts


def test_dmon_na_rounds_are_no_data() -> None:
    series = _read("h800-dmon-pcie-nvlink-na.txt").metrics
    assert series is not None
    gpu7 = series.gpu("gpu7")
    assert gpu7 is not None
    assert [s.pcie_tx_mib_s for s in gpu7.samples[:2]] == [None, None]  # N/A
    assert gpu7.samples[2].pcie_tx_mib_s == pytest.approx(499346 / MIB)
    assert gpu7.samples[-1].pcie_rx_mib_s == pytest.approx(3111 / MIB)


def test_exporter_text_of_three_gpus_skips_unlabelled_series() -> None:
    gathered = _read("datadog-t4-a10g-exporter-excerpt.txt")
    series = gathered.metrics
    assert series is not None and series.source == "dcgm-exporter"
    keys = [g.key for g in series.gpus]
    assert keys == [
        "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e",
        "GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5",
        "GPU-abc",
    ]
    t4 = series.gpus[0].samples
    assert len(t4) == 1  # one scrape
    (one,) = t4
    assert (one.name, one.util_pct, one.sm_clock_mhz, one.power_w) == (
        "Tesla T4",
        0.0,
        300.0,
        8.969,
    )
    assert (one.mem_used_mib, one.mem_total_mib) == (0.0, 15109.0)  # total = used + free
    a10g = series.gpus[2].samples[0]
    assert a10g.dram_active_pct == pytest.approx(0.0003)  # a ratio, read as %
    assert any("2 DCGM series without a gpu label skipped" in n for n in series.notes)
    assert gathered.facts["gpu.count"] == 3


def test_exporter_two_scrapes_of_a_mig_instance() -> None:
    gathered = _read("a30-mig-exporter-two-scrapes.txt")
    series = gathered.metrics
    assert series is not None
    (gpu,) = series.gpus
    assert gpu.key == "GPU-603a8873-0edd-c157-ce48-2078e8b1a935/GI1"
    assert gpu.name == "NVIDIA A30 MIG 2g.12gb"
    assert [s.tensor_active_pct for s in gpu.samples] == [0.0, pytest.approx(2.2137)]
    assert [s.dram_active_pct for s in gpu.samples] == [0.0, None]
    assert gathered.facts["gpu.tensor_active.max"] == pytest.approx(2.2137)
    assert gathered.facts["gpu.tensor_cores"] is True  # an A30


@pytest.mark.parametrize("name", sorted(p.name for p in REAL.glob("*.txt")))
def test_every_real_file_reports(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["report", "--format", "json", "--metrics", str(REAL / name)])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    text = json.dumps(report)
    # the report says which kind of figure the GPU figures are
    assert "share of time any kernel ran" in text
