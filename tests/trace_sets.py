"""Hand-made torch.profiler trace sets (the model the reader fills), with realistic numbers,
for the presentation's tests: a 4-rank DDP ResNet-50 on A100s where rank 2 straggles, and a
CPU-only trace of one process without torch.distributed."""

from __future__ import annotations

from tuneadvisor.profile.trace.model import (
    Copies,
    HostGap,
    HostSync,
    NamedTime,
    RankTrace,
    StepTime,
    TraceDevice,
    TraceSet,
)

# µs a step by kind (sums to 120 ms): ranks 0, 1 and 3 wait in all-reduce for rank 2, whose
# own kernels take 24 ms longer (a slower GPU clock, say).
_EVEN = {"kernel": 70_000.0, "memcpy": 2_000.0, "memset": 300.0, "communication": 30_000.0,
         "runtime": 4_000.0, "dataloader": 6_000.0, "cpu_op": 3_000.0, "other": 700.0,
         "idle": 4_000.0}  # fmt: skip
_SLOW = {**_EVEN, "kernel": 94_000.0, "communication": 8_000.0, "idle": 2_000.0}

KERNELS = (
    "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_"
    "warpsize2x2x1_g1_tensor16x8x8_kernel",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>(cudnnTensorStruct, "
    "float const*, cudnnTensorStruct, float*, float const*, float const*, float, float, float*, "
    "float*, float*, float*, float, float)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3>)",
)
OPS = ("aten::cudnn_convolution", "aten::convolution_backward", "aten::native_batch_norm",
       "Optimizer.step#SGD.step", "aten::copy_", "aten::item")  # fmt: skip


def _steps(by_kind: dict[str, float], first: int = 12, count: int = 3) -> tuple[StepTime, ...]:
    total = sum(by_kind.values())
    busy = by_kind["kernel"] + by_kind["memcpy"] + by_kind["memset"]
    exposed = by_kind["communication"] * 0.6
    return tuple(
        StepTime(step=n, start_us=1.7e12 + i * total, duration_us=total, by_kind=dict(by_kind),
                 communication_exposed_us=exposed, gpu_busy_us=busy)
        for i, n in enumerate(range(first, first + count))
    )  # fmt: skip


def _rank(rank: int, slow: bool) -> RankTrace:
    by_kind = _SLOW if slow else _EVEN
    scale = 94 / 70 if slow else 1.0
    return RankTrace(
        path=f"traces/rank{rank}.1732650000000000000.pt.trace.json.gz",
        rank=rank,
        world_size=4,
        steps=_steps(by_kind),
        has_device=True,
        devices=(TraceDevice("NVIDIA A100-SXM4-40GB", 8, 42_505_273_344),),
        top_kernels=tuple(
            sorted(
                (
                    NamedTime(KERNELS[0], 477, 118_000.0 * scale, 1_250.0),
                    NamedTime(KERNELS[1], 483, 90_000.0 if not slow else 24_000.0, 4_100.0),
                    NamedTime(KERNELS[2], 159, 31_000.0 * scale, 410.0),
                    NamedTime(KERNELS[3], 2_190, 9_800.0, 38.0),
                ),
                key=lambda n: -n.total_us,
            )
        ),
        top_ops=(
            NamedTime(OPS[0], 159, 64_000.0, 900.0),
            NamedTime(OPS[1], 159, 58_000.0, 1_100.0),
            NamedTime(OPS[2], 159, 12_500.0, 160.0),
            NamedTime(OPS[3], 3, 9_300.0, 3_200.0),
            NamedTime(OPS[4], 6, 6_100.0, 1_050.0),
        ),
        host_gaps=(
            HostGap(
                13,
                1.7e12 + 121_000.0,
                4_800.0,
                "Optimizer.step#SGD.step",
                "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
            ),
            HostGap(12, 1.7e12 + 2_000.0, 1_900.0, "aten::item", "aten::cudnn_convolution"),
            HostGap(14, 1.7e12 + 240_500.0, 620.0, "", "aten::copy_"),
        ),
        copies=Copies(
            htod_pageable_count=6,
            htod_pageable_bytes=6 * 19_267_584,
            htod_pageable_us=6 * 1_650.0,
            dtoh_count=3,
            dtoh_us=12.0,
        ),
        syncs=(HostSync("cudaStreamSynchronize", "aten::item", 3, 2_400.0),),
        dataloader_calls=3,
        dataloader_us=18_000.0,
        kernels=2_190 + 477 + 483 + 159,
        tiny_kernels=1_310,
        tensor_core_kernels=477,
        peak_device_memory_bytes=21_474_836_480,
        events=412_000,
    )


def ddp_resnet() -> TraceSet:
    """Four ranks of a DDP ResNet-50, rank 2 the straggler."""
    return TraceSet(ranks=tuple(_rank(r, slow=r == 2) for r in range(4)))


def balanced_ddp() -> TraceSet:
    """The same four ranks with none straggling."""
    return TraceSet(ranks=tuple(_rank(r, slow=False) for r in range(4)))


def cpu_only() -> TraceSet:
    """mnist_single on a CPU, torch.distributed not initialised: no device, no rank."""
    by_kind = {"kernel": 0.0, "memcpy": 0.0, "memset": 0.0, "communication": 0.0,
               "runtime": 0.0, "dataloader": 2_600.0, "cpu_op": 14_200.0, "other": 900.0,
               "idle": 300.0}  # fmt: skip
    steps = tuple(
        StepTime(step=n, start_us=9.1e9 + n * 18_000.0, duration_us=18_000.0, by_kind=by_kind)
        for n in range(2, 5)
    )
    trace = RankTrace(
        path="runs/mnist/rank0.1732650000000000000.pt.trace.json.gz",
        rank=None,
        steps=steps,
        has_device=False,
        top_ops=(
            NamedTime("aten::mkldnn_convolution", 6, 21_000.0, 4_000.0),
            NamedTime("aten::convolution_backward", 6, 17_500.0, 3_300.0),
        ),
        host_gaps=(HostGap(3, 9.1e9 + 54_000.0, 700.0, "aten::nll_loss", "aten::zeros"),),
        dataloader_calls=3,
        dataloader_us=7_800.0,
        events=5_300,
        notes=("distributedInfo absent: torch.distributed was not initialised",),
    )
    return TraceSet(ranks=(trace,), ordered_by="file")
