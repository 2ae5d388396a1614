"""trace.*: what a set of torch.profiler traces says, as facts for the rules.

Shares are over all steps of all ranks, weighted by time (a long step counts for what it
took). A fact a trace cannot show is absent: no device events, no GPU facts.
"""

from __future__ import annotations

import statistics

from tuneadvisor.profile.trace.model import IDLE, KINDS, MIN_JUDGED_US, RankTrace, TraceSet

SKEW_MIN_RANKS = 2


def trace_facts(traces: TraceSet) -> dict[str, object]:
    ranks = [r for r in traces.ranks if r.steps]
    facts: dict[str, object] = {"trace.ranks": len(traces.ranks)}
    if not ranks:
        return facts
    total = sum(s.duration_us for r in ranks for s in r.steps)
    per_step = all(r.step_source != "whole" for r in ranks)  # no steps: nothing per step
    if per_step:
        facts["trace.steps"] = min(len(r.steps) for r in ranks)
        durations = [s.duration_us for r in ranks for s in r.steps]
        # the steps' time over their count: the mean the trace report prints for a rank
        # (a run's one step time is seconds over steps, runrecord/window.py; the median of
        # 3 traced steps read 4.5 ms where the report said 4.71)
        mean = statistics.fmean(durations)
        if len(durations) >= 3 and mean > 0:  # the step-time model's spread
            facts["trace.step_spread"] = (max(durations) - min(durations)) / 2 / mean
        facts["trace.step_s"] = mean / 1e6
    # a share is judged over steps of some length: not over a whole trace with no steps
    # (its set-up and tail in the span), nor under MIN_JUDGED_US (the rank's notes say which)
    judged = per_step and total >= MIN_JUDGED_US
    if judged:
        for kind in (*KINDS, IDLE):
            facts[f"trace.{kind}_share"] = (
                sum(s.by_kind.get(kind, 0.0) for r in ranks for s in r.steps) / total
            )
    calls = sum(r.dataloader_calls for r in ranks)
    if calls:
        facts["trace.dataloader_call_ms"] = sum(r.dataloader_us for r in ranks) / calls / 1e3
    steps = sum(len(r.steps) for r in ranks)
    if per_step:
        facts["trace.host_syncs_per_step"] = (
            sum(h.calls for r in ranks for h in r.syncs if h.name.startswith(("cuda", "hip")))
            / steps
        )
    device = [r for r in ranks if r.has_device]
    facts["trace.has_device"] = bool(device)
    if device:
        facts.update(_device_facts(device, judged))
    if judged and len(ranks) >= SKEW_MIN_RANKS:
        facts.update(_skew(ranks))
    return facts


def _device_facts(ranks: list[RankTrace], judged: bool) -> dict[str, object]:
    total = sum(s.duration_us for r in ranks for s in r.steps)
    busy = sum(s.gpu_busy_us for r in ranks for s in r.steps)
    exposed = sum(s.communication_exposed_us for r in ranks for s in r.steps)
    kernels = sum(r.kernels for r in ranks)
    out: dict[str, object] = {
        "trace.kernels": kernels,
        "trace.tensor_core_kernels": sum(r.tensor_core_kernels for r in ranks),
        "trace.htod_pageable_copies": sum(r.copies.htod_pageable_count for r in ranks),
        "trace.htod_pinned_copies": sum(r.copies.htod_pinned_count for r in ranks),
    }
    if judged:
        out["trace.gpu_busy_share"] = busy / total if total > 0 else 0.0
        out["trace.communication_exposed_share"] = exposed / total if total > 0 else 0.0
    if kernels:
        out["trace.tiny_kernel_share"] = sum(r.tiny_kernels for r in ranks) / kernels
    htod = sum(r.copies.htod_pageable_bytes + r.copies.htod_pinned_bytes for r in ranks)
    if htod:
        out["trace.htod_pageable_byte_share"] = (
            sum(r.copies.htod_pageable_bytes for r in ranks) / htod
        )
    majors = [d.compute_major for r in ranks for d in r.devices if d.compute_major is not None]
    if majors:
        out["trace.compute_major"] = min(majors)
    peaks = [
        (r.peak_device_memory_bytes, d.total_memory_bytes)
        for r in ranks
        for d in r.devices[:1]
        if r.peak_device_memory_bytes is not None and d.total_memory_bytes
    ]
    if peaks:
        # a peak past the device's memory is no reading (a device cannot hold more than it
        # has): left out rather than shown as 10^20 %
        shares = [p / t for p, t in peaks if t > 0 and 0 <= p <= t]
        if shares:
            out["trace.device_memory_peak_share"] = max(shares)
    return out


def _skew(ranks: list[RankTrace]) -> dict[str, object]:
    """The straggler: the rank with the most step time that is not waiting for the others
    (StepTime.work_us: the reports name the straggler by the same measure)."""
    work = {_label(r): statistics.mean(s.work_us for s in r.steps) for r in ranks}
    if len(work) < SKEW_MIN_RANKS:  # two files naming one rank are one label
        return {}
    slowest = max(work, key=lambda k: (work[k], k))
    others = statistics.median(v for k, v in work.items() if k != slowest)
    step = statistics.mean(s.duration_us for r in ranks for s in r.steps)
    return {
        "trace.skew.rank": slowest,
        "trace.skew.ratio": work[slowest] / others if others > 0 else 1.0,
        "trace.skew.excess_share": (work[slowest] - others) / step if step > 0 else 0.0,
    }


def _label(r: RankTrace) -> str:
    return f"rank {r.rank}" if r.rank is not None else r.path
