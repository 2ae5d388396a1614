"""trace.* from real traces, and the rules they feed: what only a trace proves."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from tuneadvisor.advisor.engine import evaluate
from tuneadvisor.advisor.facts import FACTS
from tuneadvisor.present.trace_text import breakdown
from tuneadvisor.profile.trace.diff import summary
from tuneadvisor.profile.trace.facts import trace_facts
from tuneadvisor.profile.trace.reader import read_trace_set
from tuneadvisor.workspace.inputs import split_profiles
from tuneadvisor.workspace.rule_files import load_rules, rule_dirs

REAL = Path(__file__).parents[1] / "fixtures" / "realworld" / "traces"


# What each real trace holds, counted with json.load (ProfilerStep#N names, distributedInfo,
# kernel/gpu_memcpy/gpu_memset events): (ranks in order, steps per rank, device events).
REAL_ROWS: dict[str, tuple[list[int | None], int, bool]] = {
    "a100-nccl-rank0.json.gz": ([0], 3, True),
    "a100-no-distributed-info.json.gz": ([None], 1, False),
    "cpu-ddp-gloo": ([0, 1], 3, False),
    "cpu-only-gloo-rank34.pt.trace.json.gz": ([34], 1, False),
    "cpu-pageable-sync.pt.trace.json.gz": ([None], 3, False),
    "ddp-2rank-sampled": ([0, 1], 2, True),
    "h200-ddp-gloo": ([0, 1], 3, True),
    "h200-pageable-sync.pt.trace.json.gz": ([None], 3, True),
    "h200-pinned.pt.trace.json.gz": ([None], 3, True),
    "h200-tiny.pt.trace.json.gz": ([None], 3, True),
    # issue 30: older and other forms (tests/unit/test_trace_realworld_forms.py); a trace
    # without ProfilerStep# is read as 1 span, or its optimizer steps' iterations
    "torch18-autograd-api-resnet50.json.gz": ([None], 2, True),
    "torch18-profiler-api-resnet50.pt.trace.json.gz": ([None], 2, True),
    "torch19-v100-resnet50-workers0.pt.trace.json.gz": ([None], 2, True),
    "torch19-v100-resnet50-workers4.pt.trace.json.gz": ([None], 2, True),
    "hta-mi250-rocm6.2.json.gz": ([None], 2, True),
    "hta-alexnet-no-steps.json.gz": ([0], 1, True),
    "hta-event-sync.json.gz": ([0], 1, True),
    "hta-event-sync-multi-stream.json.gz": ([0], 1, True),
    "hta-triton-cuda12.json.gz": ([None], 1, True),
    "hta-inference-rank1-after-events.json.gz": ([1], 1, True),
    "hta-backward-thread-rank-after-events.json": ([0], 1, True),
    "hta-cupti-range-profiler.json.gz": ([0], 1, False),
    "hta-compare-base.json.gz": ([1], 2, True),
    "hta-compare-test.json.gz": ([1], 2, True),
    # torch 1.12 (2022-08), torch 1.13 (one forward: one span) and a torch 2.0 trace without
    # ProfilerStep# (3 iterations from its 4 optimizer steps): tests/unit/test_trace_pattern.py
    "torch112-a100-dlrm-rank3of8.json.gz": ([3], 2, True),
    "torch112-v100-dlrm-rank1of2.json.gz": ([1], 2, True),
    "torch20-rtx2080ti-resnet-no-profiler-steps.json.gz": ([None], 3, True),
    "torch113-cpu-resnet18-forward.pt.trace.json.gz": ([None], 1, False),
    "torch113-cpu-resnet34-forward.pt.trace.json.gz": ([None], 1, False),
    "torch113-cpu-resnet18-10-forwards-no-steps.json.gz": ([None], 1, False),
    "torch110-cpu-resnet18-forward.json.gz": ([None], 1, False),
}


def test_every_real_trace_has_one_row() -> None:
    assert sorted(p.name for p in REAL.iterdir() if p.name != "MANIFEST.md") == sorted(REAL_ROWS)


@pytest.mark.parametrize("name", sorted(REAL_ROWS))
def test_what_each_real_trace_holds(name: str) -> None:
    ranks, steps, device = REAL_ROWS[name]
    ts = read_trace_set([str(REAL / name)])
    assert [r.rank for r in ts.ranks] == ranks
    assert all(len(r.steps) == steps and r.has_device is device for r in ts.ranks)


def facts_of(*names: str) -> dict[str, object]:
    return trace_facts(read_trace_set([str(REAL / n) for n in names]))


def fired(facts: dict[str, object]) -> set[str]:
    return set(evaluate(load_rules(rule_dirs()), facts).ids())


@pytest.mark.parametrize("name", sorted(REAL_ROWS))
def test_every_fact_is_registered_with_its_type(name: str) -> None:
    types = {"int": int, "float": (int, float), "bool": bool, "str": str}
    for key, value in facts_of(name).items():
        assert key in FACTS, key
        assert isinstance(value, types[FACTS[key].type]), key  # type: ignore[arg-type]


def test_the_a100_trace_used_tensor_cores_and_nccl() -> None:
    f = facts_of("a100-nccl-rank0.json.gz")
    assert f["trace.compute_major"] == 8 and f["trace.steps"] == 3
    assert 0 < int(f["trace.tensor_core_kernels"]) < int(f["trace.kernels"])  # type: ignore[call-overload]
    assert 0.03 < f["trace.communication_share"] < 0.1  # type: ignore[operator]
    assert "no-tensor-cores" not in fired(f)


def test_the_sampled_ddp_ranks_wait_in_exposed_all_reduce_and_copy_batches_pinned() -> None:
    f = facts_of("ddp-2rank-sampled")
    assert f["trace.ranks"] == 2
    assert f["trace.communication_exposed_share"] > 0.2  # type: ignore[operator]
    assert (f["trace.htod_pageable_copies"], f["trace.htod_pinned_copies"]) == (32, 16)
    assert f["trace.htod_pageable_byte_share"] < 0.01  # type: ignore[operator]
    assert f["trace.gpu_busy_share"] < 0.5  # type: ignore[operator]
    ids = fired(f)
    assert {"communication-exposed", "low-gpu-util-trace"} <= ids
    assert not ids & {"pin-memory-off-trace", "rank-straggler-trace"}


def test_a_cpu_only_trace_gives_no_gpu_facts() -> None:
    f = facts_of("cpu-ddp-gloo")
    assert f["trace.has_device"] is False and f["trace.ranks"] == 2
    assert not any(k in f for k in ("trace.gpu_busy_share", "trace.kernels"))
    assert f["trace.communication_share"] > 0  # type: ignore[operator]  # gloo runs on the host
    assert "trace.skew.rank" in f
    ts = read_trace_set([str(REAL / "cpu-ddp-gloo")])
    assert all(any("cannot be shown" in n for n in r.notes) for r in ts.ranks)


def test_on_the_h200_pageable_copies_and_syncs_show_and_pinning_removes_them() -> None:
    pageable = facts_of("h200-pageable-sync.pt.trace.json.gz")
    pinned = facts_of("h200-pinned.pt.trace.json.gz")
    assert (pageable["trace.htod_pageable_copies"], pageable["trace.htod_pinned_copies"]) == (6, 0)
    assert pageable["trace.htod_pageable_byte_share"] == 1.0
    assert (pinned["trace.htod_pageable_copies"], pinned["trace.htod_pinned_copies"]) == (0, 6)
    # per step: two pageable copies (input, target) wait for the device, and loss.item()
    assert pageable["trace.host_syncs_per_step"] == 3.0
    assert pinned["trace.host_syncs_per_step"] == 0.0
    assert {"pin-memory-off-trace", "sync-in-loop-trace"} <= fired(pageable)
    assert not {"pin-memory-off-trace", "sync-in-loop-trace"} & fired(pinned)
    r = read_trace_set([str(REAL / "h200-pageable-sync.pt.trace.json.gz")]).ranks[0]
    causes = {(h.name, h.caused_by) for h in r.syncs}
    assert ("cudaStreamSynchronize", "aten::to") in causes  # the pageable copy's
    assert ("cudaStreamSynchronize", "aten::item") in causes  # loss.item()
    assert r.peak_device_memory_bytes is not None and r.devices[0].compute_major == 9


def test_on_the_h200_bf16_convolutions_are_tensor_core_kernels() -> None:
    f = facts_of("h200-pinned.pt.trace.json.gz")
    assert f["trace.compute_major"] == 9
    assert f["trace.tensor_core_kernels"] > 0  # type: ignore[operator]
    assert "no-tensor-cores" not in fired(f)


def test_on_the_h200_many_tiny_kernels_are_launch_bound() -> None:
    f = facts_of("h200-tiny.pt.trace.json.gz")
    assert f["trace.tiny_kernel_share"] > 0.9 and f["trace.gpu_busy_share"] < 0.2  # type: ignore[operator]
    assert f["trace.runtime_share"] > 0.2  # type: ignore[operator]  # the host launching them
    assert {"tiny-kernels", "low-gpu-util-trace"} <= fired(f)


def test_the_dataloader_calls_are_timed() -> None:
    ts = read_trace_set([str(REAL / "cpu-ddp-gloo")])
    assert all(r.dataloader_calls == 3 and r.dataloader_us > 0 for r in ts.ranks)
    assert facts_of("cpu-ddp-gloo")["trace.dataloader_call_ms"] > 0  # type: ignore[operator]


def test_item_in_the_loop_is_a_sync_caused_by_aten_item() -> None:
    r = read_trace_set([str(REAL / "cpu-pageable-sync.pt.trace.json.gz")]).ranks[0]
    assert any(
        s.name == "aten::_local_scalar_dense" and s.caused_by == "aten::item" for s in r.syncs
    )


HOST = {"pid": 1, "tid": 1}
GPU = {"pid": 0, "tid": 7}


def x(
    cat: str, name: str, ts: float, dur: float, where: dict[str, int], **args: Any
) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, **where, "args": args}


def _copy_trace(tmp: Path, source: str, slow_rank: int | None = None) -> dict[str, object]:
    paths = []
    for rank in (0, 1):
        work = 300 if rank == slow_rank else 100
        events: list[dict[str, Any]] = []
        for step in range(3):
            t, c = step * 1000, 10 * step
            events += [
                x("user_annotation", f"ProfilerStep#{step}", t, 50, HOST),
                x("cuda_runtime", "cudaMemcpyAsync", t + 1, 1, HOST, correlation=c + 1),
                x("cuda_runtime", "cudaLaunchKernel", t + 2, 1, HOST, correlation=c + 2),
                x("cuda_runtime", "cudaLaunchKernel", t + 3, 1, HOST, correlation=c + 3),
                x("cuda_runtime", "cudaStreamSynchronize", t + 4, 1, HOST, correlation=c + 4),
                x(
                    "gpu_memcpy",
                    f"Memcpy HtoD ({source} -> Device)",
                    t + 10,
                    20,
                    GPU,
                    correlation=c + 1,
                    bytes=1 << 20,
                ),
                x("kernel", "volta_sgemm_128x64_nn", t + 30, work, GPU, correlation=c + 2),
                x(
                    "kernel",
                    "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                    t + 30 + work,
                    400 - work,
                    GPU,
                    correlation=c + 3,
                ),
            ]
        path = tmp / f"rank{rank}.pt.trace.json.gz"
        volta = {"name": "Tesla V100", "computeMajor": 7, "totalGlobalMem": 16e9}
        doc = {
            "distributedInfo": {"rank": rank, "world_size": 2},
            "deviceProperties": [volta],
            "traceEvents": events,
        }
        path.write_bytes(gzip.compress(json.dumps(doc).encode()))
        paths.append(str(path))
    return trace_facts(read_trace_set(paths))


def test_pageable_copies_prove_pin_memory_did_not_take(tmp_path: Path) -> None:
    assert "pin-memory-off-trace" in fired(_copy_trace(tmp_path, "Pageable"))
    assert "pin-memory-off-trace" not in fired(_copy_trace(tmp_path, "Pinned"))


def test_a_sync_every_step_fires_sync_in_loop_trace(tmp_path: Path) -> None:
    f = _copy_trace(tmp_path, "Pinned")
    assert f["trace.host_syncs_per_step"] == 1.0 and "sync-in-loop-trace" in fired(f)


def test_the_straggler_is_the_rank_that_works_while_the_others_wait(tmp_path: Path) -> None:
    f = _copy_trace(tmp_path, "Pinned", slow_rank=1)
    assert f["trace.skew.rank"] == "rank 1" and f["trace.skew.ratio"] > 1.5  # type: ignore[operator]
    assert "rank-straggler-trace" in fired(f)
    even = _copy_trace(tmp_path, "Pinned")
    assert "rank-straggler-trace" not in fired(even)


def test_no_tensor_core_names_on_a_volta_fires_no_tensor_cores(tmp_path: Path) -> None:
    f = {**_copy_trace(tmp_path, "Pinned"), "trace.kernels": 200}
    assert f["trace.tensor_core_kernels"] == 0 and "no-tensor-cores" in fired(f)


def test_profile_arguments_split_into_line_profiles_and_traces(tmp_path: Path) -> None:
    sniffed = tmp_path / "trace-without-suffix"
    sniffed.write_bytes(gzip.compress(b'{"traceEvents": []}'))
    lprof = "tests/fixtures/lprof/lp4.1.3.lprof"
    args = [lprof, str(REAL / "cpu-ddp-gloo"), "x.pt.trace.json.gz", str(sniffed), "t.txt"]
    assert split_profiles(args) == (
        (lprof, "t.txt"),
        (str(REAL / "cpu-ddp-gloo"), "x.pt.trace.json.gz", str(sniffed)),
    )


def test_the_same_traces_are_the_same_evidence_and_a_changed_one_is_not(tmp_path: Path) -> None:
    from tuneadvisor.workspace.evidence_stamp import evidence_stamp
    from tuneadvisor.workspace.inputs import Inputs

    folder = tmp_path / "run"
    folder.mkdir()
    for f in (REAL / "cpu-ddp-gloo").iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    first = evidence_stamp(Inputs(traces=(str(folder),)))
    assert first is not None and first == evidence_stamp(Inputs(traces=(str(folder),)))
    victim = sorted(folder.iterdir())[0]
    data = bytearray(victim.read_bytes())
    data[100] ^= 0xFF
    victim.write_bytes(bytes(data))
    changed = evidence_stamp(Inputs(traces=(str(folder),)))
    assert changed is not None and changed.digest != first.digest


@pytest.mark.parametrize(
    ("name", "tensor"),
    [  # kernel names from the H200 and A100 traces in tests/fixtures/realworld/
        ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma", False),
        ("void implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false>", False),
        ("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc", True),
        ("sm90_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc", True),
        ("cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4", True),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
            False,
        ),
    ],
)
def test_a_kernel_is_tensor_core_math_by_its_name(name: str, tensor: bool) -> None:
    """An xmma kernel doing FP32 FMAs on the ordinary cores (`ffma`, an FP32 Linear without
    TF32 on the H200) is not tensor-core math; a TF32 or half one names its type."""
    from tuneadvisor.profile.trace.classify import is_tensor_core

    assert is_tensor_core(name) is tensor


def test_the_bundled_script_on_the_h200_used_tensor_cores_only_in_tf32_convolutions() -> None:
    """`run --profile torch` on CUDA (FP32, cuDNN's TF32 default for convolutions): the
    convolutions are TF32 tensor-core kernels, the Linear's FP32 GEMM is not."""
    from tuneadvisor.profile.trace.reader import read_trace_set

    run = Path(__file__).parents[1] / "fixtures" / "realworld" / "traces-run" / "mnist_single-h200"
    rank = read_trace_set([str(run)]).ranks[0]
    assert rank.has_device and rank.copies.htod_pinned_count > 0
    assert rank.copies.htod_pageable_count == 0  # the bundled scripts pin their batches
    assert 0 < rank.tensor_core_kernels < rank.kernels
    assert [s.step for s in rank.steps] == [2, 3, 4]


@pytest.mark.parametrize(
    "name", ["h200-pageable-sync.pt.trace.json.gz", "cpu-pageable-sync.pt.trace.json.gz"]
)
def test_the_trace_s_step_time_is_the_mean_its_report_prints(name: str) -> None:
    """One run, one number (issue 33): the prediction's "step time" from a trace is the
    rank's mean step that the trace report prints, not the median of its steps (4.5 ms
    beside the report's 4.71)."""
    traces = read_trace_set([str(REAL / name)])
    (rank,) = traces.ranks
    b = breakdown(rank)
    assert b is not None and b.steps == 3
    durations = sorted(s.duration_us for s in rank.steps)
    assert durations[1] != pytest.approx(b.mean_step_us)  # the median would not do
    assert trace_facts(traces)["trace.step_s"] == pytest.approx(b.mean_step_us / 1e6)
    # and compare's "step time (ms)" of the same trace
    assert summary(traces)["step time (ms)"] == pytest.approx(b.mean_step_us / 1e3)
