"""The plugin's breakdown on hand-built traces where the right answer is plain arithmetic,
and its invariants (shares sum to 1, each in [0, 1], durations non-negative) as properties."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tuneadvisor.profile.trace.model import IDLE, KINDS
from tuneadvisor.profile.trace.reader import read_trace_set

HOST = {"pid": 1, "tid": 1}
GPU = {"pid": 0, "tid": 7}


def ev(cat: str, name: str, ts: float, dur: float, where: dict[str, int] = HOST,
       **args: Any) -> dict[str, Any]:  # fmt: skip
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, **where, "args": args}


def write(tmp: Path, events: list[dict[str, Any]], name: str = "t.json", **top: Any) -> str:
    path = tmp / name
    data = json.dumps({**top, "traceEvents": events}).encode()
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return str(path)


def one_step(tmp: Path) -> list[dict[str, Any]]:
    """A 100 µs step: DataLoader 0-20, an op 20-40 launching a kernel (runtime 25-30) that
    runs 50-120 on the GPU (past the step's host end at 100), a memcpy 110-130 launched at 35."""
    return [
        ev("user_annotation", "ProfilerStep#7", 0, 100),
        ev("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 20),
        ev("cpu_op", "aten::mm", 20, 20),
        ev("cuda_runtime", "cudaLaunchKernel", 25, 5, correlation=1),
        ev("cuda_runtime", "cudaMemcpyAsync", 35, 2, correlation=2),
        ev("kernel", "ampere_sgemm_128x64_nn", 50, 70, GPU, correlation=1),
        ev(
            "gpu_memcpy",
            "Memcpy HtoD (Pageable -> Device)",
            110,
            20,
            GPU,
            correlation=2,
            bytes=4096,
        ),
    ]


def test_a_step_extends_to_its_last_device_activity_and_each_us_counts_once(tmp_path: Path) -> None:
    ts = read_trace_set([write(tmp_path, one_step(tmp_path))])
    (step,) = ts.ranks[0].steps
    assert step.step == 7 and step.start_us == 0 and step.duration_us == 130
    k = step.by_kind
    assert k["dataloader"] == 20  # 0-20
    assert k["cpu_op"] == 5 + 5 + 3  # 20-25, 30-35, 37-40 (the runtime calls' in between)
    assert k["runtime"] == 5 + 2  # 25-30, 35-37
    assert k["kernel"] == 70  # 50-120
    assert k["memcpy"] == 10  # 120-130: 110-120 is under the kernel
    assert k[IDLE] == 10  # 40-50: neither host nor device busy
    assert step.gpu_busy_us == 80  # 50-130
    copies = ts.ranks[0].copies
    assert (copies.htod_pageable_count, copies.htod_pageable_bytes) == (1, 4096)


def test_the_step_is_found_by_name_not_category(tmp_path: Path) -> None:
    events = one_step(tmp_path)
    events[0] = ev("cpu_op", "ProfilerStep#7", 0, 100)
    (step,) = read_trace_set([write(tmp_path, events)]).ranks[0].steps
    assert step.step == 7 and step.duration_us == 130


def test_exposed_communication_is_what_no_compute_kernel_hides(tmp_path: Path) -> None:
    events = [
        ev("cpu_op", "ProfilerStep#1", 0, 10),
        ev("cuda_runtime", "cudaLaunchKernel", 1, 1, correlation=1),
        ev("cuda_runtime", "cudaLaunchKernel", 2, 1, correlation=2),
        ev("kernel", "volta_sgemm", 10, 40, GPU, correlation=1),  # 10-50
        ev(
            "kernel",
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)",
            30,
            50,
            {"pid": 0, "tid": 9},
            correlation=2,
        ),  # 30-80, fmt: skip
    ]
    (step,) = read_trace_set([write(tmp_path, events)]).ranks[0].steps
    assert step.duration_us == 80
    assert step.communication_exposed_us == 30  # 50-80
    assert step.by_kind["communication"] == 30 and step.by_kind["kernel"] == 40


def test_steps_do_not_overlap_when_a_step_runs_past_the_next(tmp_path: Path) -> None:
    events = [
        ev("cpu_op", "ProfilerStep#1", 0, 10),
        ev("cuda_runtime", "cudaLaunchKernel", 1, 1, correlation=1),
        ev("kernel", "k", 5, 20, GPU, correlation=1),  # ends at 25, in step 2's host span
        ev("cpu_op", "ProfilerStep#2", 10, 10),
    ]
    s1, s2 = read_trace_set([write(tmp_path, events)]).ranks[0].steps
    assert (s1.start_us, s1.duration_us) == (0, 25)
    assert s2.start_us == 25 and s2.duration_us == 0


def test_host_syncs_name_the_op_that_caused_them(tmp_path: Path) -> None:
    events = [
        ev("cpu_op", "ProfilerStep#1", 0, 100),
        ev("cpu_op", "aten::item", 10, 30),
        ev("cpu_op", "aten::_local_scalar_dense", 11, 28),
        ev("cuda_runtime", "cudaStreamSynchronize", 15, 20, correlation=5),
        ev("kernel", "k", 2, 3, GPU),
    ]
    syncs = {
        (s.name, s.caused_by): s.calls
        for s in read_trace_set([write(tmp_path, events)]).ranks[0].syncs
    }
    assert syncs[("cudaStreamSynchronize", "aten::item")] == 1
    assert syncs[("aten::_local_scalar_dense", "aten::item")] == 1


def memory(ts: float, device_type: int, device: int, allocated: float) -> dict[str, Any]:
    args = {"Device Type": device_type, "Device Id": device, "Total Allocated": allocated}
    return {"ph": "i", "name": "[memory]", "ts": ts, **HOST, "args": args}


def test_tiny_and_tensor_core_kernels_and_memory_peak(tmp_path: Path) -> None:
    events = [
        ev("cpu_op", "ProfilerStep#1", 0, 100),
        ev("kernel", "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_nn>", 0, 50, GPU),
        ev("kernel", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64", 50, 20, GPU),
        ev("kernel", "void at::native::vectorized_elementwise_kernel<4>", 70, 3, GPU),
        memory(5, device_type=1, device=0, allocated=3.0e9),
        memory(6, device_type=0, device=-1, allocated=9.0e9),
    ]
    r = read_trace_set([write(tmp_path, events)]).ranks[0]
    assert (r.kernels, r.tiny_kernels, r.tensor_core_kernels) == (3, 1, 2)
    assert r.peak_device_memory_bytes == 3_000_000_000  # the host's [memory] is not the GPU's


def test_a_trace_without_steps_is_one_step_with_a_note(tmp_path: Path) -> None:
    r = read_trace_set([write(tmp_path, [ev("cpu_op", "aten::mm", 5, 10)])]).ranks[0]
    assert [(s.step, s.duration_us) for s in r.steps] == [(0, 10)]
    assert any("ProfilerStep" in n for n in r.notes)


_event = st.builds(
    lambda cat, name, ts, dur, corr: ev(
        cat, name, ts, dur, GPU if cat in ("kernel", "gpu_memcpy") else HOST, correlation=corr
    ),
    st.sampled_from(
        [
            "cpu_op",
            "cuda_runtime",
            "kernel",
            "gpu_memcpy",
            "gpu_memset",
            "user_annotation",
            "python_function",
        ]
    ),
    st.sampled_from(
        [
            "ProfilerStep#1",
            "ProfilerStep#2",
            "aten::mm",
            "ncclKernel_x",
            "enumerate(DataLoader)#x.__next__",
            "gloo:all_reduce",
            "cudaStreamSynchronize",
            "Memcpy HtoD (Pinned -> Device)",
        ]
    ),
    st.floats(0, 1000, allow_nan=False),
    st.floats(0, 300, allow_nan=False),
    st.integers(0, 5),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_event, max_size=30))
def test_shares_sum_to_one_each_in_range_durations_non_negative(
    tmp_path: Path, events: list[dict[str, Any]]
) -> None:
    for r in read_trace_set([write(tmp_path, events)]).ranks:
        for s in r.steps:
            assert s.duration_us >= 0
            assert set(s.by_kind) == {*KINDS, IDLE}
            if s.duration_us > 0:
                shares = [s.share(k) for k in (*KINDS, IDLE)]
                assert all(-1e-9 <= x <= 1 + 1e-9 for x in shares)
                assert abs(sum(shares) - 1) < 1e-6
                assert 0 <= s.gpu_busy_us <= s.duration_us + 1e-6
                assert 0 <= s.communication_exposed_us <= s.duration_us + 1e-6
