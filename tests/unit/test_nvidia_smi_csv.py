"""nvidia-smi --query-gpu CSV logs into the metrics model, and the model's statistics and facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuneadvisor.metrics.model import (
    GpuSample,
    HostSample,
    MetricsSeries,
    Stats,
    merge_series,
    percentile,
    share_below,
)
from tuneadvisor.metrics.nvidia_smi_csv import (
    NvidiaSmiCsvError,
    canonical_column,
    parse_nvidia_smi_csv,
    parse_timestamp,
    parse_value,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "nvidia-smi"
UUID0 = "GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"
UUID1 = "GPU-4404041a-04cf-1ccf-9e70-f139a9b1e23c"
BUSY_UTIL = [0, 97, 98, 100, 42, 99, 100, 96, 38, 99]
HEADER = "timestamp, index, utilization.gpu [%], memory.used [MiB]"
GOOD_ROW = "2024/01/31 12:00:01.000, 0, 5 %, 1 MiB"


def log(*rows: str) -> str:
    """A log with HEADER, the rows, and one good row after them (so none is a run's last)."""
    return "\n".join([HEADER, *rows, GOOD_ROW]) + "\n"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


# ------------------------------------------------------------------ the A100 node


def test_two_gpus_interleaved_are_two_series() -> None:
    series = parse_nvidia_smi_csv(read("a100-2gpu-one-idle.csv"))
    assert series.source == "nvidia-smi"
    assert [g.key for g in series.gpus] == [UUID0, UUID1]
    busy, idle = series.gpus
    assert (busy.index, busy.name, len(busy.samples)) == (0, "NVIDIA A100-SXM4-40GB", 10)
    assert (idle.index, idle.uuid) == (1, UUID1)
    assert [s.util_pct for s in busy.samples] == BUSY_UTIL
    assert series.notes == ()


def test_values_with_units() -> None:
    first = parse_nvidia_smi_csv(read("a100-2gpu-one-idle.csv")).gpus[0].samples[1]
    assert first == GpuSample(
        t=first.t,
        index=0,
        uuid=UUID0,
        name="NVIDIA A100-SXM4-40GB",
        util_pct=97,
        mem_util_pct=61,
        mem_used_mib=17935,
        mem_total_mib=40960,
        power_w=312.45,
        power_limit_w=400,
        temp_c=41,
        sm_clock_mhz=1410,
    )
    start = parse_timestamp("2024/01/31 12:34:56.789")
    assert first.t is not None and start is not None
    assert first.t - start == pytest.approx(1.001, abs=1e-6)


def test_facts_of_a_node_with_one_idle_gpu() -> None:
    facts = parse_nvidia_smi_csv(read("a100-2gpu-one-idle.csv")).facts()
    assert facts["gpu.count"] == 2
    assert facts["gpu.samples"] == 10  # per GPU, not the 20 rows of both
    assert facts["gpu.duration_s"] == pytest.approx(9 * 1.001, abs=1e-3)
    assert facts["gpu.interval_s"] == pytest.approx(1.001, abs=1e-3)
    assert facts["gpu.util.mean"] == pytest.approx(sum(BUSY_UTIL) / 20)
    assert facts["gpu.util.p50"] == 0
    assert facts["gpu.util.p95"] == 100
    assert facts["gpu.util.max"] == 100
    assert facts["gpu.idle_share"] == pytest.approx(11 / 20)  # 10 idle + the busy GPU's first
    assert facts["gpu.idle_count"] == 1
    assert facts["gpu.util.min_gpu_mean"] == 0
    assert facts["gpu.mem_used.max_mib"] == 17935
    assert facts["gpu.mem_total_mib"] == 40960
    assert facts["gpu.mem_used.max_pct"] == pytest.approx(100 * 17935 / 40960)
    assert facts["gpu.power_limit_w"] == 400
    assert facts["gpu.power.max_w"] == 329.55
    assert facts["gpu.temp.max_c"] == 54
    assert facts["gpu.mem_util.mean"] == pytest.approx(
        sum([0, 61, 63, 65, 22, 64, 66, 60, 19, 64]) / 20
    )


def test_per_gpu_statistics() -> None:
    busy, idle = parse_nvidia_smi_csv(read("a100-2gpu-one-idle.csv")).gpus
    stats = busy.stats("util_pct")
    assert stats is not None
    assert (stats.count, stats.min, stats.max) == (10, 0, 100)
    assert stats.mean == pytest.approx(76.9)
    assert stats.p50 == 97.5
    assert busy.share_below("util_pct", 50) == pytest.approx(0.3)
    assert idle.share_below("util_pct", 5) == 1.0
    assert idle.stats("mem_used_mib") == Stats(10, 4, 4, 4, 4, 4)


# ------------------------------------------------------------------ [N/A], subsets, order


def test_not_available_values_are_no_data() -> None:
    series = parse_nvidia_smi_csv(read("power-na.csv"))
    (gpu,) = series.gpus
    assert gpu.key == "gpu0" and gpu.name == "GRID A100D-20C"
    assert all(s.power_w is None and s.power_limit_w is None for s in gpu.samples)
    assert all(s.sm_clock_mhz is None for s in gpu.samples)  # [Not Supported]
    assert [s.util_pct for s in gpu.samples] == [12, 88, 91, 90, 87]
    facts = series.facts()
    for absent in ("gpu.power.mean_w", "gpu.power.max_w", "gpu.power_limit_w",
                   "gpu.sm_clock.mean_mhz", "gpu.mem_util.mean"):  # fmt: skip
        assert absent not in facts
    assert facts["gpu.util.mean"] == pytest.approx(73.6)
    assert facts["gpu.mem_total_mib"] == 20475


def test_noheader_nounits_with_column_list() -> None:
    columns = "timestamp,index,utilization.gpu,memory.used,memory.total,power.draw"
    series = parse_nvidia_smi_csv(read("noheader-nounits.csv"), columns)
    assert [g.key for g in series.gpus] == ["gpu0", "gpu1"]
    assert [s.util_pct for s in series.gpus[1].samples] == [95, 98, 40]
    assert series.gpus[0].samples[0].power_w == 312.45
    assert series.facts()["gpu.idle_share"] == 0
    same = parse_nvidia_smi_csv(read("noheader-nounits.csv"), columns.split(","))
    assert same == series


def test_noheader_without_columns_is_an_error() -> None:
    with pytest.raises(NvidiaSmiCsvError, match="line 1: 6 values and no header") as caught:
        parse_nvidia_smi_csv(read("noheader-nounits.csv"))
    # The message says exactly what to type.
    assert "--metrics-columns timestamp,index,utilization.gpu,memory.used" in str(caught.value)


def test_a_column_list_of_the_wrong_length_says_so() -> None:
    with pytest.raises(NvidiaSmiCsvError, match="6 values where the column list names 2"):
        parse_nvidia_smi_csv(read("noheader-nounits.csv"), "timestamp,index")


def test_header_in_text_wins_over_column_argument() -> None:
    series = parse_nvidia_smi_csv(read("power-na.csv"), columns="utilization.gpu")
    assert series.gpus[0].samples[0].temp_c == 38


def test_any_column_order_and_query_aliases() -> None:
    text = "clocks.current.sm [MHz], utilization.gpu [%], index\n1410 MHz, 55 %, 3\n"
    (sample,) = parse_nvidia_smi_csv(text).gpu_samples
    assert (sample.index, sample.util_pct, sample.sm_clock_mhz, sample.t) == (3, 55, 1410, None)
    aliased = parse_nvidia_smi_csv("3, 55, 1410\n", ["index", "utilization.gpu", "clocks.sm"])
    assert aliased.gpu_samples == (sample,)
    assert canonical_column("gpu_name") == "name"
    assert canonical_column("memory.used [MiB]") == "memory.used"


def test_memory_used_from_free_and_power_variants() -> None:
    text = (
        "index, memory.free [MiB], memory.total [MiB], power.draw.average [W], power.draw [W]\n"
        "0, 30960 MiB, 40960 MiB, 200.00 W, 250.00 W\n"
    )
    (sample,) = parse_nvidia_smi_csv(text).gpu_samples
    assert sample.mem_used_mib == 10000
    assert sample.power_w == 250  # power.draw ranks before power.draw.average


# ------------------------------------------------------------------ appended runs, cut lines


def test_repeated_header_and_cut_last_line() -> None:
    series = parse_nvidia_smi_csv(read("repeated-header.csv"))
    (gpu,) = series.gpus  # the second run did not ask for the uuid: still one GPU
    assert gpu.key == UUID0
    assert [s.util_pct for s in gpu.samples] == [35, 93, 95, 0, 71, 98]
    assert gpu.samples[3].mem_total_mib is None  # not queried by the second run
    assert series.notes == (
        "line 5: header repeated (several runs in one log)",
        f"line 6: GPU index 0 is {UUID0} seen earlier",
        "line 9: dropped a line cut short",
    )
    # the 10-minute pause between the runs is not sampling time
    assert series.facts()["gpu.duration_s"] == pytest.approx(4.0)


def test_line_cut_before_the_next_run_header() -> None:
    text = f"{HEADER}\n2024/01/31 12:00:00.000, 0, 50 %, 100 MiB\n2024/01/31 12:00:01.0\n{HEADER}\n"
    text += "2024/01/31 13:00:00.000, 0, 60 %, 100 MiB\n"
    series = parse_nvidia_smi_csv(text)
    assert [s.util_pct for s in series.gpu_samples] == [50, 60]
    assert "line 3: dropped a line cut short" in series.notes


def test_blank_lines_and_crlf_are_fine() -> None:
    text = f"\r\n{HEADER}\r\n\r\n2024/01/31 12:00:00.000, 0, 50 %, 100 MiB\r\n\r\n\r\n"
    assert len(parse_nvidia_smi_csv(text).gpu_samples) == 1


def test_nvidia_smi_messages_are_skipped_and_noted() -> None:
    message = "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error"
    series = parse_nvidia_smi_csv(log("2024/01/31 12:00:00.000, 0, 50 %, 100 MiB", message))
    assert len(series.gpu_samples) == 2
    assert series.notes[0].startswith("line 3: skipped nvidia-smi message 'Unable to determine")


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"no GPU samples \(an empty log, or only a header\)"),
        (f"{HEADER}\n", "no GPU samples"),
        ("No devices were found\n", "no GPU samples; nvidia-smi said: No devices were found"),
        (
            "Wed Feb  5 14:07:58 2025\n+-----+\n| NVIDIA-SMI 550.144.03   Driver Version\n",
            r"it is the plain nvidia-smi table \(one snapshot\): record one with nvidia-smi",
        ),
        (
            log("2024/01/31 12:00:00.000, 0, 50 %"),
            "line 2: 3 values where the header has 4",
        ),
        (
            log("2024/01/31 12:00:00.000, 0, lots, 1 MiB"),
            "line 2: utilization.gpu: 'lots' is not a number",
        ),
        (
            log("2024/01/31 12:00:00.000, 0, 5 %, 1 GiB"),
            "line 2: memory.used: unit 'GiB' where nvidia-smi writes 'MiB'",
        ),
        (
            log("31.01.2024 12:00, 0, 5 %, 1 MiB"),
            "line 2: timestamp: '31.01.2024 12:00' is not like 2024/01/31 12:34:56.789",
        ),
        (
            log("2024/01/31 12:00:00.000, zero, 5 %, 1 MiB"),
            "line 2: index: 'zero' is not a GPU index",
        ),
    ],
)
def test_bad_input(text: str, message: str) -> None:
    with pytest.raises(NvidiaSmiCsvError, match=message):
        parse_nvidia_smi_csv(text)


