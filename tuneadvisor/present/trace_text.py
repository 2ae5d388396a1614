"""How a torch.profiler trace reads: the step breakdown per rank and per step, the straggler,
and what the trace proves (pageable copies, host syncs, tiny kernels) or cannot show.

Shared by the text, markdown and JSON reports and the TUI's Steps tab, so they never disagree.
Times in the model are microseconds; shares are fractions 0..1 (percents only when written).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tuneadvisor.present.number_text import format_seconds
from tuneadvisor.present.terminal_safe import name_safe
from tuneadvisor.profile.trace.model import (
    IDLE,
    KINDS,
    TINY_KERNEL_US,
    HostGap,
    RankTrace,
    StepTime,
    TraceSet,
)

SHOWN_KINDS: tuple[str, ...] = (*KINDS, IDLE)  # the breakdown's order, idle last
KIND_LABELS: Mapping[str, str] = {
    "kernel": "kernel",
    "memcpy": "memcpy",
    "memset": "memset",
    "communication": "communication",
    "runtime": "runtime",
    "dataloader": "DataLoader",
    "cpu_op": "CPU op",
    "other": "other",
    IDLE: "idle",
}
# One letter a kind in the plain-text bars (no colour there); idle is blank space.
KIND_LETTERS: Mapping[str, str] = {
    "kernel": "K",
    "memcpy": "M",
    "memset": "S",
    "communication": "C",
    "runtime": "R",
    "dataloader": "D",
    "cpu_op": "O",
    "other": "x",
    IDLE: ".",
}
# A rank whose own work (a step less its communication and idle time) is this much longer than
# the median of the others' makes them wait in their collectives: it is named the straggler.
# rank-straggler-trace's ratio_min (1.1) and excess_share_min (of the mean step): a rank the
# report names is one the finding is about.
STRAGGLER_EXCESS = 0.10
STRAGGLER_SHARE = 0.10
# What a trace without device events cannot say (a CPU-only run, or CUDA not traced).
# Communication on the host (gloo's all-reduce) is shown: only the device's is not.
CPU_ONLY_NOTE = (
    "no device events (a CPU-only trace): kernel, memcpy and memset time, communication on "
    "the GPU, the GPU's idle share, host-to-device copies and tiny kernels cannot be shown"
)
NO_DEVICE = "no device events"  # how the reader's own note of it begins


def duration(us: float) -> str:
    """A trace's microseconds as a person reads them: 850.0 µs, 12.30 ms, 1.20 s."""
    return format_seconds(us / 1e6)


def share_percent(share: float) -> str:
    return f"{100 * share:.1f} %"


def rank_label(trace: RankTrace) -> str:
    """'rank 2', or the file's name when torch.distributed did not name the rank."""
    return f"rank {trace.rank}" if trace.rank is not None else name_safe(Path(trace.path).name)


def short_label(trace: RankTrace, limit: int = 16) -> str:
    """A bar's label: 'rank 2', or the file's worker name (before its first dot)."""
    if trace.rank is not None:
        return f"rank {trace.rank}"
    worker = Path(trace.path).name.split(".", 1)[0] or Path(trace.path).name
    return name_safe(worker, limit)


@dataclass(frozen=True)
class RankBreakdown:
    """One rank's steps summed: the mean step and each kind's share of all its step time."""

    label: str
    rank: int | None
    steps: int
    mean_step_us: float
    shares: Mapping[str, float]  # each of SHOWN_KINDS -> fraction of the steps' time
    exposed_communication_share: float  # communication not hidden behind compute
    gpu_busy_share: float | None  # None without device events
    work_us: float  # mean step less its communication and idle: what this rank itself did


def breakdown(trace: RankTrace) -> RankBreakdown | None:
    """The rank's breakdown over its steps; None when the trace has no ProfilerStep."""
    if not trace.steps:
        return None
    total = sum(s.duration_us for s in trace.steps)
    count = len(trace.steps)
    by_kind = {k: sum(s.by_kind.get(k, 0.0) for s in trace.steps) for k in SHOWN_KINDS}
    shares = {k: (v / total if total > 0 else 0.0) for k, v in by_kind.items()}
    exposed = sum(s.communication_exposed_us for s in trace.steps)
    busy = sum(s.gpu_busy_us for s in trace.steps)
    return RankBreakdown(
        label=rank_label(trace),
        rank=trace.rank,
        steps=count,
        mean_step_us=total / count,
        shares=shares,
        exposed_communication_share=exposed / total if total > 0 else 0.0,
        gpu_busy_share=(busy / total if total > 0 else 0.0) if trace.has_device else None,
        work_us=sum(s.work_us for s in trace.steps) / count,  # as trace.skew's facts
    )


