"""The one sample model every metrics source produces, and the facts the advisor reads from it.

Sources (the live NVML sampler, the psutil host sampler, ``watch`` recordings, nvidia-smi CSV
logs) build ``GpuSample`` and ``HostSample`` values and wrap them in a ``MetricsSeries``. Every
measured value is optional: ``None`` means "no data" (not supported, not readable, not
recorded) and is skipped by the statistics, never treated as zero.

Units: times ``t`` in seconds on one clock per series (only differences matter), percentages
0-100 (``*_pct``, ``util``), shares 0-1 (``*_share``), memory in MiB, power in W, temperature
in degrees C, clocks in MHz, PCIe throughput in MiB/s.

Facts (absent when no sample carries the value):

- ``gpu.count`` GPUs seen; ``gpu.samples`` samples per GPU (the fewest any GPU has: rules
  ask for enough evidence about every GPU, and rows over four GPUs are not four times as
  much); ``gpu.duration_s`` first to last timestamp; ``gpu.interval_s`` median gap between a
  GPU's consecutive samples.
- ``gpu.util.mean|p50|p95|max`` (%), pooled over all GPUs; ``gpu.idle_share`` (0-1) share of
  samples with utilization under ``IDLE_UTIL_PCT``; ``gpu.util.min_gpu_mean`` (%) mean of the
  least busy GPU; ``gpu.idle_count`` GPUs whose mean utilization is under ``IDLE_UTIL_PCT``.
- ``gpu.mem_util.mean`` (%, memory controller busy); ``gpu.mem_used.max_mib``,
  ``gpu.mem_used.mean_mib``, ``gpu.mem_total_mib`` (largest GPU), ``gpu.mem_used.max_pct``.
- ``gpu.power.mean_w``, ``gpu.power.max_w``, ``gpu.power_limit_w``, ``gpu.temp.max_c``,
  ``gpu.sm_clock.mean_mhz``.
- ``host.samples``, ``host.duration_s``, ``host.cpu.count`` (cores seen),
  ``host.cpu.busy_cores.mean|p95`` (sum of per-core busy % / 100), ``host.mem_used.max_mib``,
  ``host.proc.cpu_cores.mean|p95`` (training process tree, 1.0 = one core busy),
  ``host.proc.rss.max_mib``, ``host.proc.count.max`` (processes in the tree: main + workers),
  ``host.proc.main_cpu_pct.mean`` (%, the main process alone: 100 = one core busy),
  ``host.proc.workers.max`` (DataLoader workers seen in the tree),
  ``host.proc.storage_read.mean_mib_s|max_mib_s`` (MiB/s the tree read from storage; absent,
  never 0, where ``/proc/PID/io`` could not be read).
- A watch recording's series adds what its rounds' process trees say (``proc_facts``:
  ``host.proc.workers.*`` states, ``host.proc.cpus_allowed*``, ``host.proc.affinity.*``).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, cast

from tuneadvisor.metrics.gpu_kinds import has_tensor_cores

FactValue = bool | int | float | str
Facts = dict[str, FactValue]

# "Idle" as nvidia-smi users read it: a busy training loop never drops under a few percent.
IDLE_UTIL_PCT = 5.0
# A gap this many typical intervals long is a pause (another run appended), not sampling.
PAUSE_INTERVALS = 5.0

GpuMetric = Literal[
    "util_pct",
    "mem_util_pct",
    "mem_used_mib",
    "mem_total_mib",
    "power_w",
    "power_limit_w",
    "temp_c",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "pcie_rx_mib_s",
    "pcie_tx_mib_s",
    "sm_active_pct",
    "sm_occupancy_pct",
    "tensor_active_pct",
    "dram_active_pct",
    "nvlink_rx_mib_s",
    "nvlink_tx_mib_s",
]


@dataclass(frozen=True, kw_only=True)
class GpuSample:
    """One reading of one GPU. Identity: ``uuid`` when known, else ``index``, else bus id."""

    t: float | None = None
    index: int | None = None
    uuid: str | None = None
    name: str | None = None
    pci_bus_id: str | None = None
    util_pct: float | None = None
    mem_util_pct: float | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    temp_c: float | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    pcie_rx_mib_s: float | None = None
    pcie_tx_mib_s: float | None = None
    pstate: str | None = None
    # What the SMs did (NVML's GPM on Hopper and newer, DCGM's profiling fields), beside
    # ``util_pct``, which is only the share of time at least one kernel ran: 0-100 %.
    sm_active_pct: float | None = None  # share of SMs busy (a warp assigned), averaged
    sm_occupancy_pct: float | None = None  # resident warps over the SMs' maximum
    tensor_active_pct: float | None = None  # tensor (HMMA and other MMA) pipes busy
    dram_active_pct: float | None = None  # device memory bandwidth used of its peak
    nvlink_rx_mib_s: float | None = None
    nvlink_tx_mib_s: float | None = None

    @property
    def gpu_key(self) -> str:
        if self.uuid:
            return self.uuid
        if self.index is not None:
            return f"gpu{self.index}"
        return self.pci_bus_id or "gpu"

    def value(self, metric: GpuMetric) -> float | None:
        return cast("float | None", getattr(self, metric))


@dataclass(frozen=True, kw_only=True)
class HostSample:
    """One reading of the host and of the training process tree (psutil)."""

    t: float | None = None
    cpu_pct_per_core: tuple[float, ...] = ()  # empty: no data
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    proc_cpu_pct: float | None = None  # whole tree; 100 = one core busy
    proc_rss_mib: float | None = None
    proc_count: int | None = None  # main process + DataLoader workers
    main_cpu_pct: float | None = None  # the main (training) process alone; 100 = one core
    workers: int | None = None  # DataLoader worker processes seen in the tree
    # the tree's storage reads (/proc/PID/io read_bytes: what came from storage, not from the
    # page cache), MiB/s over the round; None where a process's could not be read
    proc_read_mib_s: float | None = None

    @property
    def busy_cores(self) -> float | None:
        if not self.cpu_pct_per_core:
            return None
        return sum(self.cpu_pct_per_core) / 100.0

    @property
    def proc_cpu_cores(self) -> float | None:
        return None if self.proc_cpu_pct is None else self.proc_cpu_pct / 100.0


@dataclass(frozen=True)
class Stats:
    """Summary of the values that were present."""

    count: int
    mean: float
    p50: float
    p95: float
    min: float
    max: float

    @classmethod
    def of(cls, values: Iterable[float | None]) -> Stats | None:
        data = sorted(v for v in values if v is not None and math.isfinite(v))
        if not data:
            return None
        return cls(
            count=len(data),
            mean=statistics.fmean(data),
            p50=percentile(data, 50),
            p95=percentile(data, 95),
            min=data[0],
            max=data[-1],
        )


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), on sorted data."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    pos = (len(sorted_values) - 1) * pct / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def share_below(values: Iterable[float | None], threshold: float) -> float | None:
    """Share (0-1) of the present values under ``threshold``; None when none is present."""
    data = [v for v in values if v is not None]
    if not data:
        return None
    return sum(1 for v in data if v < threshold) / len(data)


def _span(times: Iterable[float | None]) -> float | None:
    present = [t for t in times if t is not None]
    return max(present) - min(present) if present else None


@dataclass(frozen=True)
class GpuSeries:
    """The samples of one GPU, in recorded order."""

    key: str
    samples: tuple[GpuSample, ...]

    def _first(self, get: Callable[[GpuSample], str | int | None]) -> str | int | None:
        return next((v for v in map(get, self.samples) if v is not None), None)

    @property
    def index(self) -> int | None:
        return cast("int | None", self._first(lambda s: s.index))

    @property
    def uuid(self) -> str | None:
        return cast("str | None", self._first(lambda s: s.uuid))

    @property
    def name(self) -> str | None:
        return cast("str | None", self._first(lambda s: s.name))

    def values(self, metric: GpuMetric) -> list[float | None]:
        return [s.value(metric) for s in self.samples]

    def stats(self, metric: GpuMetric) -> Stats | None:
        return Stats.of(self.values(metric))

    def share_below(self, metric: GpuMetric, threshold: float) -> float | None:
        return share_below(self.values(metric), threshold)

    @property
    def duration_s(self) -> float | None:
        """Time covered by sampling; pauses between runs appended to one log do not count."""
        times = [s.t for s in self.samples if s.t is not None]
        if not times:
            return None
        gaps = self.intervals_s()
        if not gaps:
            return 0.0
        longest = PAUSE_INTERVALS * statistics.median(gaps)
        return sum(g for g in gaps if g <= longest)

    def intervals_s(self) -> list[float]:
        times = [s.t for s in self.samples if s.t is not None]
        return [b - a for a, b in itertools.pairwise(times) if b > a]


@dataclass(frozen=True)
class MetricsSeries:
    """Everything one metrics input recorded: per-GPU sample lists and host samples."""

    gpus: tuple[GpuSeries, ...] = ()
    host: tuple[HostSample, ...] = ()
    source: str = ""  # "nvidia-smi", "nvml", "recording", ...
    notes: tuple[str, ...] = ()  # what the reader skipped or guessed, for the evidence
    # What only the process tree of each round says (the DataLoader workers' states, the CPUs
    # the processes may run on: loader_waits.py, affinity.py), computed by the reader of a
    # watch recording, so that `report --metrics` reads what the replay's rules read.
    proc_facts: tuple[tuple[str, FactValue], ...] = ()

    @classmethod
    def from_samples(
        cls,
        gpu_samples: Iterable[GpuSample],
        host_samples: Iterable[HostSample] = (),
        *,
        source: str = "",
        notes: Iterable[str] = (),
    ) -> MetricsSeries:
        from tuneadvisor.metrics.plausible import Dropped, in_range

        grouped: dict[str, list[GpuSample]] = {}  # insertion order = first appearance
        dropped = Dropped()  # every reader's values no device reports (issue 34)
        for sample in in_range(gpu_samples, dropped):
            grouped.setdefault(sample.gpu_key, []).append(sample)
        gpus = tuple(GpuSeries(key, tuple(samples)) for key, samples in grouped.items())
        said = dropped.note()
        return cls(gpus, tuple(host_samples), source, (*notes, *([said] if said else [])))

    @property
    def gpu_samples(self) -> tuple[GpuSample, ...]:
        return tuple(s for gpu in self.gpus for s in gpu.samples)

    def gpu(self, key: str) -> GpuSeries | None:
        return next((g for g in self.gpus if g.key == key), None)

    def gpu_stats(self, metric: GpuMetric) -> Stats | None:
        """Pooled over all GPUs."""
        return Stats.of(s.value(metric) for s in self.gpu_samples)

    def gpu_share_below(self, metric: GpuMetric, threshold: float) -> float | None:
        return share_below((s.value(metric) for s in self.gpu_samples), threshold)

    @property
    def gpu_duration_s(self) -> float | None:
        durations = [d for d in (g.duration_s for g in self.gpus) if d is not None]
        return max(durations) if durations else None

    @property
    def host_duration_s(self) -> float | None:
        return _span(s.t for s in self.host)

    def facts(self) -> Facts:
        facts: Facts = {}
        if self.gpus:
            facts.update(_gpu_facts(self))
        if self.host:
            facts.update(_host_facts(self.host))
        facts.update(self.proc_facts)
        return facts


# Several recordings' process facts are not pooled: each round's workers and CPUs belong to
# one node's tree, and a share or a CPU count of two nodes' trees is neither node's.
NOT_POOLED = (
    "the process-tree facts (DataLoader workers' states, CPU binding) of several recordings "
    "are not pooled: give one recording for them"
)


def merge_series(series: Iterable[MetricsSeries]) -> MetricsSeries:
    """One series from several inputs (several ``--metrics`` files of one job); the process
    facts of the one input that has them (a recording beside an nvidia-smi log), none where
    several have them."""
    parts = list(series)
    with_proc = [p.proc_facts for p in parts if p.proc_facts]
    merged = MetricsSeries.from_samples(
        (s for part in parts for s in part.gpu_samples),
        (h for part in parts for h in part.host),
        source="+".join(dict.fromkeys(p.source for p in parts if p.source)),
        notes=(
            *(n for p in parts for n in p.notes),
            *([NOT_POOLED] if len(with_proc) > 1 else []),
        ),
    )
    if len(with_proc) == 1:
        return dataclasses.replace(merged, proc_facts=with_proc[0])
    return merged


def _put(facts: Facts, name: str, value: float | None) -> None:
    """Absent, not zero, when there was no data."""
    if value is not None:
        facts[name] = value


def _gpu_facts(series: MetricsSeries) -> Facts:
    facts: Facts = {
        "gpu.count": len(series.gpus),
        "gpu.samples": min(len(gpu.samples) for gpu in series.gpus),
    }
    _put(facts, "gpu.duration_s", series.gpu_duration_s)
    gaps = [gap for gpu in series.gpus for gap in gpu.intervals_s()]
    _put(facts, "gpu.interval_s", statistics.median(gaps) if gaps else None)
    util = series.gpu_stats("util_pct")
    if util is not None:
        facts.update(
            {
                "gpu.util.mean": util.mean,
                "gpu.util.p50": util.p50,
                "gpu.util.p95": util.p95,
                "gpu.util.max": util.max,
            }
        )
        _put(facts, "gpu.idle_share", series.gpu_share_below("util_pct", IDLE_UTIL_PCT))
        means = [st.mean for st in (g.stats("util_pct") for g in series.gpus) if st]
        facts["gpu.util.min_gpu_mean"] = min(means)
        facts["gpu.idle_count"] = sum(1 for m in means if m < IDLE_UTIL_PCT)
        # The GPUs that worked, pooled: an idle one (some-gpus-idle's) does not pull it down.
        busy = [
            s.value("util_pct")
            for g in series.gpus
            if (st := g.stats("util_pct")) is not None and st.mean >= IDLE_UTIL_PCT
            for s in g.samples
        ]
        busy_stats = Stats.of(busy)
        facts["gpu.util.busy_mean"] = busy_stats.mean if busy_stats else util.mean
    _put_stat(facts, "gpu.mem_util.mean", series.gpu_stats("mem_util_pct"), "mean")
    mem = series.gpu_stats("mem_used_mib")
    _put_stat(facts, "gpu.mem_used.max_mib", mem, "max")
    _put_stat(facts, "gpu.mem_used.mean_mib", mem, "mean")
    _put_stat(facts, "gpu.mem_total_mib", series.gpu_stats("mem_total_mib"), "max")
    used_pct = Stats.of(_mem_used_pct(s) for s in series.gpu_samples)
    _put_stat(facts, "gpu.mem_used.max_pct", used_pct, "max")
    power = series.gpu_stats("power_w")
    _put_stat(facts, "gpu.power.mean_w", power, "mean")
    _put_stat(facts, "gpu.power.max_w", power, "max")
    _put_stat(facts, "gpu.power_limit_w", series.gpu_stats("power_limit_w"), "max")
    _put_stat(facts, "gpu.temp.max_c", series.gpu_stats("temp_c"), "max")
    _put_stat(facts, "gpu.sm_clock.mean_mhz", series.gpu_stats("sm_clock_mhz"), "mean")
    facts.update(activity_facts(series))
    return facts


def _counted(series: MetricsSeries) -> list[GpuSeries]:
    """The GPUs whose activity figures count: not idle by utilization (an idle GPU of several
    is some-gpus-idle's and would pull the means down), else with any SM activity."""
    with_activity = [g for g in series.gpus if any(_has_activity(s) for s in g.samples)]
    busy = []
    for gpu in with_activity:
        util, sm = gpu.stats("util_pct"), gpu.stats("sm_active_pct")
        if (util.mean >= IDLE_UTIL_PCT) if util is not None else (sm is None or sm.mean >= 1.0):
            busy.append(gpu)
    return busy or with_activity


def _has_activity(sample: GpuSample) -> bool:
    return any(sample.value(m) is not None for m in ACTIVITY_METRICS)


ACTIVITY_METRICS: tuple[GpuMetric, ...] = (
    "sm_active_pct",
    "sm_occupancy_pct",
    "tensor_active_pct",
    "dram_active_pct",
)


def activity_facts(series: MetricsSeries) -> Facts:
    """``gpu.sm_active.*``, ``gpu.tensor_active.*``, ``gpu.dram_active.*`` (the busy GPUs'
    samples pooled), ``gpu.activity.samples``, link traffic and ``gpu.tensor_cores``."""
    facts: Facts = {}
    counted = _counted(series)
    if counted:
        facts["gpu.activity.samples"] = min(
            sum(1 for s in g.samples if _has_activity(s)) for g in counted
        )
        pooled = [s for g in counted for s in g.samples]

        def stats(metric: GpuMetric) -> Stats | None:
            return Stats.of(s.value(metric) for s in pooled)

        sm, tensor, dram = (
            stats("sm_active_pct"),
            stats("tensor_active_pct"),
            stats("dram_active_pct"),
        )
        _put_stat(facts, "gpu.sm_active.mean", sm, "mean")
        _put_stat(facts, "gpu.sm_active.p95", sm, "p95")
        _put_stat(facts, "gpu.sm_occupancy.mean", stats("sm_occupancy_pct"), "mean")
        _put_stat(facts, "gpu.tensor_active.mean", tensor, "mean")
        _put_stat(facts, "gpu.tensor_active.max", tensor, "max")
        _put_stat(facts, "gpu.dram_active.mean", dram, "mean")
        _put_stat(facts, "gpu.dram_active.p95", dram, "p95")
    samples = series.gpu_samples
    _put_stat(facts, "gpu.pcie.mean_mib_s", Stats.of(map(_pcie, samples)), "mean")
    _put_stat(facts, "gpu.nvlink.mean_mib_s", Stats.of(map(_nvlink, samples)), "mean")
    kinds = {has_tensor_cores(g.name) for g in series.gpus}
    if kinds and None not in kinds:
        facts["gpu.tensor_cores"] = all(kinds)
    return facts


def _both(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def _pcie(sample: GpuSample) -> float | None:
    return _both(sample.pcie_rx_mib_s, sample.pcie_tx_mib_s)


def _nvlink(sample: GpuSample) -> float | None:
    return _both(sample.nvlink_rx_mib_s, sample.nvlink_tx_mib_s)


def _put_stat(
    facts: Facts, name: str, stats: Stats | None, which: Literal["mean", "p95", "max"]
) -> None:
    if stats is not None:
        facts[name] = cast(float, getattr(stats, which))


def _mem_used_pct(sample: GpuSample) -> float | None:
    if sample.mem_used_mib is None or not sample.mem_total_mib:
        return None
    return 100.0 * sample.mem_used_mib / sample.mem_total_mib


def _host_facts(host: Sequence[HostSample]) -> Facts:
    facts: Facts = {"host.samples": len(host)}
    _put(facts, "host.duration_s", _span(h.t for h in host))
    cores = max(len(h.cpu_pct_per_core) for h in host)
    if cores:
        facts["host.cpu.count"] = cores
    busy = Stats.of(h.busy_cores for h in host)
    _put_stat(facts, "host.cpu.busy_cores.mean", busy, "mean")
    _put_stat(facts, "host.cpu.busy_cores.p95", busy, "p95")
    _put_stat(facts, "host.mem_used.max_mib", Stats.of(h.mem_used_mib for h in host), "max")
    proc = Stats.of(h.proc_cpu_cores for h in host)
    _put_stat(facts, "host.proc.cpu_cores.mean", proc, "mean")
    _put_stat(facts, "host.proc.cpu_cores.p95", proc, "p95")
    _put_stat(facts, "host.proc.rss.max_mib", Stats.of(h.proc_rss_mib for h in host), "max")
    counts = [h.proc_count for h in host if h.proc_count is not None]
    if counts:
        facts["host.proc.count.max"] = max(counts)
    main = Stats.of(h.main_cpu_pct for h in host)
    _put_stat(facts, "host.proc.main_cpu_pct.mean", main, "mean")
    workers = [h.workers for h in host if h.workers is not None]
    if workers:
        facts["host.proc.workers.max"] = max(workers)
    read = Stats.of(h.proc_read_mib_s for h in host)
    _put_stat(facts, "host.proc.storage_read.mean_mib_s", read, "mean")
    _put_stat(facts, "host.proc.storage_read.max_mib_s", read, "max")
    return facts