def test_single_column_log() -> None:
    series = parse_nvidia_smi_csv("utilization.gpu [%]\n45 %\n[N/A]\n")
    assert [s.util_pct for s in series.gpu_samples] == [45, None]


def test_empty_column_list_is_an_error() -> None:
    with pytest.raises(NvidiaSmiCsvError, match="the column list is empty"):
        parse_nvidia_smi_csv("1\n", columns=" , ")


@pytest.mark.parametrize(
    ("raw", "unit", "value"),
    [("45 %", "%", 45.0), ("45", "%", 45.0), ("250.00 W", "W", 250.0), ("[N/A]", "W", None),
     ("[Not Supported]", "MHz", None), ("[Unknown Error]", "%", None), ("", "%", None)],
)  # fmt: skip
def test_parse_value(raw: str, unit: str, value: float | None) -> None:
    assert parse_value(raw, unit) == value


# ------------------------------------------------------------------ the model itself


def test_stats_and_percentiles() -> None:
    assert Stats.of([]) is None
    assert Stats.of([None, None]) is None
    stats = Stats.of([4.0, None, 1.0, 3.0, 2.0])
    assert stats == Stats(count=4, mean=2.5, p50=2.5, p95=3.85, min=1.0, max=4.0)
    assert percentile([10.0], 95) == 10.0
    assert share_below([1.0, 10.0, None], 5) == 0.5
    assert share_below([None], 5) is None