def rank_headline(b: RankBreakdown) -> str:
    """'3 steps, mean 120.00 ms, GPU busy 60.2 %, idle 3.3 %, exposed communication 15.0 %'
    (no GPU or communication figures without device events)."""
    parts = [f"{b.steps} steps", f"mean {duration(b.mean_step_us)}"]
    if b.gpu_busy_share is not None:
        parts.append(f"GPU busy {share_percent(b.gpu_busy_share)}")
    parts.append(f"idle {share_percent(b.shares[IDLE])}")
    if b.gpu_busy_share is not None:
        parts.append(f"exposed communication {share_percent(b.exposed_communication_share)}")
    return ", ".join(parts)


def step_shares(step: StepTime) -> dict[str, float]:
    return {k: step.share(k) for k in SHOWN_KINDS}


@dataclass(frozen=True)
class Straggler:
    label: str
    rank: int | None
    work_us: float  # its mean work a step
    others_us: float  # the median of the other ranks' mean work
    excess: float  # work_us / others_us - 1

    def sentence(self) -> str:
        return (
            f"straggler: {self.label} works {100 * self.excess:.0f} % longer a step "
            f"({duration(self.work_us)} against a median of {duration(self.others_us)} on the "
            "other ranks), who wait for it in their collectives"
        )


def straggler(traces: TraceSet) -> Straggler | None:
    """The rank whose own work a step exceeds the others' median by STRAGGLER_EXCESS or more."""
    rows = [b for b in (breakdown(t) for t in traces.ranks) if b is not None]
    if len(rows) < 2:
        return None
    slowest = max(rows, key=lambda b: b.work_us)
    others = statistics.median(b.work_us for b in rows if b is not slowest)
    if others <= 0 or slowest.work_us < others * (1 + STRAGGLER_EXCESS):
        return None
    step = statistics.mean(s.duration_us for t in traces.ranks for s in t.steps)
    if step <= 0 or (slowest.work_us - others) / step < STRAGGLER_SHARE:
        return None
    return Straggler(
        slowest.label, slowest.rank, slowest.work_us, others, slowest.work_us / others - 1
    )


def kind_cells(shares: Mapping[str, float], width: int) -> list[tuple[str, int]]:
    """``width`` cells cut among the kinds by their shares (largest remainders), in
    SHOWN_KINDS order; kinds that get no cell are left out."""
    total = sum(max(0.0, shares.get(k, 0.0)) for k in SHOWN_KINDS)
    if width <= 0 or total <= 0:
        return []
    exact = {k: max(0.0, shares.get(k, 0.0)) / total * width for k in SHOWN_KINDS}
    cells = {k: int(v) for k, v in exact.items()}
    left = width - sum(cells.values())
    for k in sorted(SHOWN_KINDS, key=lambda k: cells[k] - exact[k])[:left]:
        cells[k] += 1
    return [(k, cells[k]) for k in SHOWN_KINDS if cells[k] > 0]


def text_bar(shares: Mapping[str, float], width: int = 40) -> str:
    """The stacked bar of the plain-text reports: one letter a kind (KIND_LETTERS)."""
    return "".join(KIND_LETTERS[k] * n for k, n in kind_cells(shares, width))


def legend(shares: Mapping[str, float]) -> str:
    """'kernel 61.2 %, DataLoader 20.0 %, idle 8.1 %': the kinds present, in order."""
    return ", ".join(
        f"{KIND_LABELS[k]} {share_percent(shares[k])}"
        for k in SHOWN_KINDS
        if shares.get(k, 0.0) >= 0.0005
    )


def letters_key() -> str:
    return " ".join(f"{KIND_LETTERS[k]}={KIND_LABELS[k]}" for k in SHOWN_KINDS)


def tiny_kernel_share(trace: RankTrace) -> float | None:
    return trace.tiny_kernels / trace.kernels if trace.kernels else None


def dataloader_per_call_us(trace: RankTrace) -> float | None:
    return trace.dataloader_us / trace.dataloader_calls if trace.dataloader_calls else None


def observations(trace: RankTrace) -> list[str]:
    """What this rank's trace proves, one sentence each: pageable copies, syncs, tiny
    kernels, the DataLoader's time per call."""
    out: list[str] = []
    c = trace.copies
    if c.htod_pageable_count:
        out.append(
            f"{c.htod_pageable_count} host-to-device copies from pageable memory "
            f"({c.htod_pageable_bytes / 2**20:.1f} MiB, {duration(c.htod_pageable_us)}) against "
            f"{c.htod_pinned_count} from pinned: pin_memory did not take effect"
        )
    elif c.htod_pinned_count:
        out.append(f"host-to-device copies all from pinned memory ({c.htod_pinned_count})")
    for sync in trace.syncs:
        cause = f" (from {short_name(sync.caused_by)})" if sync.caused_by else ""
        out.append(
            f"host sync inside the step: {short_name(sync.name)}{cause}, {sync.calls} calls, "
            f"{duration(sync.total_us)}"
        )
    tiny = tiny_kernel_share(trace)
    if tiny is not None and trace.tiny_kernels:
        out.append(
            f"{share_percent(tiny)} of {trace.kernels} kernels ran under "
            f"{TINY_KERNEL_US:g} µs (launch-bound: CUDA graphs or torch.compile fuse them)"
        )
    per_call = dataloader_per_call_us(trace)
    if per_call is not None:
        out.append(
            f"DataLoader: {trace.dataloader_calls} calls, {duration(per_call)} a call "
            f"({duration(trace.dataloader_us)} in all)"
        )
    return out


