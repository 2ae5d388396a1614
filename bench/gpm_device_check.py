"""On a GPU node: tuneadvisor's own sampler reads GPM under known loads, and the rules name
each (issue 25). Run it in the same run as the GPU acceptance script:

    python bench/gpm_device_check.py [--out DIR] [--seconds 5]

Needs torch, nvidia-ml-py and this checkout on a Hopper or newer GPU. Each load runs in its
own process while ``NvmlSampler`` (the real nvidia-ml-py, ctypes and driver: the path the
tests can only fake) samples once a second; the rounds become a series, its facts go through
the rule pack, and the SM-level findings are compared with what the H200 recording showed:
bf16 matmuls nothing, a CUDA graph of tiny kernels busy-but-underused, device-to-device
copies memory-bandwidth-bound. Writes ``gpm-check.json`` into DIR; exit 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EXPECTED = {
    "bf16_matmul": set(),
    "tiny_graph": {"busy-but-underused"},
    "copy_bound": {"memory-bandwidth-bound"},
}
SM_LEVEL = {"busy-but-underused", "tensor-cores-idle", "memory-bandwidth-bound"}
FIELDS = ("util_pct", "sm_active_pct", "sm_occupancy_pct", "tensor_active_pct",
          "dram_active_pct", "pcie_rx_mib_s", "pcie_tx_mib_s")  # fmt: skip


def _load(kind: str, seconds: float, ready: Any) -> None:
    import torch

    dev, end = torch.device("cuda"), time.monotonic() + seconds
    if kind == "bf16_matmul":
        a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        step = lambda: [a @ b for _ in range(20)]  # noqa: E731
    elif kind == "tiny_graph":
        x = torch.zeros(1, device=dev)
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            x.add_(1)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(1000):
                x.add_(1)
        step = graph.replay
    else:  # copy_bound: 1 GiB device-to-device copies
        src = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
        dst = torch.empty_like(src)
        step = lambda: dst.copy_(src)  # noqa: E731
    ready.set()
    while time.monotonic() < end:
        step()
        torch.cuda.synchronize()


def check(kind: str, seconds: float) -> dict[str, Any]:
    from tuneadvisor.advisor.engine import evaluate
    from tuneadvisor.metrics.model import MetricsSeries
    from tuneadvisor.metrics.nvml import NvmlSampler
    from tuneadvisor.workspace.rule_files import default_rules_dir, load_rules

    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    proc = ctx.Process(target=_load, args=(kind, seconds + 3, ready))
    proc.start()
    ready.wait(120)
    time.sleep(1.0)
    sampler = NvmlSampler()
    reason = sampler.open()
    samples, costs, problems = [], [], []
    for i in range(int(seconds)):
        time.sleep(1.0)
        t0 = time.perf_counter()
        reading = sampler.sample(float(i))
        costs.append(round((time.perf_counter() - t0) * 1000, 3))
        samples += reading.gpus
        problems += reading.problems
    activity_reason = sampler.activity_reason
    sampler.close()
    proc.join()
    facts = MetricsSeries.from_samples(samples, source="recording").facts()
    found = {f.id for f in evaluate(load_rules([default_rules_dir()]), facts).findings}
    return {
        "open": reason,
        "activity_reason": activity_reason,
        "problems": problems,
        "round_ms": costs,
        "rounds": [{k: getattr(s, k) for k in FIELDS} for s in samples],
        "facts": {k: v for k, v in facts.items() if k.startswith("gpu.")},
        "sm_level_findings": sorted(found & SM_LEVEL),
        "expected": sorted(EXPECTED[kind]),
        "ok": found & SM_LEVEL == EXPECTED[kind],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    results = {kind: check(kind, args.seconds) for kind in EXPECTED}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpm-check.json").write_text(json.dumps(results, indent=1))
    for kind, got in results.items():
        print(f"{kind}: {'ok' if got['ok'] else 'MISMATCH'} {got['sm_level_findings']} "
              f"round {got['round_ms']} ms {got['activity_reason'] or ''}")  # fmt: skip
    return 0 if all(r["ok"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
