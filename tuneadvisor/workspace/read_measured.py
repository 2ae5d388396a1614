"""What the measured run was: metrics files (watch recordings and nvidia-smi logs), what a
recording's header says its job was given, and the run record beside a profile that
`tuneadvisor run` wrote. The allocation facts are derived from these by the advisor."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tuneadvisor.advisor.measured_allocation import MeasuredAllocation
from tuneadvisor.errors import InputError
from tuneadvisor.files import is_regular_file, read_text_input

if TYPE_CHECKING:
    from tuneadvisor.metrics.model import MetricsSeries


def read_metrics(
    inputs: Sequence[str],
    columns: str | None = None,
    measured: list[MeasuredAllocation] | None = None,
) -> MetricsSeries | None:
    """Each file a watch recording, an nvidia-smi CSV log, ``dcgmi dmon`` output or a
    dcgm-exporter scrape (told apart by their first lines); ``columns``: the --query-gpu
    list for logs written without a header. ``measured`` gets what each recording's header
    says the watched job was given."""
    if not inputs:
        return None
    from tuneadvisor.metrics.model import merge_series
    from tuneadvisor.metrics.nvidia_smi_csv import NvidiaSmiCsvError, parse_nvidia_smi_csv
    from tuneadvisor.metrics.recording import RecordingError, parse_recording
    from tuneadvisor.metrics.recording import sniff as sniff_recording

    series = []
    for path in inputs:
        text = read_text_input(path, "metrics file")
        if sniff_recording(text):
            try:
                recording = parse_recording(text)
            except RecordingError as exc:
                raise InputError(path, f"broken tuneadvisor watch recording: {exc}") from None
            series.append(recording.series())
            header = recording.header
            if measured is not None and header is not None and header.job:
                measured.append(_from_header(header.job))
            continue
        dcgm = _read_dcgm(path, text)
        if dcgm is not None:
            series.append(dcgm)
            continue
        _refuse_other_formats(path, text)
        try:
            series.append(parse_nvidia_smi_csv(text, columns))
        except NvidiaSmiCsvError as exc:
            raise InputError(path, f"not an nvidia-smi --query-gpu CSV log: {exc}") from None
    if not series:
        return None
    return series[0] if len(series) == 1 else merge_series(series)


def _read_dcgm(path: str, text: str) -> MetricsSeries | None:
    """DCGM's own outputs as metrics (SM activity beside utilization), None for others."""
    from tuneadvisor.metrics import dcgm_dmon, dcgm_exporter

    if dcgm_dmon.sniff(text):
        try:
            return dcgm_dmon.parse_dcgmi_dmon(text)
        except dcgm_dmon.DcgmDmonError as exc:
            raise InputError(path, f"broken dcgmi dmon output: {exc}") from None
    if dcgm_exporter.sniff(text):
        try:
            return dcgm_exporter.parse_dcgm_exporter(text)
        except dcgm_exporter.DcgmExporterError as exc:
            raise InputError(path, f"broken dcgm-exporter text: {exc}") from None
    return None


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


def _refuse_other_formats(path: str, text: str) -> None:
    """A JSON or XML file given as --metrics: say what it is, not a CSV hint."""
    head = text.lstrip("\ufeff \t\r\n")[:64]
    if head.startswith(("{", "[")):
        raise InputError(
            path,
            f"is JSON, not an nvidia-smi CSV log, a DCGM log or a watch recording: {_HOW_TO_LOG}",
        )
    if head.startswith("<"):
        raise InputError(
            path,
            f"is XML (nvidia-smi -q -x?), not an nvidia-smi CSV log or a watch recording: "
            f"{_HOW_TO_LOG}",
        )
