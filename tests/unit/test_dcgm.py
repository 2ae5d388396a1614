"""dcgmi dmon output and dcgm-exporter text as --metrics: the formats' own rules (headers,
units lines, N/A, repeated headers, scrapes appended, timestamps, DCGM 4's *_RATIO names,
DCGM's blank values) and a broken file as one line naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuneadvisor.cli import main
from tuneadvisor.metrics.dcgm_dmon import DcgmDmonError, parse_dcgmi_dmon
from tuneadvisor.metrics.dcgm_dmon import sniff as sniff_dmon
from tuneadvisor.metrics.dcgm_exporter import DcgmExporterError, parse_dcgm_exporter
from tuneadvisor.metrics.dcgm_exporter import sniff as sniff_exporter

# `dcgmi dmon -e 203,1001,1002,1003,1004,1005`, as dcgmi lays it out
DMON = """\
#Entity   GPUTL        GRACT        SMACT        SMOCC        TENSO        DRAMA
ID
GPU 1     N/A          N/A          N/A          N/A          N/A          N/A
GPU 0     N/A          N/A          N/A          N/A          N/A          N/A
GPU 1     0            0.000        0.000        0.000        0.000        0.000
GPU 0     100          0.998        0.124        0.051        0.000        0.032
GPU 1     0            0.000        0.000        0.000        0.000        0.000
GPU 0     99           0.997        0.118        0.049        0.000        0.030
"""


def test_dmon_columns_by_name_ratios_as_percent() -> None:
    series = parse_dcgmi_dmon(DMON)
    assert [g.key for g in series.gpus] == ["gpu1", "gpu0"]
    gpu0 = series.gpu("gpu0")
    assert gpu0 is not None
    first, busy, _ = gpu0.samples
    assert first.util_pct is None and first.sm_active_pct is None  # N/A: no data, not 0
    assert busy.util_pct == 100.0
    assert busy.sm_active_pct == pytest.approx(12.4)
    assert busy.sm_occupancy_pct == pytest.approx(5.1)
    assert busy.tensor_active_pct == 0.0
    assert busy.dram_active_pct == pytest.approx(3.2)
    assert any("fields not read: GRACT" in n for n in series.notes)
    facts = series.facts()
    # the idle GPU 1 does not pull the busy one's SM activity down
    assert facts["gpu.sm_active.mean"] == pytest.approx(12.1)
    assert facts["gpu.util.busy_mean"] == pytest.approx(99.5)
    assert facts["gpu.activity.samples"] == 2


def test_dmon_header_again_may_change_the_fields() -> None:
    text = DMON + "#Entity   SMACT\nID\nGPU 0     0.5\n"
    gpu0 = parse_dcgmi_dmon(text).gpu("gpu0")
    assert gpu0 is not None
    assert gpu0.samples[-1].sm_active_pct == 50.0 and gpu0.samples[-1].util_pct is None


def test_dmon_instance_rows_skipped_with_a_note() -> None:
    series = parse_dcgmi_dmon("#Entity   SMACT\nID\nGPU 0     0.5\nGI 1      0.2\n")
    assert [g.key for g in series.gpus] == ["gpu0"]
    assert any("1 GI rows skipped" in n for n in series.notes)


def test_dmon_cut_short_at_the_end_is_dropped_elsewhere_an_error() -> None:
    cut = "#Entity   GPUTL   SMACT\nID\nGPU 0     100     0.5\nGPU 0     99"
    series = parse_dcgmi_dmon(cut)
    assert len(series.gpu_samples) == 1 and any("cut short" in n for n in series.notes)
    with pytest.raises(DcgmDmonError, match="line 3: 1 values for 2 fields"):
        parse_dcgmi_dmon("#Entity   GPUTL   SMACT\nID\nGPU 0     99\nGPU 0     1   0.5\n")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("#Entity   SMACT\nID\nGPU 0     fast\n", "line 3: SMACT is 'fast', not a number"),
        ("#Entity   SMACT\nID\nError: unable to connect\n", "line 3: not a dmon row"),
        ("#Entity   SMACT\nID\n", "no GPU rows"),
    ],
)
def test_dmon_broken(text: str, said: str) -> None:
    with pytest.raises(DcgmDmonError, match=said):
        parse_dcgmi_dmon(text)


def test_sniffing_tells_the_formats_apart() -> None:
    assert sniff_dmon(DMON) and not sniff_exporter(DMON)
    assert sniff_exporter('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 5\n') and not sniff_dmon("GPU 0  5\n")
    assert sniff_exporter("# HELP DCGM_FI_PROF_SM_ACTIVE Ratio.\n# TYPE x gauge\n")
    smi = "timestamp, index, utilization.gpu [%]\n2024/01/31 12:00:00.000, 0, 5 %\n"
    assert not sniff_dmon(smi) and not sniff_exporter(smi)


EXPORTER = """\
# HELP DCGM_FI_PROF_SM_ACTIVE The ratio of cycles an SM has at least 1 warp assigned.
# TYPE DCGM_FI_PROF_SM_ACTIVE gauge
DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-a",modelName="NVIDIA H100 80GB HBM3"} 0.31 1700000000000
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",modelName="NVIDIA H100 80GB HBM3"} 97 1700000000000
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE_RATIO{gpu="0",UUID="GPU-a"} 0.02 1700000000000
DCGM_FI_PROF_DRAM_ACTIVE{gpu="0",UUID="GPU-a"} 140737488355328 1700000000000
DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-a"} 0.35 1700000015000
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a"} 98 1700000015000
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-b",note="a \\"quoted\\", value"} NaN
go_gc_duration_seconds{quantile="0.5"} 0.001
"""


def test_exporter_timestamps_place_samples_in_time() -> None:
    series = parse_dcgm_exporter(EXPORTER)
    a = series.gpu("GPU-a")
    assert a is not None and len(a.samples) == 2
    first, second = a.samples
    assert (first.t, second.t) == (1700000000.0, 1700000015.0)
    assert (first.sm_active_pct, first.util_pct) == (31.0, 97.0)
    assert first.tensor_active_pct == pytest.approx(2.0)  # DCGM 4's *_RATIO spelling
    assert first.dram_active_pct is None  # DCGM_FP64_BLANK: no data
    assert first.name == "NVIDIA H100 80GB HBM3"
    b = series.gpu("GPU-b")
    assert b is not None and b.samples[0].util_pct is None  # NaN, escaped quotes in a label
    facts = series.facts()
    assert facts["gpu.duration_s"] == 15.0
    assert "gpu.tensor_cores" not in facts  # GPU-b has no name: its kind is not known


def test_exporter_broken_line_names_it() -> None:
    with pytest.raises(DcgmExporterError, match="line 2: not a Prometheus sample"):
        parse_dcgm_exporter('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 5\nDCGM_FI_DEV_GPU_UTIL{gpu="0" 5\n')
    with pytest.raises(DcgmExporterError, match="no DCGM_FI_"):
        parse_dcgm_exporter("DCGM_FI_PROF_SM_ACTIVE 0\n")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("#Entity   SMACT\nID\nGPU 0     fast\n", "broken dcgmi dmon output: line 3"),
        ('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 5\nDCGM_FI_X{\n', "broken dcgm-exporter text: line 2"),
    ],
)
def test_a_broken_file_is_one_line_naming_it(
    text: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "gpu.log"
    path.write_text(text)
    assert main(["report", "--metrics", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(f"tuneadvisor: {path}: ") and said in err


_RATIO = st.integers(min_value=0, max_value=1000).map(lambda n: n / 1000)


@settings(max_examples=40, deadline=None)
@given(
    rounds=st.lists(
        st.lists(st.tuples(_RATIO, _RATIO), min_size=2, max_size=2), min_size=1, max_size=6
    )
)
def test_dmon_and_exporter_read_the_same_rounds_alike(
    rounds: list[list[tuple[float, float]]],
) -> None:
    """The same two GPUs' SM and tensor ratios, written as dmon rows and as exporter scrapes
    appended to one file, read as the same samples per GPU in the same order."""
    dmon = ["#Entity   SMACT   TENSO", "ID"]
    prom = []
    for one in rounds:
        for index, (sm, tensor) in enumerate(one):
            dmon.append(f"GPU {index}     {sm:.3f}   {tensor:.3f}")
            prom.append(f'DCGM_FI_PROF_SM_ACTIVE{{gpu="{index}"}} {sm}')
            prom.append(f'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{gpu="{index}"}} {tensor}')
    a = parse_dcgmi_dmon("\n".join(dmon) + "\n")
    b = parse_dcgm_exporter("\n".join(prom) + "\n")
    for index in (0, 1):
        got_a, got_b = a.gpu(f"gpu{index}"), b.gpu(f"gpu{index}")
        assert got_a is not None and got_b is not None
        want = [(100 * r[index][0], 100 * r[index][1]) for r in rounds]
        for series in (got_a, got_b):
            assert len(series.samples) == len(want)
            for sample, (wx, wy) in zip(series.samples, want, strict=True):
                x, y = sample.sm_active_pct, sample.tensor_active_pct
                assert x is not None and y is not None  # 0 is a value, never no data
                assert x == pytest.approx(wx) and y == pytest.approx(wy)


@settings(max_examples=200, deadline=None)
@given(
    body=st.lists(
        st.one_of(
            st.sampled_from(["ID", "GPU 0  0.5  N/A", "GPU 1 1e309 -3", "GI 2 0.1 0.2", ""]),
            st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
        ),
        max_size=8,
    )
)
def test_hostile_text_is_the_format_error_or_a_series(body: list[str]) -> None:
    """Whatever follows a header, the readers answer with their own error (one line for the
    user) or a series, never another exception."""
    for head, parse, error in (
        ("#Entity   SMACT   TENSO", parse_dcgmi_dmon, DcgmDmonError),
        ('DCGM_FI_PROF_SM_ACTIVE{gpu="0"} 0.5', parse_dcgm_exporter, DcgmExporterError),
    ):
        text = "\n".join([head, *body])
        try:
            series = parse(text)
        except error:
            continue
        for sample in series.gpu_samples:
            for value in (sample.sm_active_pct, sample.tensor_active_pct):
                assert value is None or value == value  # never NaN


def test_metrics_read_names_each_kind_of_figure() -> None:
    from tuneadvisor.present.metrics_read import metrics_lines

    lines = metrics_lines(parse_dcgmi_dmon(DMON))
    assert lines[0].startswith("dcgmi dmon log: 2 GPUs")
    assert lines[1].startswith("figures: utilisation = share of time any kernel ran")
    gpu0 = next(line for line in lines if line.startswith("gpu0"))
    assert "utilisation mean 100 %" in gpu0 and "SM activity mean 12 %" in gpu0
    assert "tensor pipes mean 0.0 %" in gpu0 and "DRAM bandwidth mean 3.1 %" in gpu0
