"""DCGM readers on odd but valid input (issue 34, classes 4, 6 and 8): any number of GPUs is
read up to a bound and the rest counted in a note; timestamps of any length and Unicode
digits end in a result or one DcgmExporterError/DcgmDmonError, never another exception; a
value no device reports is dropped with a note. Built from generators, not from one file."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tuneadvisor.metrics import plausible
from tuneadvisor.metrics.dcgm_dmon import DcgmDmonError, parse_dcgmi_dmon
from tuneadvisor.metrics.dcgm_exporter import DcgmExporterError, parse_dcgm_exporter

HOSTILE = st.sampled_from(
    ["-50", "1e20", "100", "0", "9" * 400, "²", "٣" * 50, "nan", "-1e308", "55.5"]
)
INDEX = st.one_of(st.integers(0, 10_000).map(str), st.sampled_from(["²", "٣" * 5000, "9" * 400]))


def _dmon(rows: list[tuple[str, str, str]]) -> str:
    head = "#Entity   GPUTL  FBUSD  FBTTL\nID\n"
    return head + "".join(f"GPU {i}  {u}  {m}  80000\n" for i, u, m in rows)


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(INDEX, HOSTILE, HOSTILE), min_size=1, max_size=40))
def test_dmon_reads_what_a_device_reports_or_refuses_in_one_error(
    rows: list[tuple[str, str, str]],
) -> None:
    try:
        series = parse_dcgmi_dmon(_dmon(rows))
    except DcgmDmonError:
        return
    for sample in series.gpu_samples:
        assert plausible.out_of_range(sample) == []
        assert sample.index is None or 0 <= sample.index < 10**9


def _exporter(rows: list[tuple[str, str, str]]) -> str:
    return "".join(
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="{i}",UUID="GPU-{n}"}} {u} {t}\n'
        for n, (i, u, t) in enumerate(rows)
    )


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(INDEX, HOSTILE, st.sampled_from(["", "1700000000000", "9" * 400, "-5"])),
        min_size=1,
        max_size=40,
    )
)
def test_exporter_reads_what_a_device_reports_or_refuses_in_one_error(
    rows: list[tuple[str, str, str]],
) -> None:
    try:
        series = parse_dcgm_exporter(_exporter(rows))
    except DcgmExporterError as exc:
        assert "\n" not in str(exc)
        return
    for sample in series.gpu_samples:
        assert plausible.out_of_range(sample) == []


@given(gpus=st.integers(plausible.MAX_GPUS + 1, 3 * plausible.MAX_GPUS), rounds=st.integers(1, 3))
@settings(max_examples=10, deadline=None)
def test_more_gpus_than_any_node_has_are_dropped_and_counted(gpus: int, rounds: int) -> None:
    rows = [(str(i), "50", "1000") for _ in range(rounds) for i in range(gpus)]
    series = parse_dcgmi_dmon(_dmon(rows))
    assert len(series.gpus) == plausible.MAX_GPUS
    dropped = (gpus - plausible.MAX_GPUS) * rounds
    assert any(f"{dropped:,} samples dropped" in note for note in series.notes), series.notes
    text = _exporter([(str(i), "50", "") for i in range(gpus)])
    assert len(parse_dcgm_exporter(text).gpus) == plausible.MAX_GPUS


def test_samples_past_the_bound_are_dropped_and_counted(monkeypatch: object) -> None:
    bound = plausible.GpuBound(most_gpus=2, most_samples=5)
    kept = [bound.admit(str(i % 3)) for i in range(9)]
    assert kept.count(True) == 5 and bound.dropped_samples == 4
    assert "more than 2 GPUs and more than 5 samples" in str(bound.note())


def test_a_value_no_device_reports_is_dropped_with_a_note() -> None:
    series = parse_dcgmi_dmon(_dmon([("0", "-50", "1e20"), ("0", "40", "1000")]))
    utils = [s.util_pct for s in series.gpu_samples]
    assert utils == [None, 40.0]
    assert [s.mem_used_mib for s in series.gpu_samples] == [None, 1000.0]
    assert any("util_pct (1), mem_used_mib (1)" in note for note in series.notes), series.notes


_CSV_HEAD = (
    "timestamp, index, name, uuid, utilization.gpu [%], memory.used [MiB], memory.total [MiB]\n"
)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.one_of(st.floats(-1e30, 1e30, allow_nan=False), st.sampled_from([-50.0, 101.0])),
            st.one_of(st.floats(-1e30, 1e30, allow_nan=False), st.just(1e20)),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_every_metrics_reader_drops_what_no_device_reports(
    rows: list[tuple[float, float]],
) -> None:
    """Issue 34, class 8: a utilization of -50 % raised gpu-idle, a memory peak showed as
    1e20 %. nvidia-smi CSV (as every reader, through MetricsSeries.from_samples): any value
    kept is one a device reports, and each one dropped is counted in a note."""
    from tuneadvisor.metrics.nvidia_smi_csv import parse_nvidia_smi_csv

    text = _CSV_HEAD + "".join(
        f"2024/01/31 12:34:{i % 60:02d}.000, 0, A100, GPU-1, {u:f} %, {m:f} MiB, 40960 MiB\n"
        for i, (u, m) in enumerate(rows)
    )
    series = parse_nvidia_smi_csv(text)
    dropped = 0
    for sample, (util, _) in zip(series.gpu_samples, rows, strict=True):
        assert plausible.out_of_range(sample) == []
        written = float(f"{util:f}")  # as the CSV holds it
        assert sample.util_pct == (written if 0 <= written <= 100 else None)
        dropped += sample.util_pct is None
    if dropped:
        assert any(f"util_pct ({dropped})" in note for note in series.notes), series.notes
