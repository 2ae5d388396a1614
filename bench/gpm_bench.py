"""The cost of NVML's GPM in one `watch` round (issue 25), recorded in bench/RESULTS.md.

    .venv/bin/python bench/gpm_bench.py [--rounds N]

Replaces only its own section (between the gpm-bench markers). Measured, never asserted:

G1. on this machine (no GPU): ``NvmlSampler.sample`` per round against the pynvml stand-in
    (tests/fixtures/nvml/fake) answering the H200's recorded GPM rounds, with GPM and without
    (``activity=False``), CPU and wall per round. The stand-in answers at once, so this is the
    sampler's own Python per round (building the request, reading the answer), not the driver;
G2. on the H200 (tests/fixtures/nvml/gpm-h200.json, recorded by bench/gpu_capture.py): the
    driver's time in ``nvmlGpmSampleGet`` and ``nvmlGpmMetricsGet`` per call, over every
    round of every load (that capture asked 17 metric ids per call; the sampler asks 8), and
    the sampler's round on that H200 before GPM (the GPU acceptance run's ``nvml_sample``, in
    this file's gpu-acceptance section), whose PCIe counter GPM's PCIe traffic replaces.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tuneadvisor.metrics.nvml import NvmlSampler  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "nvml"
BEGIN = "<!-- gpm-bench:begin -->"
END = "<!-- gpm-bench:end -->"
# The GPU acceptance run on the H200 (this file's gpu-acceptance section, "sampler cost per
# round"): NvmlSampler.sample with the PCIe counter, and without it, median wall ms.
ACCEPTANCE_WITH_PCIE_MS = 41.96
ACCEPTANCE_WITHOUT_PCIE_MS = 0.286


def _fake() -> Any:
    spec = importlib.util.spec_from_file_location("pynvml", FIXTURES / "fake" / "pynvml.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["pynvml"] = module
    spec.loader.exec_module(module)
    return module


def _h200(capture: dict[str, Any]) -> dict[str, Any]:
    fixture = json.loads((FIXTURES / "h200-1gpu.json").read_text())
    device = fixture["devices"][0]
    device["nvmlGpmQueryDeviceSupport"] = capture["gpm_support"]
    rounds = capture["loads"]["bf16_matmul"]["rounds"]
    device["nvmlGpmMetricsGet"] = {"seq": [r["metrics"] for r in rounds]}
    return fixture


def _per_round(
    fake: Any, fixture: dict[str, Any], rounds: int, **kw: Any
) -> tuple[float, float, float]:
    fake.load_data(copy.deepcopy(fixture))
    sampler = NvmlSampler(**kw)
    assert sampler.open() is None
    cpu: list[float] = []
    wall: list[float] = []
    for i in range(rounds):
        c0, w0 = time.thread_time(), time.perf_counter()
        sampler.sample(float(i))
        cpu.append((time.thread_time() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
    sampler.close()
    wall.sort()
    return statistics.median(cpu), statistics.median(wall), wall[int(0.95 * (len(wall) - 1))]


def _calls(capture: dict[str, Any], key: str) -> list[float]:
    return sorted(r[key] for load in capture["loads"].values() for r in load["rounds"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    capture = json.loads((FIXTURES / "gpm-h200.json").read_text())
    fake = _fake()
    fixture = _h200(capture)
    load_start = os.getloadavg()[0]
    with_gpm = _per_round(fake, fixture, args.rounds)
    without = _per_round(fake, fixture, args.rounds, activity=False, pcie=False)
    load_end = os.getloadavg()[0]
    get, metrics = _calls(capture, "sample_get_ms"), _calls(capture, "metrics_get_ms")

    def p95(values: list[float]) -> float:
        return values[int(0.95 * (len(values) - 1))]

    gpm_round = statistics.median(get) + statistics.median(metrics)
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    command = f".venv/bin/python bench/gpm_bench.py --rounds {args.rounds}"
    lines = [
        BEGIN,
        "## GPM in a `watch` round (issue 25)",
        "",
        f"Recorded {when} UTC by `{command}` (rewrites only this section). Load average "
        f"{load_start:.2f} at the start, {load_end:.2f} at the end, on {os.cpu_count()} CPUs. "
        "No GPU here: G1 times the sampler's own code against the pynvml stand-in; G2 is "
        "the H200's driver time as bench/gpu_capture.py recorded it "
        f"({capture['recorded']}).",
        "",
        "| # | What | Measured |",
        "|---|------|----------|",
        f"| G1 | `NvmlSampler.sample`, 1 GPU, stand-in pynvml, {args.rounds} rounds: with GPM "
        f"(8 metrics; GPM's PCIe replaces the PCIe counter) / without GPM and PCIe | "
        f"CPU {with_gpm[0]:.3f} / {without[0]:.3f} ms per round (median); wall "
        f"{with_gpm[1]:.3f} (p95 {with_gpm[2]:.3f}) / {without[1]:.3f} "
        f"(p95 {without[2]:.3f}) ms |",
        f"| G2 | H200, driver 580: `nvmlGpmSampleGet` / `nvmlGpmMetricsGet` (17 ids) per "
        f"call, {len(get)} rounds over {len(capture['loads'])} loads | "
        f"{statistics.median(get):.3f} (p95 {p95(get):.3f}) / "
        f"{statistics.median(metrics):.3f} (p95 {p95(metrics):.3f}) ms |",
        f"| G3 | H200: a GPU's round with GPM (G2's two calls, medians, plus the round "
        f"without PCIe) against the round before GPM with its PCIe counter | "
        f"~{gpm_round + ACCEPTANCE_WITHOUT_PCIE_MS:.1f} ms against {ACCEPTANCE_WITH_PCIE_MS} "
        f"ms (without PCIe {ACCEPTANCE_WITHOUT_PCIE_MS} ms) |",
        "",
        "- GPM costs the driver about 1.5-6 ms per GPU and round, most of it in "
        "`nvmlGpmMetricsGet` (the first call of a load is the slowest); the sampler asks 8 "
        "ids, the capture 17 (the cost with 8 was not measured on the device). It replaces "
        "`nvmlDeviceGetPcieThroughput`, which waits ~20 ms inside each of its two calls, so "
        "a round with GPM is cheaper than one with the PCIe counter.",
        "- Not measured on a device: MIG (`nvmlGpmMigSampleGet`), GPUs before Hopper (no GPM: "
        "the sampler asks `nvmlGpmQueryDeviceSupport` once at start and nothing after), more "
        "than one GPU.",
        END,
    ]
    section = "\n".join(lines)
    sys.path.insert(0, str(ROOT / "bench"))
    from results_index import record_section

    record_section(section, BEGIN, END)
    print(section)


if __name__ == "__main__":
    main()
