"""The step breakdown as the TensorBoard plugin computed it, from the collected columns.

A step is ``ProfilerStep#N`` (by name); it extends to the end of the last device activity
launched inside it (a kernel, copy or set whose ``correlation`` is that of a runtime call in
the step's host span), and starts no earlier than the previous step ended, so no time counts
twice. Inside a step each microsecond goes to the first busy kind in the plugin's priority
(kernel > memcpy > memset > communication > runtime > DataLoader > CPU op > other); the rest
is idle. The intervals are grouped by step with a counting sort (4 bytes each), and one
step's events at a time are swept.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterator
from dataclasses import dataclass

from tuneadvisor.profile.trace import classify as c
from tuneadvisor.profile.trace.collect import CODE, KIND_CODES, Collected
from tuneadvisor.profile.trace.model import IDLE, KINDS, HostGap, StepTime

_DEVICE = frozenset(CODE[k] for k in c.DEVICE_KINDS)
_HOST = frozenset(CODE[k] for k in c.HOST_KINDS)
_REPORTED = tuple(  # internal kind code -> the model's kind
    c.COMM_DEVICE if k == c.COMM_HOST else k for k in KIND_CODES
)
_RUNTIME, _KERNEL, _COMM = CODE[c.RUNTIME], CODE[c.KERNEL], CODE[c.COMM_DEVICE]
_CPU_OP, _DATALOADER = CODE[c.CPU_OP], CODE[c.DATALOADER]
_OPS = frozenset({_CPU_OP, _DATALOADER, CODE[c.COMM_HOST]})  # operators, not annotations


@dataclass(frozen=True)
class StepWindow:
    step: int
    start: float
    end: float
    tid: int  # the thread of the ProfilerStep event (the training loop's)


@dataclass(frozen=True)
class StepParts:
    """One step's numbers beside its StepTime: what facts and the rank's totals need."""

    time: StepTime
    gaps: tuple[HostGap, ...]
    syncs: tuple[tuple[str, str, float], ...]  # (name, caused_by, µs)
    dataloader_calls: int
    dataloader_us: float


def windows(
    col: Collected, steps: list[tuple[int, float, float, int]] | None = None
) -> list[StepWindow]:
    """The steps (``ProfilerStep#N``, or the ``(N, start, end, thread)`` given), each
    extended to its last device activity, none overlapping the next."""
    raw = sorted(col.steps if steps is None else steps, key=lambda s: (s[1], s[0]))
    if not raw:
        return []
    starts = [s[1] for s in raw]
    lo = [2**63] * len(raw)
    hi = [-1] * len(raw)
    device_end = [s[2] for s in raw]
    for i, kind in enumerate(col.kinds):  # the correlation range each step launched
        if kind == _RUNTIME and col.corrs[i] >= 0:
            k = bisect.bisect_right(starts, col.starts[i]) - 1
            if k >= 0 and col.starts[i] <= raw[k][2]:
                lo[k] = min(lo[k], col.corrs[i])
                hi[k] = max(hi[k], col.corrs[i])
    ranges = sorted((lo[k], hi[k], k) for k in range(len(raw)) if hi[k] >= 0)
    lows = [r[0] for r in ranges]
    for i, kind in enumerate(col.kinds):
        if kind in _DEVICE and col.corrs[i] >= 0:
            j = bisect.bisect_right(lows, col.corrs[i]) - 1
            if j >= 0 and col.corrs[i] <= ranges[j][1]:
                k = ranges[j][2]
                device_end[k] = max(device_end[k], col.ends[i])
    out: list[StepWindow] = []
    prev_end = float("-inf")
    for k, (n, start, _end, tid) in enumerate(raw):
        begin = max(start, prev_end)
        end = max(device_end[k], begin)
        out.append(StepWindow(n, begin, end, tid))
        prev_end = end
    return out


def optimizer_windows(col: Collected) -> list[StepWindow]:
    """No ProfilerStep#N, but torch.optim's steps: one window an iteration, from the end of
    one optimizer step to the end of the next (what comes before the first is set-up, not an
    iteration). Two at least: n optimizer steps bound n - 1 iterations."""
    marks = sorted(col.optimizer_steps)
    if len(marks) < 2 or not col.starts:
        return []
    out: list[StepWindow] = []
    begin = marks[0][1]  # before the first optimizer step: set-up and warm-up, no iteration
    for n, (_start, end) in enumerate(marks[1:], start=1):
        end = max(end, begin)
        out.append(StepWindow(n, begin, end, -1))
        begin = end
    return out


def whole_trace(col: Collected) -> list[StepWindow]:
    """No ProfilerStep#N (export_chrome_trace without a schedule): the trace as step 0."""
    if not col.starts:
        return []
    return [StepWindow(0, min(col.starts), max(col.ends), -1)]


MAX_STEP_INTERVALS = 500_000  # one step's intervals swept (a real step holds ~1-10 thousand)


@dataclass(frozen=True)
class StepEvents:
    """The intervals of one window: those inside or ending in it (``idx``), and per kind
    how many more cover it whole (``cover``: an op or kernel longer than the step)."""

    idx: list[int]
    cover: tuple[int, ...]
    too_many: int = 0  # past MAX_STEP_INTERVALS: the step is not swept (``idx`` empty)


def by_step(col: Collected, wins: list[StepWindow]) -> Iterator[tuple[StepWindow, StepEvents]]:
    """Each window with the intervals that overlap it. An interval over many steps is kept in
    the first and the last it touches and counted once per kind between them (a difference
    array), so the cost is linear in the intervals, never steps x intervals."""
    if not wins:
        return
    starts = [w.start for w in wins]
    nkinds = len(KIND_CODES)
    first = array("i", bytes(4 * len(col.starts)))  # step of each interval, -1 outside
    counts = [0] * (len(wins) + 1)
    spanning: list[list[int]] = [[] for _ in wins]
    cover = [[0] * (len(wins) + 1) for _ in range(nkinds)]  # difference arrays, per kind
    for i in range(len(col.starts)):
        s, e = col.starts[i], col.ends[i]
        k = bisect.bisect_right(starts, s) - 1
        if k < 0 or s >= wins[k].end:  # starts before the first step or in a gap
            k2 = k + 1
            if k2 < len(wins) and e > wins[k2].start:
                k = k2
            else:
                first[i] = -1
                counts[-1] += 1
                continue
        first[i] = k
        counts[k] += 1
        if k + 1 < len(wins) and e > wins[k + 1].start:  # a long interval over several steps
            last = bisect.bisect_left(starts, e) - 1  # the last window it starts before
            spanning[last].append(i)
            if last > k + 1:
                row = cover[col.kinds[i]]
                row[k + 1] += 1
                row[last] -= 1
    offsets = [0] * (len(wins) + 1)
    for k in range(len(wins)):
        offsets[k + 1] = offsets[k] + counts[k]
    order = array("i", bytes(4 * offsets[-1]))
    fill = offsets[:-1]
    for i in range(len(col.starts)):
        k = first[i]
        if k >= 0:
            order[fill[k]] = i
            fill[k] += 1
    del first
    running = [0] * nkinds
    for k, win in enumerate(wins):
        for kind in range(nkinds):
            running[kind] += cover[kind][k]
        size = offsets[k + 1] - offsets[k] + len(spanning[k])
        if size > MAX_STEP_INTERVALS:
            yield win, StepEvents([], tuple(running), size)
            continue
        yield win, StepEvents([*order[offsets[k] : offsets[k + 1]], *spanning[k]], tuple(running))


def step_parts(col: Collected, win: StepWindow, events: StepEvents) -> StepParts:
    idx = events.idx
    by_kind, busy, exposed = _sweep(col, win, idx, events.cover)
    time = StepTime(
        step=win.step,
        start_us=win.start,
        duration_us=win.end - win.start,
        by_kind=by_kind,
        communication_exposed_us=exposed,
        gpu_busy_us=busy,
    )
    tops = _top_ops(col, idx)
    # any thread's operator keeps the host busy (backward runs on autograd's own thread)
    every = sorted((i for ops in tops.values() for i in ops), key=lambda i: col.starts[i])
    covered = any(events.cover[k] for k in _OPS)  # an op longer than the step: no gap
    gaps = () if covered else _gaps(col, win, every)
    syncs = _syncs(col, idx, tops)
    calls, dl_us = 0, 0.0
    for i in idx:
        if col.kinds[i] == _DATALOADER and c.is_dataloader_call(col.name(col.names[i])):
            calls += 1
            dl_us += col.ends[i] - col.starts[i]
    return StepParts(time, gaps, syncs, calls, dl_us)


def _sweep(
    col: Collected, win: StepWindow, idx: list[int], cover: tuple[int, ...]
) -> tuple[dict[str, float], float, float]:
    """Each microsecond of the window to the first busy kind, from each kind's union of
    intervals: one pass over the step's intervals in start order (their indices sorted by a
    C key, no tuple per interval), then merges of the unions, which are few where the
    intervals crowd (issue 34: 4 million kernels in one step)."""
    n = len(KIND_CODES)
    unions = _unions(col, win, idx)
    for kind in range(n):
        if cover[kind]:  # what covers the whole window is busy all through it
            unions[kind] = [win.start, win.end] if win.end > win.start else []
    totals = [0.0] * n
    busy_at: list[float] = []  # the union of the kinds before the one looked at
    for kind in range(n):  # the plugin's priority: a microsecond to the first kind busy
        if unions[kind]:
            totals[kind] = _minus(unions[kind], busy_at)
            busy_at = _union(busy_at, unions[kind])
    device: list[float] = []
    for kind in sorted(_DEVICE):
        device = _union(device, unions[kind])
    whole = [win.start, win.end] if win.end > win.start else []
    by_kind = dict.fromkeys((*KINDS, IDLE), 0.0)
    for code, value in enumerate(totals):
        by_kind[_REPORTED[code]] += value
    by_kind[IDLE] += _minus(whole, busy_at)
    return by_kind, _length(device), _minus(unions[_COMM], unions[_KERNEL])


# An interval set is a flat list [start0, end0, start1, end1, ...]: disjoint, in order.


def _unions(col: Collected, win: StepWindow, idx: list[int]) -> list[list[float]]:
    """Per kind, the union of its intervals clipped to the window."""
    starts, ends, kinds = col.starts, col.ends, col.kinds
    out: list[list[float]] = [[] for _ in KIND_CODES]
    lo, hi = win.start, win.end
    for i in sorted(idx, key=starts.__getitem__):  # clipping at lo keeps this order
        s, e = starts[i], ends[i]
        if s < lo:
            s = lo
        if e > hi:
            e = hi
        if e <= s:
            continue
        union = out[kinds[i]]
        if union and s <= union[-1]:  # overlapping or touching the last: extend it
            if e > union[-1]:
                union[-1] = e
        else:
            union.append(s)
            union.append(e)
    return out


def _union(a: list[float], b: list[float]) -> list[float]:
    if not a or not b:
        return b or a
    out: list[float] = []
    i = j = 0
    na, nb = len(a), len(b)
    while i < na or j < nb:
        if j >= nb or (i < na and a[i] <= b[j]):
            s, e = a[i], a[i + 1]
            i += 2
        else:
            s, e = b[j], b[j + 1]
            j += 2
        if out and s <= out[-1]:
            if e > out[-1]:
                out[-1] = e
        else:
            out.append(s)
            out.append(e)
    return out


def _minus(a: list[float], b: list[float]) -> float:
    """How long ``a`` lasts outside ``b``."""
    total = 0.0
    j, nb = 0, len(b)
    for p in range(0, len(a), 2):
        s, e = a[p], a[p + 1]
        while j < nb and b[j + 1] <= s:
            j += 2
        t, k = s, j
        while k < nb and b[k] < e:
            if b[k] > t:
                total += b[k] - t
            if b[k + 1] > t:
                t = b[k + 1]
            k += 2
        if e > t:
            total += e - t
    return total


def _length(a: list[float]) -> float:
    return sum(a[p + 1] - a[p] for p in range(0, len(a), 2))


def _top_ops(col: Collected, idx: list[int]) -> dict[int, list[int]]:
    """Per thread, the host ops no other op of the step encloses, in time order."""
    per_tid: dict[int, list[int]] = {}
    for i in idx:
        if col.kinds[i] in _OPS:
            per_tid.setdefault(col.tids[i], []).append(i)
    tops: dict[int, list[int]] = {}
    for tid, ops in per_tid.items():
        ops.sort(key=lambda i: (col.starts[i], -col.ends[i]))
        kept: list[int] = []
        for i in ops:
            if not kept or col.starts[i] >= col.ends[kept[-1]]:
                kept.append(i)
        tops[tid] = kept
    return tops


def _gaps(col: Collected, win: StepWindow, tops: list[int]) -> tuple[HostGap, ...]:
    """Stretches with no operator on any thread: Python between ops."""
    gaps: list[HostGap] = []
    t, before = win.start, ""
    cpu_end = max((col.ends[i] for i in tops), default=win.start)
    for i in tops:
        if col.starts[i] > t:
            after = col.name(col.names[i])
            gaps.append(HostGap(win.step, t, col.starts[i] - t, before, after))
        t = max(t, col.ends[i])
        before = col.name(col.names[i])
    if tops and cpu_end > t:
        gaps.append(HostGap(win.step, t, cpu_end - t, before, ""))
    return tuple(gaps)


def _syncs(
    col: Collected, idx: list[int], tops: dict[int, list[int]]
) -> tuple[tuple[str, str, float], ...]:
    out: list[tuple[str, str, float]] = []
    starts: dict[int, list[float]] = {}
    kinds = col.kinds
    for i in idx:
        kind = kinds[i]
        if kind != _RUNTIME and kind != _CPU_OP:  # the kind first: no name looked up per kernel
            continue
        name = col.name(col.names[i])
        if name not in (c.SYNC_RUNTIME if kind == _RUNTIME else c.SYNC_OPS):
            continue
        tid = col.tids[i]
        if tid not in starts:
            starts[tid] = [col.starts[j] for j in tops.get(tid, [])]
        cause = _enclosing(col, i, tops.get(tid, []), starts[tid])
        out.append((name, cause, col.ends[i] - col.starts[i]))
    return tuple(out)


def _enclosing(col: Collected, i: int, tops: list[int], starts: list[float]) -> str:
    k = bisect.bisect_right(starts, col.starts[i]) - 1
    if k >= 0 and col.ends[tops[k]] >= col.ends[i]:
        return col.name(col.names[tops[k]])
    return ""
