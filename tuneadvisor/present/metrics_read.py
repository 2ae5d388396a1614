"""What a report read from the metrics it was given (an nvidia-smi log, a watch recording):
GPUs, samples, interval and span, per-GPU utilisation and memory, and for recordings the
cores and memory the job's processes used. Findings alone would not show that the file was
read, or read as the user meant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tuneadvisor.metrics.figures import has_activity
from tuneadvisor.present.gpu_figures import KINDS_LINE, activity_parts

# The metrics model (and statistics, decimal, fractions with it) loads only when a report
# has metrics: `report PROFILE` stays as quick to start as line_profiler's own viewer.
if TYPE_CHECKING:
    from tuneadvisor.metrics.model import GpuSeries, MetricsSeries


_UTIL_ONLY = "figures: utilisation = share of time any kernel ran (one busy SM reads 100 %)"


def source_label(source: str) -> str:
    """What kind of file the metrics came from, in a report's words."""
    return {
        "nvidia-smi": "nvidia-smi log",
        "recording": "watch recording",
        "dcgmi-dmon": "dcgmi dmon log",
        "dcgm-exporter": "dcgm-exporter scrape",
    }.get(source, source or "metrics")


def _number(value: float) -> str:
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def _span(seconds: float | None) -> str:
    if seconds is None:
        return "no timestamps"
    if seconds >= 120:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.1f} s"


def _gpu_line(gpu: GpuSeries) -> str:
    name = f" ({gpu.name})" if gpu.name else ""
    parts = [f"{gpu.key}{name}: {len(gpu.samples)} samples"]
    util = gpu.stats("util_pct")
    parts.append(
        "utilisation no data" if util is None else f"utilisation mean {_number(util.mean)} %"
    )
    parts += activity_parts(gpu)
    used = gpu.stats("mem_used_mib")
    total = gpu.stats("mem_total_mib")
    if used is not None:
        of = f" of {total.max:.0f}" if total is not None else ""
        parts.append(f"memory peak {used.max:.0f}{of} MiB")
    return ", ".join(parts)


def _interval(gpus: Sequence[GpuSeries]) -> str | None:
    import statistics

    gaps = [gap for gpu in gpus for gap in gpu.intervals_s()]
    return f"every {statistics.median(gaps):.2g} s" if gaps else None


def metrics_lines(series: MetricsSeries) -> list[str]:
    """The lines of a report's "Metrics read" section (without the heading)."""
    kind = source_label(series.source)
    head = f"{kind}: {len(series.gpus)} GPU{'s' if len(series.gpus) != 1 else ''}"
    interval = _interval(series.gpus)
    spans = [s for s in (series.gpu_duration_s, series.host_duration_s) if s is not None]
    head += f", sampled {interval}" if interval else ""
    head += f" over {_span(max(spans))}" if spans else ""
    out = [head, KINDS_LINE if has_activity(series) else _UTIL_ONLY]
    out += [_gpu_line(gpu) for gpu in series.gpus]
    if series.host:
        out.append(_host_line(series))
    out += [f"note: {note}" for note in series.notes]
    return out


def _host_line(series: MetricsSeries) -> str:
    from tuneadvisor.metrics.model import Stats

    cores = Stats.of(s.proc_cpu_cores for s in series.host)
    rss = Stats.of(s.proc_rss_mib for s in series.host)
    parts = [f"host: {len(series.host)} samples"]
    if cores is not None:
        parts.append(f"the job's processes used {cores.mean:.2f} cores (mean)")
    if rss is not None:
        parts.append(f"RSS peak {rss.max:.0f} MiB")
    read = Stats.of(s.proc_read_mib_s for s in series.host)
    if read is not None:  # none where /proc/PID/io could not be read: nothing said
        parts.append(f"read from storage {read.mean:,.1f} MiB/s (mean), {read.max:,.1f} peak")
    return ", ".join(parts)
