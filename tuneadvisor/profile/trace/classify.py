"""What one trace event is: its kind in the breakdown, and the names only a trace proves.

The kinds and their order are the TensorBoard plugin's (``model.KINDS``). Communication is a
device kind (NCCL kernels: old ``ncclKernel_*`` and new ``ncclDevKernel_*``) or a host one
(gloo collectives run on the CPU: ``gloo:all_reduce``); the breakdown keeps them apart
(``COMM_DEVICE``/``COMM_HOST``) to tell exposed communication and GPU busy time.
"""

from __future__ import annotations

import re

# internal kinds: the plugin's, with communication split by where it runs
KERNEL = "kernel"
MEMCPY = "memcpy"
MEMSET = "memset"
COMM_DEVICE = "communication"
COMM_HOST = "communication_host"
RUNTIME = "runtime"
DATALOADER = "dataloader"
CPU_OP = "cpu_op"
OTHER = "other"

DEVICE_KINDS = frozenset({KERNEL, MEMCPY, MEMSET, COMM_DEVICE})
HOST_KINDS = frozenset({COMM_HOST, RUNTIME, DATALOADER, CPU_OP, OTHER})

STEP_RE = re.compile(r"ProfilerStep#([0-9]{1,12})")  # [0-9]: "#٣" is no step number

_HOST_CATS = {"cpu_op": CPU_OP, "operator": CPU_OP, "user_annotation": OTHER,
              "python_function": OTHER, "cuda_runtime": RUNTIME, "cuda_driver": RUNTIME,
              "runtime": RUNTIME}  # fmt: skip
_DEVICE_CATS = {"kernel": KERNEL, "gpu_memcpy": MEMCPY, "gpu_memset": MEMSET,
                "memcpy": MEMCPY, "memset": MEMSET}  # fmt: skip

# Host calls that block until the device catches up, and the ops that call them.
SYNC_RUNTIME = frozenset(
    {
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
        "cudaEventSynchronize",
        "hipStreamSynchronize",
        "hipDeviceSynchronize",
    }
)
SYNC_OPS = frozenset({"aten::item", "aten::_local_scalar_dense"})

# Tensor-core math shows in kernel names, decided from the real traces in
# tests/fixtures/realworld/traces (A100: ``cutlass_80_tensorop_s1688gemm``,
# ``sm80_xmma_fprop_implicit_gemm_tf32f32``, ``cutlass_tensorop_s1688fprop``) and the names
# cuBLAS/cuDNN/CUTLASS use on Volta to Hopper: ``volta_h884gemm``, ``turing_h1688gemm``,
# ``ampere_bf16_s16816gemm``, ``sm90_xmma``, ``wgmma``/``gmma``, ``hmma``, flash attention.
# Literals only (no ``.*``): a kernel name of 60 kB no longer backtracks for minutes. The
# "a GEMM/conv that names a reduced type" pair, in either order, is found with str.find.
TENSOR_CORE_RE = re.compile(
    r"tensorop|xmma|hmma|gmma|imma|[hsi](?:884|1688|16816|16832)|flash_?(?:fwd|bwd|attn)|fmha",
    re.IGNORECASE,
)
_MATH_WORDS = ("gemm", "mma", "conv", "fprop", "dgrad", "wgrad")
_TYPE_WORDS = ("bf16", "fp16", "f16", "tf32", "half")


def _one_before_other(text: str, first: tuple[str, ...], then: tuple[str, ...]) -> bool:
    """Whether some word of ``first`` ends at or before the start of some word of ``then``
    (the old ``(?:first).*(?:then)``), in linear time: the earliest end against the latest
    start."""
    ends = [i + len(w) for w in first if (i := text.find(w)) >= 0]
    starts = [text.rfind(w) for w in then]
    return bool(ends) and min(ends) <= max(starts)


def kind_of(cat: str, name: str) -> str | None:
    """The internal kind of an ``X`` event, or None for what the breakdown leaves out."""
    cat = cat.lower()  # torch 1.8/1.9 wrote Operator, Kernel, Memcpy, Runtime
    device = _DEVICE_CATS.get(cat)
    if device is not None:
        if device == KERNEL and name[:4].lower() == "nccl":
            return COMM_DEVICE
        return device
    host = _HOST_CATS.get(cat)
    if host is None:
        return None
    if STEP_RE.match(name):
        return None  # the step itself is the window, not work in it
    if is_dataloader(name):
        return DATALOADER
    if name.startswith("gloo:") and host != RUNTIME:
        return COMM_HOST
    return host


def is_host_category(cat: str) -> bool:
    """A host event's category: where ``ProfilerStep#N`` marks a step. Recent torch also
    writes the step on the GPU's timeline (``gpu_user_annotation``): that copy is no step."""
    return cat.lower() in _HOST_CATS


def is_dataloader(name: str) -> bool:
    return name.startswith("enumerate(DataLoader)") or "train_dataloader_next" in name


def is_dataloader_call(name: str) -> bool:
    """One fetch of a batch: the plugin's ``enumerate(DataLoader)#...__next__``, Lightning's
    ``[_TrainingEpochLoop].train_dataloader_next``."""
    return (name.startswith("enumerate(DataLoader)") and name.endswith("__next__")) or (
        "train_dataloader_next" in name
    )


def is_optimizer_step(name: str) -> bool:
    """torch.optim's ``record_function`` around each step: ``Optimizer.step#SGD.step`` (one a
    training iteration, where no ``ProfilerStep#N`` marks the steps)."""
    return name.startswith("Optimizer.step#")


def copy_source(name: str) -> str | None:
    """'pageable', 'pinned' or 'dtoh' for a copy event's name; None for others."""
    if "HtoD" in name:
        if "Pageable" in name:
            return "pageable"
        if "Pinned" in name:
            return "pinned"
        return None
    if "DtoH" in name:
        return "dtoh"
    return None


# ...but an xmma kernel that does its math in FP32 FMAs on the ordinary cores says so: the
# H200's ``sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_..._ffma_...`` (an FP32
# Linear without TF32) is no tensor-core kernel; a TF32 or half one names its type.
SIMT_RE = re.compile(r"ffma|sgemm", re.IGNORECASE)
REDUCED_RE = re.compile(r"tf32|bf16|fp16|f16|half|hmma|[hsi](?:884|1688|16816|16832)", re.I)


def is_tensor_core(name: str) -> bool:
    if SIMT_RE.search(name) and not REDUCED_RE.search(name):
        return False
    if TENSOR_CORE_RE.search(name) is not None:
        return True
    low = name.lower()
    return _one_before_other(low, _MATH_WORDS, _TYPE_WORDS) or _one_before_other(
        low, _TYPE_WORDS, _MATH_WORDS
    )
