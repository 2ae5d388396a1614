"""torch.profiler traces in, a ``TraceSet`` out: one file per rank, each read as a stream.

``read_trace_set(paths)`` takes ``.json``/``.json.gz`` files and folders of them
(``tensorboard_trace_handler`` writes ``{worker}.{time_ns}.pt.trace.json[.gz]`` into one
folder). Ranks come from ``distributedInfo.rank``; when no file names one (torch.distributed
was not initialised) the files are ordered by name and a note says so.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tuneadvisor.errors import InputError
from tuneadvisor.profile.trace import TRACE_SUFFIXES, pattern, trace_names
from tuneadvisor.profile.trace import breakdown as b
from tuneadvisor.profile.trace import collect as bounds
from tuneadvisor.profile.trace.collect import Collected, Named
from tuneadvisor.profile.trace.model import (
    MIN_JUDGED_US,
    TOP_N,
    Copies,
    HostGap,
    HostSync,
    NamedTime,
    RankTrace,
    StepTime,
    TraceDevice,
    TraceSet,
)
from tuneadvisor.profile.trace.stream import (
    MAX_INFLATE_RATIO,
    Progress,
    Read,
    events,
    read_header,
)

SUFFIXES = TRACE_SUFFIXES
MAX_FILES = 4096  # ranks in one folder; more is not one run


def is_trace_path(path: str) -> bool:
    """A name a trace has, or a folder (read for traces): how PROFILE tells it from .lprof."""
    return path.endswith(SUFFIXES) or os.path.isdir(path)


def trace_files(paths: Sequence[str]) -> list[str]:
    files: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            names = set(trace_names(p.name for p in Path(path).iterdir() if p.is_file()))
            found = sorted(str(Path(path) / name) for name in names)
            if not found:
                raise InputError(
                    path, "no torch.profiler traces (*.json, *.json.gz) in this folder"
                )
            files += found
        else:
            files.append(path)
        if len(files) > MAX_FILES:
            raise InputError(path, f"more than {MAX_FILES} trace files: not one run")
    return files


def read_trace_set(paths: Sequence[str], progress: Progress | None = None) -> TraceSet:
    given = trace_files(paths)
    once: dict[str, str] = {}  # one file given twice (or by two names) is read once
    for f in given:
        once.setdefault(os.path.realpath(f), f)
    files = list(once.values())
    total = sum(_size(f) for f in files)
    done = 0
    ranks: list[RankTrace] = []
    for f in files:
        offset = done
        each = None if progress is None else (lambda n, _t, o=offset: progress(o + n, total))
        ranks.append(read_rank(f, each))
        done += _size(f)
    notes: list[str] = []
    if len(files) < len(given):
        notes.append(f"{len(given) - len(files)} trace files given twice: each read once")
    if all(r.rank is not None for r in ranks):
        ranks.sort(key=lambda r: (r.rank, r.path))
        ordered = "rank"
        seen = [r.rank for r in ranks]
        if len(set(seen)) < len(seen):
            notes.append("two trace files name the same rank: traces of different runs?")
    else:
        ordered = "file"
        if len(ranks) > 1:
            notes.append("not every trace names its rank (torch.distributed was not "
                         "initialised): ordered by file name")  # fmt: skip
    return TraceSet(ranks=tuple(ranks), ordered_by=ordered, notes=tuple(notes))  # type: ignore[arg-type]


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None


def read_rank(path: str, progress: Progress | None = None) -> RankTrace:
    header = read_header(path)
    if not header.has_events:
        raise InputError(path, "not a torch.profiler trace: no traceEvents")
    col = Collected()
    read = Read()
    col.add_all(events(path, progress, array=header.array, read=read))
    if header.array and not col.events:
        raise InputError(path, "not a trace: a JSON array with no trace events in it")
    notes = [*header.cut, *_bounds_met(col, read)]
    return _rank(path, {**read.trailer(), **header.values}, col, notes)


def _bounds_met(col: Collected, read: Read) -> list[str]:
    """What the reader's bounds left out (issue 34), one note each."""
    notes = []
    if read.inflated_past:
        notes.append(f"the .gz inflates past {read.inflated_past >> 20} MiB (over "
                     f"{MAX_INFLATE_RATIO}x its size): the rest was not read")  # fmt: skip
    if col.bad_names:
        notes.append(f"{col.bad_names:,} events whose name or category is no string: left out")
    if col.names_past:
        notes.append(f"more than {bounds.MAX_NAMES:,} distinct event names: {col.names_past:,} "
                     f"events past them counted as {bounds.OTHER_NAMES!r}")  # fmt: skip
    if col.threads_past:
        notes.append(f"more than {bounds.MAX_THREADS:,} threads: the rest read as one")
    if col.steps_past:
        notes.append(f"more than {bounds.MAX_STEPS:,} ProfilerSteps: {col.steps_past:,} "
                     "later ones left out")  # fmt: skip
    if col.intervals_past:
        notes.append(f"more than {bounds.MAX_INTERVALS:,} timed events: {col.intervals_past:,} "
                     "more counted in the tables, and the steps they fall in left out of "
                     "the breakdown")  # fmt: skip
    return notes


