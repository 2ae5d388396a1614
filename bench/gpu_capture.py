"""Record what only a real GPU can give the tests: GPM readings of known loads and torch.profiler
traces (issues 22 and 25). Stand-alone: it needs torch and nvidia-ml-py, not tuneadvisor.

    python bench/gpu_capture.py --out DIR [--seconds 4]

Writes into DIR:

- ``gpm.json``: the device, ``nvmlGpmQueryDeviceSupport``, and for each load (``idle``,
  ``bf16_matmul``, ``tiny_kernels``, ``copy_bound`` (device to device), ``pcie_htod`` (pinned
  host to device)) NVML's utilisation and, per round, every GPM metric as
  ``nvmlGpmMetricsGet`` returned it (``metricId``, ``nvmlReturn``, ``value``): the values at the
  call boundary that the tests replay. Also the wall time of each ``nvmlGpmSampleGet`` and
  ``nvmlGpmMetricsGet`` call.
- ``traces.tar``: ``torch.profiler`` traces (``tensorboard_trace_handler``, gzip) of a small
  training loop: pageable copies and an ``.item()`` per step (``pageable_sync``), pinned and
  non-blocking without the sync (``pinned``), many tiny kernels (``tiny``), and two ranks of
  DDP over gloo (``ddp``: ``distributedInfo`` present).
- ``capture.log``: what ran and what failed. A failed part is recorded, never fatal.

Without a GPU it writes the CPU traces and says the GPM part could not run.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import tarfile
import time
import traceback
from pathlib import Path
from typing import Any

LOG: list[str] = []


def log(line: str) -> None:
    LOG.append(line)
    print(line, flush=True)


# --- loads, each in its own process so the sampler's process stays idle -----------------------


def _load(kind: str, seconds: float, ready: Any) -> None:
    import torch

    dev = torch.device("cuda")
    end = time.monotonic() + seconds
    if kind == "idle":
        ready.set()
        time.sleep(seconds)
        return
    if kind == "bf16_matmul":
        a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        ready.set()
        while time.monotonic() < end:
            for _ in range(20):
                a @ b
            torch.cuda.synchronize()
    elif kind == "tiny_kernels":
        x = torch.zeros(1, device=dev)
        ready.set()
        while time.monotonic() < end:
            for _ in range(2000):
                x.add_(1)
            torch.cuda.synchronize()
    elif kind == "tiny_graph":
        # Back-to-back one-element kernels replayed from a CUDA graph: no launch gaps, so
        # "utilization" reads near 100 % while almost every SM is idle.
        x = torch.zeros(1, device=dev)
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            x.add_(1)  # warm up on a side stream, as graph capture wants
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(1000):
                x.add_(1)
        ready.set()
        while time.monotonic() < end:
            for _ in range(20):
                graph.replay()
            torch.cuda.synchronize()
    elif kind == "copy_bound":
        a = torch.empty(1 << 30, device=dev, dtype=torch.uint8)  # 1 GiB, device to device
        b = torch.empty_like(a)
        ready.set()
        while time.monotonic() < end:
            for _ in range(10):
                b.copy_(a)
            torch.cuda.synchronize()
    elif kind == "pcie_htod":
        h = torch.empty(1 << 28, dtype=torch.uint8).pin_memory()  # 256 MiB pinned
        d = torch.empty(1 << 28, device=dev, dtype=torch.uint8)
        ready.set()
        while time.monotonic() < end:
            for _ in range(4):
                d.copy_(h, non_blocking=True)
            torch.cuda.synchronize()


# The metrics the rules read, in one call. Asking for ids the driver does not know (a newer
# nvidia-ml-py lists ~300) fails the whole call with InvalidArgument: then each id alone.
CORE_METRICS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 20, 21, 60, 61)


def _metrics_get(pynvml: Any, ids: tuple[int, ...], s1: Any, s2: Any) -> list[dict[str, Any]]:
    req = pynvml.c_nvmlGpmMetricsGet_t()
    req.version = pynvml.NVML_GPM_METRICS_GET_VERSION
    req.numMetrics = len(ids)
    req.sample1 = s1
    req.sample2 = s2
    for i, mid in enumerate(ids):
        req.metrics[i].metricId = mid
    pynvml.nvmlGpmMetricsGet(req)
    return [
        {
            "metricId": int(req.metrics[i].metricId),
            "nvmlReturn": int(req.metrics[i].nvmlReturn),
            "value": float(req.metrics[i].value),
        }
        for i in range(len(ids))
    ]


def _gpm_round(pynvml: Any, handle: Any, s1: Any, s2: Any) -> dict[str, Any]:
    """One interval: a sample already in s1, take s2, ask the metrics."""
    t0 = time.perf_counter()
    pynvml.nvmlGpmSampleGet(handle, s2)
    get_ms = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    batch_error = None
    try:
        out = _metrics_get(pynvml, CORE_METRICS, s1, s2)
    except pynvml.NVMLError as exc:
        batch_error = repr(exc)
        out = []
        for mid in CORE_METRICS:
            try:
                out.extend(_metrics_get(pynvml, (mid,), s1, s2))
            except pynvml.NVMLError as one:
                out.append({"metricId": mid, "callError": int(one.value), "value": None})
    metrics_ms = (time.perf_counter() - t0) * 1e3
    return {
        "metrics": out,
        "sample_get_ms": get_ms,
        "metrics_get_ms": metrics_ms,
        "batch_error": batch_error,
    }


LOADS = ("idle", "bf16_matmul", "tiny_kernels", "tiny_graph", "copy_bound", "pcie_htod")


def capture_gpm(out: Path, seconds: float, loads: tuple[str, ...] = LOADS) -> None:
    try:
        import pynvml
    except ImportError as exc:
        log(f"gpm: no pynvml: {exc}")
        return
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        log(f"gpm: nvmlInit failed: {exc!r}")
        return
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    result: dict[str, Any] = {
        "device": {
            "name": _s(pynvml.nvmlDeviceGetName(handle)),
            "driver": _s(pynvml.nvmlSystemGetDriverVersion()),
            "nvml_version": _s(pynvml.nvmlSystemGetNVMLVersion()),
            "cuda_capability": list(pynvml.nvmlDeviceGetCudaComputeCapability(handle)),
            "pynvml": getattr(pynvml, "__version__", ""),
        },
        "interval_s": 1.0,
        "loads": {},
    }
    try:
        sup = pynvml.nvmlGpmQueryDeviceSupport(handle)
        result["gpm_support"] = {
            "version": int(sup.version),
            "isSupportedDevice": int(sup.isSupportedDevice),
        }
    except Exception as exc:
        result["gpm_support"] = {"error": repr(exc)}
        log(f"gpm: query support failed: {exc!r}")
    try:
        mode = pynvml.nvmlDeviceGetMigMode(handle)
        result["device"]["mig_mode"] = list(mode)
    except Exception as exc:
        result["device"]["mig_mode"] = repr(exc)
    result["metric_ids"] = list(CORE_METRICS)
    ctx = mp.get_context("spawn")
    for kind in loads:
        ready = ctx.Event()
        proc = ctx.Process(target=_load, args=(kind, seconds + 3.0, ready))
        proc.start()
        entry: dict[str, Any] = {"rounds": []}
        try:
            if not ready.wait(60):
                raise RuntimeError("load did not start")
            time.sleep(1.0)  # past the load's first kernels
            s1, s2 = pynvml.nvmlGpmSampleAlloc(), pynvml.nvmlGpmSampleAlloc()
            pynvml.nvmlGpmSampleGet(handle, s1)
            for _ in range(int(seconds)):
                time.sleep(1.0)
                entry["rounds"].append(_gpm_round(pynvml, handle, s1, s2))
                s1, s2 = s2, s1
            util = pynvml.nvmlDeviceGetUtilizationRates(handle)
            entry["utilization"] = {"gpu": int(util.gpu), "memory": int(util.memory)}
            mem = pynvml.nvmlDeviceGetMemoryInfo(handle)
            entry["memory_used_mib"] = mem.used / 2**20
            pynvml.nvmlGpmSampleFree(s1)
            pynvml.nvmlGpmSampleFree(s2)
        except Exception as exc:
            entry["error"] = repr(exc)
            log(f"gpm {kind}: {exc!r}\n{traceback.format_exc()}")
        proc.join(30)
        if proc.is_alive():
            proc.kill()
        result["loads"][kind] = entry
        named = {
            m["metricId"]: m["value"]
            for r in entry["rounds"][-1:]
            for m in r["metrics"]
            if m["nvmlReturn"] == 0
        }
        log(
            f"gpm {kind}: util {entry.get('utilization')} SM {named.get(2)} occ {named.get(3)} "
            f"tensor {named.get(5)} dram {named.get(10)} pcie rx {named.get(21)}"
        )
    pynvml.nvmlShutdown()
    (out / "gpm.json").write_text(json.dumps(result, indent=1))


def _s(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


# --- torch.profiler traces -----------------------------------------------------------------------


def _train(name: str, out: Path, *, pinned: bool, sync: bool, tiny: bool, rank: int | None) -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
    from torch.utils.data import DataLoader, TensorDataset

    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    data = TensorDataset(torch.randn(2048, 3, 32, 32), torch.randint(0, 10, (2048,)))
    loader = DataLoader(data, batch_size=64, num_workers=2, pin_memory=pinned and cuda)
    model: torch.nn.Module = torch.nn.Sequential(
        torch.nn.Conv2d(3, 64, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(64, 64, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(64, 10),
    ).to(dev)
    if rank is not None:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0] if cuda else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    worker = f"rank{rank}" if rank is not None else name
    with profile(
        activities=acts,
        schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
        on_trace_ready=tensorboard_trace_handler(
            str(out / name), worker_name=worker, use_gzip=True
        ),
        record_shapes=True,
        profile_memory=True,
    ) as prof:
        for step, (x, y) in enumerate(loader):
            if step >= 6:
                break
            x = x.to(dev, non_blocking=pinned)
            y = y.to(dev, non_blocking=pinned)
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=cuda):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if tiny:
                t = torch.zeros(1, device=dev)
                for _ in range(300):
                    t.add_(1)
            if sync:
                float(loss.item())
            prof.step()


def _ddp_rank(rank: int, out: Path) -> None:
    import torch.distributed as dist

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29512")
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        _train("ddp", out, pinned=True, sync=False, tiny=False, rank=rank)
    finally:
        dist.destroy_process_group()


def capture_traces(out: Path) -> None:
    tdir = out / "traces"
    tdir.mkdir(exist_ok=True)
    for name, kw in (
        ("pageable_sync", {"pinned": False, "sync": True, "tiny": False}),
        ("pinned", {"pinned": True, "sync": False, "tiny": False}),
        ("tiny", {"pinned": True, "sync": False, "tiny": True}),
    ):
        try:
            _train(name, tdir, rank=None, **kw)
            log(f"trace {name}: ok")
        except Exception as exc:
            log(f"trace {name}: {exc!r}\n{traceback.format_exc()}")
    try:
        ctx = mp.get_context("spawn")
        procs = [ctx.Process(target=_ddp_rank, args=(r, tdir)) for r in (0, 1)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(180)
        log(f"trace ddp: exit codes {[p.exitcode for p in procs]}")
    except Exception as exc:
        log(f"trace ddp: {exc!r}")
    with tarfile.open(out / "traces.tar", "w") as tar:
        tar.add(tdir, arcname="traces")
    for f in sorted(tdir.rglob("*")):
        if f.is_file():
            log(f"  {f.relative_to(tdir)} {f.stat().st_size} bytes")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--skip-gpm", action="store_true")
    ap.add_argument("--skip-traces", action="store_true")
    ap.add_argument("--loads", default=",".join(LOADS), help="comma-separated")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    try:
        import torch

        cuda = torch.cuda.is_available()
        log(f"torch {torch.__version__}, cuda {cuda}, python {sys.version.split()[0]}")
    except ImportError as exc:
        log(f"no torch: {exc}")
    if not args.skip_gpm:
        capture_gpm(args.out, args.seconds, tuple(args.loads.split(",")))
    if not args.skip_traces:
        capture_traces(args.out)
    log(f"done in {time.monotonic() - t0:.1f} s")
    (args.out / "capture.log").write_text("\n".join(LOG) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
