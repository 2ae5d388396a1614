"""Bounded memory for long watches: the recent rounds at full resolution, older ones averaged.

``SnapshotStore`` keeps the last ``recent`` snapshots in a ring. A snapshot that falls out of
the ring is folded into a downsampled history of at most ``history`` buckets: each bucket
merges ``width`` consecutive rounds; when the history is full, neighbouring buckets are merged
pairwise and ``width`` doubles. Memory is therefore bounded by ``recent + history + 16``
snapshots whatever the length of the run, and the whole run stays drawable (coarser the
older it is). Merging averages rates (utilization, power, clocks, CPU) and keeps the peak of
levels that matter as peaks (memory, temperature, RSS, process and worker counts).
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import fields, replace
from typing import Any

from tuneadvisor.metrics.model import GpuSample, HostSample, MetricsSeries
from tuneadvisor.metrics.snapshot import Snapshot

_PENDING_MAX = 16
_PEAK = frozenset(
    {"mem_used_mib", "mem_total_mib", "temp_c", "proc_rss_mib", "proc_count", "workers"}
)
_GPU_NUMERIC = tuple(
    f.name
    for f in fields(GpuSample)
    if f.name not in {"t", "index", "uuid", "name", "pci_bus_id", "pstate"}
)
_HOST_NUMERIC = tuple(f.name for f in fields(HostSample) if f.name not in {"t", "cpu_pct_per_core"})


def _combine(name: str, values: Sequence[Any], weights: Sequence[float]) -> Any:
    present = [(v, w) for v, w in zip(values, weights, strict=True) if v is not None]
    if not present:
        return None
    if name in _PEAK:
        return max(v for v, _ in present)
    return statistics.fmean([v for v, _ in present], [w for _, w in present])


def merge_snapshots(snaps: Sequence[Snapshot], weights: Sequence[float] | None = None) -> Snapshot:
    """One snapshot standing for several consecutive ones (at the first one's time);
    ``weights``: how many rounds each already stands for (1 each by default)."""
    if len(snaps) == 1:
        return snaps[0]
    weights = [1.0] * len(snaps) if weights is None else list(weights)
    first, last = snaps[0], snaps[-1]
    by_gpu: dict[str, list[tuple[GpuSample, float]]] = {}
    for snap, weight in zip(snaps, weights, strict=True):
        for gpu in snap.gpus:
            by_gpu.setdefault(gpu.gpu_key, []).append((gpu, weight))
    gpus = tuple(
        replace(
            pairs[0][0],
            t=first.t,
            **{
                name: _combine(name, [getattr(g, name) for g, _ in pairs], [w for _, w in pairs])
                for name in _GPU_NUMERIC
            },
        )
        for pairs in by_gpu.values()
    )
    hosts = [(s.host, w) for s, w in zip(snaps, weights, strict=True) if s.host is not None]
    host = None
    if hosts:
        width = max(len(h.cpu_pct_per_core) for h, _ in hosts)
        full = [(h.cpu_pct_per_core, w) for h, w in hosts if len(h.cpu_pct_per_core) == width]
        cores: tuple[float, ...] = ()
        if full and width:
            cores = tuple(
                statistics.fmean([c[i] for c, _ in full], [w for _, w in full])
                for i in range(width)
            )
        host = replace(
            hosts[0][0],
            t=first.t,
            cpu_pct_per_core=cores,
            **{
                name: _combine(name, [getattr(h, name) for h, _ in hosts], [w for _, w in hosts])
                for name in _HOST_NUMERIC
            },
        )
    cpu = [s.sampler_cpu_pct for s in snaps if s.sampler_cpu_pct is not None]
    marks = [s.mark for s in snaps if s.mark]
    return Snapshot(
        t=first.t,
        gpus=gpus,
        gpu_procs=last.gpu_procs,
        host=host,
        procs=last.procs,
        no_data=last.no_data,
        sampler_cpu_pct=statistics.fmean(cpu) if cpu else None,
        mark=" | ".join(marks) if marks else None,
    )


class SnapshotStore:
    """The last ``recent`` rounds, and the whole run downsampled into ``history`` buckets."""

    def __init__(self, recent: int = 600, history: int = 512) -> None:
        if recent < 1 or history < 2:
            raise ValueError("recent >= 1 and history >= 2")
        self.recent: deque[Snapshot] = deque(maxlen=recent)
        self.history: list[Snapshot] = []
        self._history_cap = history
        self._pending: list[Snapshot] = []
        self._weights: list[float] = []  # rounds each pending snapshot stands for
        self.width = 1  # rounds per history bucket
        self.count = 0  # rounds ever added

    def add(self, snap: Snapshot) -> None:
        self.count += 1
        if len(self.recent) == self.recent.maxlen:
            self._fold(self.recent[0])
        self.recent.append(snap)

    def _fold(self, snap: Snapshot) -> None:
        """Into the bucket being filled; merged as it goes, so it never holds more than
        ``_PENDING_MAX`` snapshots however wide buckets have become."""
        self._pending.append(snap)
        self._weights.append(1.0)
        if len(self._pending) >= _PENDING_MAX:
            self._pending = [merge_snapshots(self._pending, self._weights)]
            self._weights = [sum(self._weights)]
        if sum(self._weights) < self.width:
            return
        self.history.append(merge_snapshots(self._pending, self._weights))
        self._pending, self._weights = [], []
        if len(self.history) >= self._history_cap:
            pairs = [self.history[i : i + 2] for i in range(0, len(self.history), 2)]
            self.history = [merge_snapshots(p) for p in pairs]
            self.width *= 2

    def timeline(self) -> list[Snapshot]:
        """The whole run, oldest first: history buckets, then the recent rounds."""
        pending = [merge_snapshots(self._pending, self._weights)] if self._pending else []
        return [*self.history, *pending, *self.recent]

    def window(self, seconds: float | None) -> list[Snapshot]:
        """Recent rounds within ``seconds`` of the newest (all recent ones for None)."""
        if seconds is None or not self.recent:
            return list(self.recent)
        start = self.recent[-1].t - seconds
        return [s for s in self.recent if s.t >= start]

    def __len__(self) -> int:
        return len(self.history) + (1 if self._pending else 0) + len(self.recent)


def to_series(snaps: Iterable[Snapshot], source: str = "watch") -> MetricsSeries:
    snaps = list(snaps)
    return MetricsSeries.from_samples(
        (g for s in snaps for g in s.gpus),
        (s.host for s in snaps if s.host is not None),
        source=source,
    )
