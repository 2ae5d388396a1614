"""The Steps section of a torch.profiler trace in every report format (issue 22, point 6):
the breakdown per rank, the straggler, what the trace proves and what it cannot show."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from tests.trace_sets import balanced_ddp, cpu_only, ddp_resnet
from tuneadvisor.present.trace_text import (
    CPU_ONLY_NOTE,
    SHOWN_KINDS,
    breakdown,
    cannot_show,
    kind_cells,
    straggler,
    text_bar,
)
from tuneadvisor.profile.trace.model import RankTrace, StepTime, TraceSet
from tuneadvisor.report import (
    json_report,
)  # looked up when called: checked (tests/report_schema.py)
from tuneadvisor.report.markdown import render_markdown
from tuneadvisor.report.text import render_text
from tuneadvisor.workspace.load import Workspace

_micros = st.floats(min_value=0, max_value=1e6, allow_nan=False)
_by_kind = st.fixed_dictionaries({k: _micros for k in SHOWN_KINDS})


def _traced(traces: TraceSet) -> Workspace:
    return Workspace(analysis=None, job=None, traces=traces)


@given(st.lists(_by_kind, min_size=1, max_size=6))
def test_a_ranks_shares_are_fractions_that_sum_to_one(steps: list[dict[str, float]]) -> None:
    made = tuple(
        StepTime(step=i, start_us=i * 1e6, duration_us=sum(k.values()), by_kind=k)
        for i, k in enumerate(steps)
    )
    b = breakdown(RankTrace(path="r.json", rank=0, steps=made, has_device=True))
    assert b is not None
    total = sum(s.duration_us for s in made)
    if total > 0:
        assert math.isclose(sum(b.shares.values()), 1.0, rel_tol=1e-9)
        assert all(0.0 <= v <= 1.0 for v in b.shares.values())
        assert math.isclose(b.mean_step_us * len(made), total, rel_tol=1e-9)


@given(st.dictionaries(st.sampled_from(SHOWN_KINDS), _micros, min_size=1),
       st.integers(min_value=1, max_value=220))  # fmt: skip
def test_a_bar_fills_its_width_exactly_in_the_kinds_order(
    shares: dict[str, float], width: int
) -> None:
    cells = kind_cells(shares, width)
    if sum(shares.values()) == 0:
        assert cells == []
        return
    assert sum(n for _, n in cells) == width
    order = [SHOWN_KINDS.index(k) for k, _ in cells]
    assert order == sorted(order)
    # no kind is more than one cell off its exact share
    total = sum(shares.values())
    for kind, n in cells:
        assert abs(n - shares[kind] / total * width) < 1 + 1e-9
    assert len(text_bar(shares, width)) == width


def test_the_rank_that_works_longest_is_named_the_straggler() -> None:
    lag = straggler(ddp_resnet())
    assert lag is not None and lag.rank == 2 and lag.label == "rank 2"
    # rank 2: 120 - 8 - 2 ms of its own work against 120 - 30 - 4 on the others
    assert math.isclose(lag.work_us, 110_000.0) and math.isclose(lag.others_us, 86_000.0)
    assert math.isclose(lag.excess, 110 / 86 - 1)


def test_no_straggler_among_even_ranks_or_with_one_rank() -> None:
    assert straggler(balanced_ddp()) is None
    assert straggler(TraceSet(ranks=ddp_resnet().ranks[2:3])) is None


def test_the_text_report_has_a_steps_section_per_rank() -> None:
    text = render_text(_traced(ddp_resnet()))
    assert text.startswith("Steps (torch.profiler trace, per rank):")
    for rank in range(4):
        assert f"  rank {rank}: 3 steps, mean 120.00 ms" in text
    assert "GPU busy 80.2 %" in text  # rank 2: 96.3 of 120 ms on the device
    assert "straggler: rank 2 works 28 % longer a step" in text
    assert "pin_memory did not take effect" in text
    assert "cudaStreamSynchronize (from aten::item), 3 calls" in text
    assert "39.6 % of 3309 kernels ran under 10 µs" in text
    assert "longest host gaps:" in text and "step 13: after Optimizer.step#SGD.step" in text
    # the first rank and the straggler in detail, the others summed up
    assert "\n  rank 0:\n" in text and "\n  rank 2:\n" in text and "\n  rank 1:\n" not in text
    assert "(2 more ranks: --format json has each)" in text


def test_a_cpu_only_trace_says_what_it_cannot_show() -> None:
    traces = cpu_only()
    text = render_text(_traced(traces))
    name = "rank0.1732650000000000000.pt.trace.json.gz"
    assert f"  {name}: 3 steps, mean 18.00 ms, idle 1.7 %\n" in text  # no GPU figures
    assert f"{name}: {CPU_ONLY_NOTE}" in text
    assert "torch.distributed was not initialised" in text
    assert "GPU busy" not in text and "pin_memory" not in text
    assert f"{name}: {CPU_ONLY_NOTE}" in cannot_show(traces)


def test_the_markdown_report_tables_the_breakdown() -> None:
    md = render_markdown(_traced(ddp_resnet()))
    assert "\n## Steps\n" in md
    head = next(line for line in md.splitlines() if line.startswith("| Rank |"))
    assert head.count("|") == len(SHOWN_KINDS) + 5  # rank, steps, mean, kinds, exposed
    row2 = next(line for line in md.splitlines() if line.startswith("| rank 2 |"))
    assert "| 78.3 % |" in row2 and "| 6.7 % |" in row2
    assert "**Straggler: rank 2" in md
    assert "| 158.46 ms | 477 | `sm80_xmma_fprop" in md  # rank 2's top kernel
    assert "**What these traces cannot show**" not in md  # every rank has a device


def test_the_json_report_keys_traces_by_ids_in_microseconds_and_fractions() -> None:
    data = json.loads(json.dumps(json_report.to_json(_traced(ddp_resnet()))))
    traces = data["traces"]
    assert traces["ordered_by"] == "rank" and traces["straggler"]["rank"] == 2
    ranks = traces["ranks"]
    assert [r["rank"] for r in ranks] == [0, 1, 2, 3]
    two = ranks[2]
    assert set(two["shares"]) == set(SHOWN_KINDS)
    assert math.isclose(sum(two["shares"].values()), 1.0)
    assert math.isclose(two["shares"]["kernel"], 94_000 / 120_000)
    assert two["mean_step_us"] == 120_000.0 and len(two["per_step"]) == 3
    assert two["per_step"][0]["by_kind_us"]["communication"] == 8_000.0
    assert two["copies"]["htod_pageable"] == {"count": 6, "bytes": 115_605_504,
                                              "total_us": 9_900.0}  # fmt: skip
    assert two["syncs"][0]["caused_by"] == "aten::item"
    assert two["dataloader"]["per_call_us"] == 6_000.0
    assert two["tiny_kernel_share"] == 1_310 / 3_309
    assert two["top_kernels"][0]["name"].startswith("sm80_xmma_fprop")


def test_a_cpu_only_trace_has_no_gpu_figures_in_json() -> None:
    data = json_report.to_json(_traced(cpu_only()))["traces"]
    (rank,) = data["ranks"]
    assert rank["rank"] is None and rank["has_device"] is False
    assert rank["gpu_busy_share"] is None and rank["tiny_kernel_share"] is None
    assert data["ordered_by"] == "file" and data["straggler"] is None
    assert any(CPU_ONLY_NOTE in note for note in data["notes"])


def test_a_workspace_without_traces_has_no_steps_anywhere() -> None:
    plain = Workspace(analysis=None, job=None)
    assert "traces" not in json_report.to_json(plain)
    assert "Steps" not in render_text(plain) and "## Steps" not in render_markdown(plain)