def _rank(path: str, header: dict[str, Any], col: Collected, notes: list[str]) -> RankTrace:
    rank, world = _distributed(header.get("distributedInfo"))
    if rank is None:
        notes.append("no distributedInfo.rank: torch.distributed was not initialised")
    source = "profiler"
    wins = b.windows(col)
    if not wins and (wins := b.optimizer_windows(col)):
        source = "optimizer"
        notes.append("no ProfilerStep#N: the steps are the optimizer's (Optimizer.step#...), "
                     f"{len(wins)} of them")  # fmt: skip
    if not wins and (repeats := pattern.find(col)) is not None:
        notes.append(repeats.note())  # iterations inferred, or why the repeats are none
        if repeats.mark is not None:
            wins = b.windows(col, [(n, s, e, -1) for n, (s, e) in enumerate(repeats.spans)])
            source = "pattern"
    if not wins:
        wins = b.whole_trace(col)
        source = "whole"
        if wins:
            notes.append("no steps found (neither ProfilerStep#N, optimizer steps nor a "
                         "repeated block of top-level ops that fetches a batch or runs "
                         "backward; profile with a schedule and call prof.step()): the trace "
                         "is read as one span: no share or per-step figure is judged")  # fmt: skip
    cut = len(wins)
    wins = [w for w in wins if w.end < col.cut_from_us]
    if len(wins) < cut:
        notes.append(f"{cut - len(wins)} steps fall past the events kept: not broken down")
    steps: list[StepTime] = []
    gaps: list[HostGap] = []
    syncs: dict[tuple[str, str], list[float]] = {}
    calls, dl_us = 0, 0.0
    crowded = 0
    for win, found in b.by_step(col, wins):
        if found.too_many:
            crowded += 1
            continue
        parts = b.step_parts(col, win, found)
        steps.append(parts.time)
        gaps = sorted([*gaps, *parts.gaps], key=lambda g: -g.duration_us)[:TOP_N]
        for name, cause, us in parts.syncs:
            row = syncs.setdefault((name, cause), [0, 0.0])
            row[0] += 1
            row[1] += us
        calls += parts.dataloader_calls
        dl_us += parts.dataloader_us
    spanned = sum(st.duration_us for st in steps)
    if steps and spanned < MIN_JUDGED_US:
        notes.append(f"the steps span {spanned:.3g} µs in all: too short to judge "
                     f"(under {MIN_JUDGED_US / 1e3:g} ms), no share is judged")  # fmt: skip
    if crowded:
        notes.append(f"{crowded} steps with more than {b.MAX_STEP_INTERVALS:,} events each: "
                     "not broken down")  # fmt: skip
    if not col.has_device:
        notes.append("no device events (a CPU-only trace, or CUDA activities not recorded): "
                     "GPU busy and idle, kernels, copies, tensor cores and communication "
                     "on the GPU cannot be shown")  # fmt: skip
    if col.bad_numbers:
        notes.append(f"{col.bad_numbers} events with a timestamp or duration no trace has: "
                     "left out")  # fmt: skip
    devices = _devices(header.get("deviceProperties"))
    peak = None if col.memory_peak is None else int(col.memory_peak)
    has = devices[0].total_memory_bytes if devices else None
    if peak is not None and has and peak > has:  # no device holds more than it has
        notes.append(f"a device memory peak of {peak:,} bytes, more than the device's "
                     f"{has:,}: no reading, left out")  # fmt: skip
        peak = None
    return RankTrace(
        path=path,
        rank=rank,
        world_size=world,
        steps=tuple(steps),
        has_device=col.has_device,
        devices=devices,
        top_kernels=_top(col.kernels),
        top_ops=_top(col.ops),
        host_gaps=tuple(gaps),
        copies=_copies(col.copies),
        syncs=tuple(
            HostSync(name, cause, int(v[0]), v[1])
            for (name, cause), v in sorted(syncs.items(), key=lambda kv: -kv[1][1])
        ),
        dataloader_calls=calls,
        dataloader_us=dl_us,
        kernels=col.kernel_count,
        tiny_kernels=col.tiny,
        tensor_core_kernels=col.tensor_core,
        peak_device_memory_bytes=peak,
        events=col.events,
        notes=tuple(notes),
        step_source=source,  # type: ignore[arg-type]
    )


def _int(value: object) -> int | None:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**53:
        return value
    return None


def _distributed(info: object) -> tuple[int | None, int | None]:
    if not isinstance(info, dict):
        return None, None
    rank, world = _int(info.get("rank")), _int(info.get("world_size"))
    return (rank if rank is not None and rank >= 0 else None), world


def _devices(props: object) -> tuple[TraceDevice, ...]:
    if not isinstance(props, list):
        return ()
    out = []
    for p in props[:64]:
        if isinstance(p, dict):
            name = p.get("name")
            out.append(TraceDevice(
                name=name[:200] if isinstance(name, str) else "",
                compute_major=_int(p.get("computeMajor")),
                total_memory_bytes=_int(p.get("totalGlobalMem")),
            ))  # fmt: skip
    return tuple(out)


def _top(table: dict[str, Named]) -> tuple[NamedTime, ...]:
    rows = sorted(table.items(), key=lambda kv: (-kv[1].total_us, kv[0]))[:TOP_N]
    return tuple(NamedTime(name, n.calls, n.total_us, n.max_us) for name, n in rows)


def _copies(rows: dict[str, list[float]]) -> Copies:
    def get(src: str) -> list[float]:
        return rows.get(src, [0, 0, 0.0])

    page, pin, dtoh = get("pageable"), get("pinned"), get("dtoh")
    return Copies(
        htod_pageable_count=int(page[0]),
        htod_pageable_bytes=int(page[1]),
        htod_pageable_us=page[2],
        htod_pinned_count=int(pin[0]),
        htod_pinned_bytes=int(pin[1]),
        htod_pinned_us=pin[2],
        dtoh_count=int(dtoh[0]),
        dtoh_us=dtoh[2],
    )
