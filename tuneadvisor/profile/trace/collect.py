"""What the reader keeps of each event while the stream passes: compact columns.

Per interval 33 bytes in ``array`` columns (start, end, correlation, kind, name, thread),
never the event's dict or text: a 1 GB trace of ~4 M events keeps ~130 MB here, a quarter of
what HTA's DataFrame holds for it. Everything else (names' totals, copies, memory, counts) is
summed as it passes.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from tuneadvisor.profile.trace import classify as c
from tuneadvisor.profile.trace.model import TINY_KERNEL_US

KIND_CODES: tuple[str, ...] = (
    c.KERNEL, c.MEMCPY, c.MEMSET, c.COMM_DEVICE, c.COMM_HOST,
    c.RUNTIME, c.DATALOADER, c.CPU_OP, c.OTHER,
)  # fmt: skip
CODE = {kind: i for i, kind in enumerate(KIND_CODES)}
# (kind code, step N or -1, name id, the kernel's or op's running total, device role)
_Seen = tuple[int, int, int, "Named | None", str]
_SKIP: _Seen = (-1, -1, -1, None, "")
_NUM = (int, float)
MAX_US = 1e19  # epoch µs are ~1.8e15 (ns ~1.8e18); past this a number is hostile, not a time
# What one rank keeps, whatever the trace holds (issue 34): memory stays with what the report
# shows. Each bound hit is counted and said in the rank's notes.
MAX_NAMES = 20_000  # distinct (category, name) pairs remembered; real traces hold ~1-5 thousand
MAX_NAME_CHARS = 1024  # of a name kept (C++ template kernel names run to ~1 kB)
MAX_THREADS = 4096  # distinct (pid, tid) pairs; past it, all further ones are one thread
MAX_STEPS = 10_000  # ProfilerStep#N windows kept (a schedule records tens)
MAX_INTERVALS = 2_000_000  # intervals kept for the breakdown (33 B each: 66 MB)
OTHER_NAMES = "(other names past the first 20,000)"
_KEYS = (str, int, float)  # a pid or tid a trace writes; a list or object is no thread id
_NO_THREAD = object()  # no (pid, tid) seen yet
_NO_ARGS: dict[str, Any] = {}
_INSTANT = ("i", "I")
_KERNEL_ROLES = ("kernel", "tensor_core")


@dataclass
class Named:
    calls: int = 0
    total_us: float = 0.0
    max_us: float = 0.0

    def add(self, dur: float) -> None:
        self.calls += 1
        self.total_us += dur
        self.max_us = max(self.max_us, dur)


@dataclass
class Collected:
    starts: array[float] = field(default_factory=lambda: array("d"))
    ends: array[float] = field(default_factory=lambda: array("d"))
    corrs: array[int] = field(default_factory=lambda: array("q"))  # -1: none
    kinds: array[int] = field(default_factory=lambda: array("b"))
    names: array[int] = field(default_factory=lambda: array("i"))  # into name_list
    tids: array[int] = field(default_factory=lambda: array("i"))  # into tid_list
    name_ids: dict[str, int] = field(default_factory=dict)
    name_list: list[str] = field(default_factory=list)
    tid_ids: dict[tuple[object, object], int] = field(default_factory=dict)
    _seen: dict[tuple[object, object], _Seen] = field(default_factory=dict)
    steps: list[tuple[int, float, float, int]] = field(default_factory=list)  # N, start, end, tid
    kernels: dict[str, Named] = field(default_factory=dict)
    ops: dict[str, Named] = field(default_factory=dict)
    copies: dict[str, list[float]] = field(default_factory=dict)  # source -> [count, bytes, us]
    memory_peak: float | None = None
    kernel_count: int = 0
    tiny: int = 0
    tensor_core: int = 0
    events: int = 0
    has_device: bool = False
    bad_numbers: int = 0  # events left out: a timestamp or duration no trace has
    bad_names: int = 0  # events left out: a name or category that is no string
    names_past: int = 0  # events of (cat, name) pairs past MAX_NAMES (lumped, not cached)
    threads_past: bool = False  # more than MAX_THREADS threads: the rest read as one
    steps_past: int = 0  # ProfilerStep windows past MAX_STEPS, left out
    intervals_past: int = 0  # intervals past MAX_INTERVALS, left out of the breakdown
    cut_from_us: float = float("inf")  # the earliest start of an interval left out
    optimizer_steps: list[tuple[float, float]] = field(default_factory=list)  # start, end

    def _id(self, table: dict[str, int], key: str, names: list[str]) -> int:
        got = table.get(key)
        if got is None:
            got = table[key] = len(table)
            names.append(key)
        return got

    def add(self, ev: dict[str, Any]) -> None:
        self.add_all((ev,))

    def add_all(self, events: Iterable[dict[str, Any]]) -> None:
        """Every event of the stream. The hot path: a trace holds millions, so the loop
        binds its lookups once and keeps its counts in locals (issue 34: 4 million kernels
        in one step cost ~2 µs each through a method call per event and attribute lookups)."""
        seen_get = self._seen.get
        starts, ends, corrs = self.starts.append, self.ends.append, self.corrs.append
        kinds, names, tids = self.kinds.append, self.names.append, self.tids.append
        kept = len(self.kinds)
        max_intervals, max_name = MAX_INTERVALS, MAX_NAME_CHARS
        last_pid: object = _NO_THREAD
        last_tid: object = _NO_THREAD
        thread = 0
        count = kernels = tiny = tensor = 0
        try:
            for ev in events:
                count += 1
                ph = ev.get("ph")
                if ph != "X":
                    if ph in _INSTANT:
                        self._instant(ev)
                    continue
                # one dict lookup classifies a (category, name) seen before
                cat, name = ev.get("cat"), ev.get("name")
                if cat is None and ev.get("pid") == "CPU functions":
                    cat = "cpu_op"  # the legacy autograd profiler's array: no category
                if type(cat) is not str or type(name) is not str:  # a list or object
                    self.bad_names += 1
                    continue
                name, cat = name[:max_name], cat[:64]  # a short one is kept as it is, no copy
                seen = seen_get((cat, name))
                if seen is None:
                    seen = self._classify((cat, name))
                if seen is _SKIP:
                    continue
                ts: Any = ev.get("ts")  # a number in range, or the event is left out
                dur: Any = ev.get("dur", 0.0)
                if not (type(ts) in _NUM and type(dur) in _NUM and -MAX_US < ts < MAX_US
                        and 0 <= dur < MAX_US):  # fmt: skip
                    self.bad_numbers += 1
                    continue
                pid, tid = ev.get("pid"), ev.get("tid")
                # events come in runs of one thread: its id again without a tuple and a lookup
                if not (pid == last_pid and tid == last_tid and type(pid) is type(last_pid)
                        and type(tid) is type(last_tid)):  # fmt: skip
                    thread = self._thread(pid, tid)
                    last_pid, last_tid = pid, tid
                code, step, name_id, named, role = seen
                if step >= 0:
                    self._step(step, ts, dur, thread)
                    continue
                args = ev.get("args")
                if type(args) is not dict:
                    args = _NO_ARGS
                if kept < max_intervals:
                    kept += 1
                    corr = args.get("correlation", -1)
                    starts(ts)
                    ends(ts + dur)
                    corrs(corr if type(corr) is int and 0 <= corr < 2**62 else -1)
                    kinds(code)
                    names(name_id)
                    tids(thread)
                else:
                    self._past(ts)
                if named is not None:
                    named.calls += 1
                    named.total_us += dur
                    if dur > named.max_us:
                        named.max_us = dur
                if role in _KERNEL_ROLES:
                    kernels += 1
                    tiny += dur < TINY_KERNEL_US
                    tensor += role == "tensor_core"
                elif role:
                    self._role(role, ts, dur, args)
        finally:
            self.events += count
            self.kernel_count += kernels
            self.tiny += tiny
            self.tensor_core += tensor
            self.has_device = self.has_device or kernels > 0

    def _step(self, step: int, ts: float, dur: float, thread: int) -> None:
        if len(self.steps) < MAX_STEPS:
            self.steps.append((step, ts, ts + dur, thread))
        else:
            self.steps_past += 1

    def _past(self, ts: float) -> None:
        """An interval past MAX_INTERVALS: counted, and where the kept ones end."""
        self.intervals_past += 1
        if ts < self.cut_from_us:
            self.cut_from_us = ts

    def _role(self, role: str, ts: float, dur: float, args: dict[str, Any]) -> None:
        if role == "optimizer":
            if len(self.optimizer_steps) < MAX_STEPS:
                self.optimizer_steps.append((ts, ts + dur))
        else:
            self._device(role, dur, args)

    def _thread(self, pid: object, tid: object) -> int:
        where = (pid if type(pid) in _KEYS else None, tid if type(tid) in _KEYS else None)
        got = self.tid_ids.get(where)
        if got is None:
            if len(self.tid_ids) >= MAX_THREADS:
                self.threads_past = True
                return MAX_THREADS - 1
            got = self.tid_ids[where] = len(self.tid_ids)
        return got

    def _classify(self, key: tuple[str, str]) -> _Seen:
        full = len(self._seen) >= MAX_NAMES
        cat, name = key
        if full:
            self.names_past += 1
            name = OTHER_NAMES  # one row for every name past the bound: memory stays put
        if c.is_host_category(cat) and (step := c.STEP_RE.fullmatch(key[1])) is not None:
            seen: _Seen = (-1, int(step.group(1)), -1, None, "")
        elif (kind := c.kind_of(cat, key[1])) is None:
            seen = _SKIP
        else:
            name_id = self._id(self.name_ids, name, self.name_list)
            named = None
            role = ""
            if kind in (c.KERNEL, c.COMM_DEVICE):
                named = self.kernels.setdefault(name, Named())
                tensor = kind == c.KERNEL and c.is_tensor_core(key[1])
                role = "tensor_core" if tensor else "kernel"
            elif kind == c.CPU_OP:
                named = self.ops.setdefault(name, Named())
            if kind in (c.CPU_OP, c.OTHER) and c.is_optimizer_step(key[1]):
                role = "optimizer"  # torch 1.8 wrote it as an Operator, later a user_annotation
            elif kind in (c.MEMCPY, c.MEMSET):
                source = c.copy_source(key[1]) or ""
                role = "copy:" + source if kind == c.MEMCPY else "memset"
            seen = (CODE[kind], -1, name_id, named, role)
        if not full:
            self._seen[key] = seen
        return seen

    def _device(self, role: str, dur: float, args: dict[str, Any]) -> None:
        """A device activity other than a kernel (those are counted in ``add_all``)."""
        self.has_device = True
        if role.startswith("copy:") and role != "copy:":
            row = self.copies.setdefault(role[5:], [0, 0, 0.0])
            size = args.get("bytes", 0)
            row[0] += 1
            row[1] += int(size) if _number(size) and 0 <= size < 2**62 else 0
            row[2] += dur

    def _instant(self, ev: dict[str, Any]) -> None:
        if ev.get("name") != "[memory]" and ev.get("cat") != "[memory]":
            return
        args = ev.get("args")
        if not isinstance(args, dict):
            return
        device, total = args.get("Device Id", -1), args.get("Total Allocated")
        # kineto's [memory] events: Device Type 1 (CUDA) with its Device Id; -1 is the host
        on_device = _number(device) and device >= 0 and args.get("Device Type", 1) != 0
        if on_device and _number(total) and 0 <= total < 2**62:
            self.memory_peak = max(self.memory_peak or 0.0, float(total))

    def name(self, i: int) -> str:
        return self.name_list[i]


def _number(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and (
        math.isfinite(value) and -MAX_US < value < MAX_US
    )  # fmt: skip
