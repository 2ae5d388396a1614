"""What a torch.profiler trace says, as the rest of tuneadvisor sees it.

The reader (``reader.py``) streams one trace file per rank and keeps only what these values
need: memory grows with the number of steps and named kernels, never with the trace's size.
The breakdown follows the TensorBoard plugin's overview: each ``ProfilerStep#N`` extends to
its step's last device activity, and every microsecond of a step goes to the first kind, in
``KINDS`` order, that was busy then; what no kind covers is ``idle``.

Fields may be added (with defaults); none is renamed or removed without changing every user.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

# The plugin's priority: a microsecond counts once, for the first kind busy in it.
KINDS: tuple[str, ...] = (
    "kernel",
    "memcpy",
    "memset",
    "communication",
    "runtime",
    "dataloader",
    "cpu_op",
    "other",
)
IDLE = "idle"  # a step's time no kind covers: neither device nor host busy
TINY_KERNEL_US = 10.0  # kernels shorter than this are launch-bound work (HTA, the plugin)


@dataclass(frozen=True)
class StepTime:
    """One ``ProfilerStep#N`` of one rank, in microseconds."""

    step: int  # N of ProfilerStep#N
    start_us: float
    duration_us: float  # from the step's start to its last device activity
    by_kind: Mapping[str, float]  # each of KINDS and IDLE -> exclusive µs; sums to duration
    communication_exposed_us: float = 0.0  # communication not overlapped by compute kernels
    gpu_busy_us: float = 0.0  # union of kernel, memcpy and memset time in the step

    @property
    def work_us(self) -> float:
        """What the rank itself did in the step: its time less communication and idle (a
        fast rank waits for a slow one in its collectives). The one measure of a straggler,
        for the ``trace.skew`` facts and the reports' sentence alike."""
        waited = self.by_kind.get("communication", 0.0) + self.by_kind.get(IDLE, 0.0)
        return self.duration_us - waited

    def share(self, kind: str) -> float:
        """``kind``'s share of the step, 0..1."""
        return self.by_kind.get(kind, 0.0) / self.duration_us if self.duration_us > 0 else 0.0


@dataclass(frozen=True)
class NamedTime:
    """A kernel or an operator, summed over the steps read."""

    name: str
    calls: int
    total_us: float
    max_us: float


@dataclass(frozen=True)
class HostGap:
    """A stretch inside a step where the host ran no operator: Python between ops."""

    step: int
    start_us: float
    duration_us: float
    before: str  # the op that ended just before it ('' at the step's start)
    after: str  # the op that began just after it ('' at the step's end)


@dataclass(frozen=True)
class Copies:
    """Host-to-device copies by source memory: pageable proves pin_memory did not take."""

    htod_pageable_count: int = 0
    htod_pageable_bytes: int = 0
    htod_pageable_us: float = 0.0
    htod_pinned_count: int = 0
    htod_pinned_bytes: int = 0
    htod_pinned_us: float = 0.0
    dtoh_count: int = 0
    dtoh_us: float = 0.0


@dataclass(frozen=True)
class HostSync:
    """A call that makes the host wait for the device, inside a step, by the op that caused it."""

    name: str  # cudaStreamSynchronize, cudaDeviceSynchronize, aten::item, ...
    caused_by: str  # the outermost enclosing op (e.g. aten::item), '' if none
    calls: int
    total_us: float


@dataclass(frozen=True)
class TraceDevice:
    name: str = ""
    compute_major: int | None = None  # 7+ has tensor cores
    total_memory_bytes: int | None = None


@dataclass(frozen=True)
class RankTrace:
    """One trace file: one rank (or one process without torch.distributed)."""

    path: str
    rank: int | None  # distributedInfo.rank; None when torch.distributed was not initialised
    world_size: int | None = None
    steps: tuple[StepTime, ...] = ()
    has_device: bool = False  # any kernel, memcpy or memset event at all
    devices: tuple[TraceDevice, ...] = ()
    top_kernels: tuple[NamedTime, ...] = ()  # by total time, at most TOP_N
    top_ops: tuple[NamedTime, ...] = ()  # host operators (cpu_op), by total time, at most TOP_N
    host_gaps: tuple[HostGap, ...] = ()  # the longest, at most TOP_N
    copies: Copies = field(default_factory=Copies)
    syncs: tuple[HostSync, ...] = ()
    dataloader_calls: int = 0  # enumerate(DataLoader)#...__next__ / train_dataloader_next
    dataloader_us: float = 0.0
    kernels: int = 0
    tiny_kernels: int = 0  # shorter than TINY_KERNEL_US
    tensor_core_kernels: int = 0  # names that show tensor-core math (see the reader)
    peak_device_memory_bytes: int | None = None  # from [memory] events, when recorded
    events: int = 0  # trace events read
    notes: tuple[str, ...] = ()  # what this file could not show, and why
    # where the steps came from: ProfilerStep#N, the optimizer's steps (torch.optim records
    # ``Optimizer.step#SGD.step``), "pattern": inferred from the block of top-level host ops
    # that repeats (``pattern.py``; a note says how), or "whole": none found, the trace read
    # as one span (its shares hold; nothing per step does)
    step_source: Literal["profiler", "optimizer", "pattern", "whole"] = "profiler"


@dataclass(frozen=True)
class TraceSet:
    """The traces of one run, one per rank."""

    ranks: tuple[RankTrace, ...]
    ordered_by: Literal["rank", "file"] = "rank"  # "file" when no trace named its rank
    notes: tuple[str, ...] = ()


TOP_N = 20
# Below this much step time (all ranks' steps together) a trace is too short to judge a share
# by: a 0.3 µs trace is no measure of GPU use.
MIN_JUDGED_US = 1_000.0
