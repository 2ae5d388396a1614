"""What the measured run was: metrics files (watch recordings and nvidia-smi logs), what a
recording's header says its job was given, and the run record beside a profile that
`tuneadvisor run` wrote. The allocation facts are derived from these by the advisor."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tuneadvisor.advisor.measured_allocation import MeasuredAllocation
from tuneadvisor.errors import InputError
from tuneadvisor.files import is_regular_file, read_text_input
from tuneadvisor.records import record

if TYPE_CHECKING:
    from tuneadvisor.metrics.model import MetricsSeries


@record
class MetricsFormat:
    """One kind of --metrics file: recognised by its first lines (``sniff``, on the text
    read bounded), then read whole (``read``: a file of the kind that is broken is one
    InputError naming it). The formats are tried in the order of ``METRICS_FORMATS``; a new
    kind is one entry there."""

    name: str
    sniff: Callable[[str], bool]
    read: Callable[[str, str, _Wanted], MetricsSeries]


@record
class _Wanted:
    """What a metrics read is asked for (headerless nvidia-smi columns, the allocation)."""

    columns: str | None  # the --query-gpu list of nvidia-smi logs written without a header
    measured: (
        list[MeasuredAllocation] | None
    )  # gets what a recording's header says the job was given


def read_metrics(
    inputs: Sequence[str],
    columns: str | None = None,
    measured: list[MeasuredAllocation] | None = None,
) -> MetricsSeries | None:
    """Each file a watch recording, an nvidia-smi CSV log, ``dcgmi dmon`` output or a
    dcgm-exporter scrape (told apart by their first lines: ``METRICS_FORMATS``);
    ``columns``: the --query-gpu list for logs written without a header. ``measured`` gets
    what each recording's header says the watched job was given."""
    if not inputs:
        return None
    from tuneadvisor.metrics.model import merge_series

    wanted = _Wanted(columns, measured)
    series = []
    for path in inputs:
        text = read_text_input(path, "metrics file")
        kind = next(f for f in METRICS_FORMATS if f.sniff(text))
        series.append(kind.read(path, text, wanted))
    if not series:
        return None
    return series[0] if len(series) == 1 else merge_series(series)


def _is_recording(text: str) -> bool:
    from tuneadvisor.metrics.recording import sniff

    return sniff(text)


def _read_recording(path: str, text: str, wanted: _Wanted) -> MetricsSeries:
    from tuneadvisor.metrics.recording import RecordingError, parse_recording

    try:
        recording = parse_recording(text)
    except RecordingError as exc:
        raise InputError(path, f"broken tuneadvisor watch recording: {exc}") from None
    header = recording.header
    if wanted.measured is not None and header is not None and header.job:
        wanted.measured.append(_from_header(header.job))
    return recording.series()


def _is_dcgmi_dmon(text: str) -> bool:
    from tuneadvisor.metrics import dcgm_dmon

    return dcgm_dmon.sniff(text)


def _read_dcgmi_dmon(path: str, text: str, wanted: _Wanted) -> MetricsSeries:
    """DCGM's own outputs as metrics (SM activity beside utilization)."""
    from tuneadvisor.metrics import dcgm_dmon

    try:
        return dcgm_dmon.parse_dcgmi_dmon(text)
    except dcgm_dmon.DcgmDmonError as exc:
        raise InputError(path, f"broken dcgmi dmon output: {exc}") from None


def _is_dcgm_exporter(text: str) -> bool:
    from tuneadvisor.metrics import dcgm_exporter

    return dcgm_exporter.sniff(text)


def _read_dcgm_exporter(path: str, text: str, wanted: _Wanted) -> MetricsSeries:
    from tuneadvisor.metrics import dcgm_exporter

    try:
        return dcgm_exporter.parse_dcgm_exporter(text)
    except dcgm_exporter.DcgmExporterError as exc:
        raise InputError(path, f"broken dcgm-exporter text: {exc}") from None


def _is_other_format(text: str) -> bool:
    """JSON or XML that is none of the above: said for what it is, not with a CSV hint."""
    return text.lstrip("\ufeff \t\r\n")[:64].startswith(("{", "[", "<"))


def _read_nvidia_smi_csv(path: str, text: str, wanted: _Wanted) -> MetricsSeries:
    from tuneadvisor.metrics.nvidia_smi_csv import NvidiaSmiCsvError, parse_nvidia_smi_csv

    try:
        return parse_nvidia_smi_csv(text, wanted.columns)
    except NvidiaSmiCsvError as exc:
        raise InputError(path, f"not an nvidia-smi --query-gpu CSV log: {exc}") from None


def _anything(text: str) -> bool:
    return True


def _from_header(job: Mapping[str, object]) -> MeasuredAllocation:
    cpus, mem = job.get("job.cpus_per_task"), job.get("job.mem_mib")
    return MeasuredAllocation(
        "this recording",
        cpus if isinstance(cpus, int) and not isinstance(cpus, bool) else None,
        float(mem) if isinstance(mem, int | float) and not isinstance(mem, bool) else None,
    )


def run_record_beside(profile: str) -> tuple[MeasuredAllocation | None, dict[str, object]]:
    """What the ``tuneadvisor run`` that wrote this profile (its run.json is beside it) was
    given (cores, workers) and its ``run.*`` facts (batch size, steady rate), from one read;
    (None, {}) for a profile of anything else. Read as every input is (bounded, a regular
    file only: a FIFO there would block): what is not a readable run record is no record."""
    from tuneadvisor.runrecord import RECORD_NAME

    path = Path(profile).parent / RECORD_NAME
    if not is_regular_file(path):
        return None, {}
    from tuneadvisor.runrecord.record import read_record

    try:
        record = read_record(path)
    except InputError:
        return None, {}
    cpus = record.settings.cpus_per_task
    workers = record.settings.knobs.get("num_workers")
    measured = MeasuredAllocation(
        "this profile",
        cpus if isinstance(cpus, int) and not isinstance(cpus, bool) and cpus > 0 else None,
        None,
        workers if isinstance(workers, int) and not isinstance(workers, bool) else None,
    )
    return measured, record.facts()


_HOW_TO_LOG = (
    "log with nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv -l 1"
)


def _refuse_other_format(path: str, text: str, wanted: _Wanted) -> MetricsSeries:
    """A JSON or XML file given as --metrics: say what it is, not a CSV hint."""
    head = text.lstrip("\ufeff \t\r\n")[:64]
    if head.startswith(("{", "[")):
        raise InputError(
            path,
            f"is JSON, not an nvidia-smi CSV log, a DCGM log or a watch recording: {_HOW_TO_LOG}",
        )
    raise InputError(
        path,
        f"is XML (nvidia-smi -q -x?), not an nvidia-smi CSV log or a watch recording: "
        f"{_HOW_TO_LOG}",
    )


METRICS_FORMATS: tuple[MetricsFormat, ...] = (
    MetricsFormat("tuneadvisor watch recording", _is_recording, _read_recording),
    MetricsFormat("dcgmi dmon output", _is_dcgmi_dmon, _read_dcgmi_dmon),
    MetricsFormat("dcgm-exporter text", _is_dcgm_exporter, _read_dcgm_exporter),
    MetricsFormat("JSON or XML of another kind", _is_other_format, _refuse_other_format),
    # last: a CSV log is told by no first line of its own (a noheader log has none)
    MetricsFormat("nvidia-smi --query-gpu CSV log", _anything, _read_nvidia_smi_csv),
)