def cannot_show(traces: TraceSet) -> list[str]:
    """The set's and each rank's notes, and what a trace without device events cannot show."""
    out = list(traces.notes)
    if traces.ordered_by == "file" and len(traces.ranks) > 1:
        out.append("no trace named its rank (torch.distributed not initialised): ordered by file")
    # each note once, with the ranks it is about ("rank 0, rank 1: no device events ...")
    ranks_of: dict[str, list[str]] = {}
    for trace in traces.ranks:
        label = rank_label(trace)
        said = list(trace.notes)
        if not trace.has_device and not any(n.startswith(NO_DEVICE) for n in said):
            said.insert(0, CPU_ONLY_NOTE)
        if not trace.steps:
            said.append("no ProfilerStep# in the trace: no step breakdown")
        for note in said:
            ranks_of.setdefault(note, []).append(label)
    out += [f"{', '.join(labels)}: {note}" for note, labels in ranks_of.items()]
    return out


def detail_ranks(traces: TraceSet) -> list[RankTrace]:
    """The ranks whose details (observations, top kernels and ops, host gaps) the reports
    write: the first and the straggler; the JSON report has every rank."""
    if not traces.ranks:
        return []
    chosen = [traces.ranks[0]]
    lag = straggler(traces)
    if lag is not None:
        chosen += [t for t in traces.ranks if rank_label(t) == lag.label and t is not chosen[0]]
    return chosen


def step_rows(traces: TraceSet, limit: int = 60) -> list[tuple[str, StepTime]]:
    """'rank 2 #14' and its step, rank by rank, at most ``limit`` rows."""
    rows = [(f"{short_label(t)} #{s.step}", s) for t in traces.ranks for s in t.steps]
    return rows[:limit]


def section_lines(traces: TraceSet, bar_width: int = 40, top: int = 5) -> list[str]:
    """The plain-text "Steps" section (indented two spaces under its heading)."""
    out: list[str] = []
    rows = [(t, breakdown(t)) for t in traces.ranks]
    for trace, b in rows:
        if b is None:
            out.append(f"  {rank_label(trace)}: no steps ({name_safe(Path(trace.path).name)})")
            continue
        out.append(f"  {b.label}: {rank_headline(b)}")
        out.append(f"    |{text_bar(b.shares, bar_width).ljust(bar_width)}| {legend(b.shares)}")
    if any(b is not None for _, b in rows):
        out.append(f"    ({letters_key()})")
    lag = straggler(traces)
    if lag is not None:
        out.append(f"  {lag.sentence()}")
    shown = detail_ranks(traces)
    for trace in shown:
        said = observations(trace)
        kernels = trace.top_kernels[:top]
        ops = trace.top_ops[:top]
        gaps = trace.host_gaps[:top]
        if not (said or kernels or ops or gaps):
            continue
        out += ["", f"  {rank_label(trace)}:"]
        out += [f"    - {line}" for line in said]
        if kernels:
            out.append("    top kernels:")
            out += [_named(n.name, n.calls, n.total_us) for n in kernels]
        if ops:
            out.append("    top ops:")
            out += [_named(n.name, n.calls, n.total_us) for n in ops]
        if gaps:
            out.append("    longest host gaps:")
            out += [_gap(g) for g in gaps]
    if len(shown) < len(traces.ranks):
        out += ["", f"  ({len(traces.ranks) - len(shown)} more ranks: --format json has each)"]
    notes = cannot_show(traces)
    if notes:
        out += ["", "  Cannot show:"] + [f"    - {note}" for note in notes]
    return out


def _gap(gap: HostGap) -> str:
    where = gap_between(gap.before, gap.after)
    return f"      {duration(gap.duration_us):>10}  step {gap.step}: {where}"


def _named(name: str, calls: int, total_us: float) -> str:
    return f"      {duration(total_us):>10}  {calls:>6}x  {short_name(name)}"


def short_name(name: str, limit: int = 90) -> str:
    """A kernel's name cut to ``limit`` characters (templated names run to hundreds), on one
    line and with no control character (``name_safe``: the one sanitiser of file names)."""
    return name_safe(name, limit)


def gap_between(before: str, after: str) -> str:
    first = short_name(before, 40) if before else "the step's start"
    then = short_name(after, 40) if after else "the step's end"
    return f"after {first}, before {then}"