def test_empty_series_has_no_facts() -> None:
    assert MetricsSeries().facts() == {}


def test_samples_without_values_give_counts_only() -> None:
    series = MetricsSeries.from_samples([GpuSample(index=0), GpuSample(index=0)])
    assert series.facts() == {"gpu.count": 1, "gpu.samples": 2}


def test_host_samples_facts() -> None:
    host = [
        HostSample(t=0.0, cpu_pct_per_core=(100.0, 50.0, 0.0, 0.0), proc_cpu_pct=100.0,
                   proc_rss_mib=2048.0, proc_count=1, mem_used_mib=10000.0),
        HostSample(t=1.0, cpu_pct_per_core=(100.0, 100.0, 100.0, 0.0), proc_cpu_pct=300.0,
                   proc_rss_mib=4096.0, proc_count=3, mem_used_mib=12000.0),
    ]  # fmt: skip
    facts = MetricsSeries(host=tuple(host)).facts()
    assert facts["host.samples"] == 2
    assert facts["host.duration_s"] == 1.0
    assert facts["host.cpu.count"] == 4
    assert facts["host.cpu.busy_cores.mean"] == 2.25
    assert facts["host.proc.cpu_cores.mean"] == 2.0
    assert facts["host.proc.rss.max_mib"] == 4096.0
    assert facts["host.proc.count.max"] == 3
    assert facts["host.mem_used.max_mib"] == 12000.0
    assert "gpu.count" not in facts


def test_host_sample_without_data() -> None:
    facts = MetricsSeries(host=(HostSample(),)).facts()
    assert facts == {"host.samples": 1}


def test_merge_series_of_two_nodes() -> None:
    a = parse_nvidia_smi_csv(read("a100-2gpu-one-idle.csv"))
    b = parse_nvidia_smi_csv(read("power-na.csv"))
    merged = merge_series([a, b])
    assert [g.key for g in merged.gpus] == [UUID0, UUID1, "gpu0"]
    assert merged.source == "nvidia-smi"
    assert merged.facts()["gpu.samples"] == min(len(g.samples) for g in merged.gpus) == 5
