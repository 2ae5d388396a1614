"""Public torch.profiler traces of other releases and forms (issue 30), each read for what a
user needs from it: torch 1.8 and 1.9 (capital categories, the autograd API's optimizer steps,
the TensorBoard plugin's num_workers lesson), ROCm, CUDA 12 with Triton, distributedInfo
written after traceEvents, traces without ProfilerStep# and a CUPTI range profile. Where each
comes from: tests/fixtures/realworld/traces/MANIFEST.md."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from tests.unit.test_trace_facts import fired
from tuneadvisor.profile.trace.facts import trace_facts
from tuneadvisor.profile.trace.model import RankTrace
from tuneadvisor.profile.trace.reader import read_trace_set

REAL = Path(__file__).parents[1] / "fixtures" / "realworld" / "traces"


def _read(name: str) -> tuple[RankTrace, dict[str, object]]:
    ts = read_trace_set([str(REAL / name)])
    return ts.ranks[0], trace_facts(ts)


def test_torch_1_8_capital_categories_read_as_a_gpu_trace_with_its_findings() -> None:
    # torch 1.8 wrote Operator/Runtime/Kernel/Memcpy: before, "a CPU-only trace, no steps"
    rank, facts = _read("torch18-profiler-api-resnet50.pt.trace.json.gz")
    assert rank.has_device and rank.kernels > 3000 and rank.step_source == "profiler"
    assert facts["trace.host_syncs_per_step"] == 2.0
    assert {"dataloader-bound-trace", "sync-in-loop-trace"} <= fired(facts)


def test_the_autograd_api_s_optimizer_steps_are_its_iterations() -> None:
    """The same ResNet-50 under torch.autograd.profiler (no ProfilerStep#): its iterations
    are found from Optimizer.step#SGD.step and read as the profiler API's are."""
    rank, facts = _read("torch18-autograd-api-resnet50.json.gz")
    assert rank.step_source == "optimizer" and len(rank.steps) == 2
    assert any("Optimizer.step" in n for n in rank.notes)
    _, same_facts = _read("torch18-profiler-api-resnet50.pt.trace.json.gz")
    assert facts["trace.host_syncs_per_step"] == same_facts["trace.host_syncs_per_step"]
    busy, other = facts["trace.gpu_busy_share"], same_facts["trace.gpu_busy_share"]
    assert abs(busy - other) < 0.15  # type: ignore[operator]
    assert "dataloader-bound-trace" in fired(facts)


def test_torch_1_9_num_workers_4_ends_the_dataloader_finding() -> None:
    """The TensorBoard plugin's own samples: num_workers=0 is DataLoader-bound, 4 is not;
    the V100 is read from deviceProperties (compute 7)."""
    zero, zero_facts = _read("torch19-v100-resnet50-workers0.pt.trace.json.gz")
    _, four_facts = _read("torch19-v100-resnet50-workers4.pt.trace.json.gz")
    assert zero.devices[0].name.startswith("Tesla V100") and zero_facts["trace.compute_major"] == 7
    assert "dataloader-bound-trace" in fired(zero_facts)
    assert "dataloader-bound-trace" not in fired(four_facts)
    assert four_facts["trace.dataloader_share"] < zero_facts["trace.dataloader_share"]  # type: ignore[operator]


def test_a_rocm_trace_is_a_gpu_trace() -> None:
    rank, facts = _read("hta-mi250-rocm6.2.json.gz")
    assert rank.has_device and rank.kernels == 14 and facts["trace.has_device"] is True
    assert rank.top_kernels and len(rank.steps) == 2


def test_a_trace_without_steps_says_so_and_judges_no_share() -> None:
    for name in ("hta-alexnet-no-steps.json.gz", "hta-event-sync-multi-stream.json.gz"):
        rank, facts = _read(name)
        assert rank.step_source == "whole" and any("no steps found" in n for n in rank.notes)
        assert "trace.gpu_busy_share" not in facts and "trace.host_syncs_per_step" not in facts
        assert "low-gpu-util-trace" not in fired(facts)
    # what counts without steps still holds: pageable copies are pageable
    _, facts = _read("hta-alexnet-no-steps.json.gz")
    assert "pin-memory-off-trace" in fired(facts)


def test_event_syncs_inside_a_step_are_host_syncs() -> None:
    _, facts = _read("hta-event-sync.json.gz")
    assert facts["trace.host_syncs_per_step"] == 3.0 and "sync-in-loop-trace" in fired(facts)


def test_a_triton_kernel_on_cuda_12_is_a_kernel() -> None:
    rank, _ = _read("hta-triton-cuda12.json.gz")
    assert rank.kernels == 1 and rank.top_kernels[0].name.startswith("triton")


def test_distributed_info_after_trace_events_names_the_rank() -> None:
    # torch 2.0-2.1 wrote it after traceEvents: before, "torch.distributed not initialised"
    for name, rank_no in (("hta-inference-rank1-after-events.json.gz", 1),
                          ("hta-backward-thread-rank-after-events.json", 0),
                          ("hta-cupti-range-profiler.json.gz", 0)):  # fmt: skip
        rank, _ = _read(name)
        assert rank.rank == rank_no and not any("distributedInfo" in n for n in rank.notes)


def test_a_cupti_range_profile_says_it_holds_no_device_events() -> None:
    rank, facts = _read("hta-cupti-range-profiler.json.gz")
    assert not rank.has_device and any("no device events" in n for n in rank.notes)
    assert not fired(facts)


def test_compare_reads_two_real_traces_side_by_side() -> None:
    from tuneadvisor.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["compare", str(REAL / "hta-compare-base.json.gz"),
                       str(REAL / "hta-compare-test.json.gz"), "--format", "text"])  # fmt: skip
    assert status == 0
    text = out.getvalue()
    assert "hta-compare-base" in text and "step time (ms)" in text and "kernel share" in text
