"""The main process's cost of receiving one batch from a DataLoader worker (issue 31 §3): the
figure behind the step-time model's assumed ``RECEIVE_S`` (advisor/steptime.py).

Two workers make batches of a dataset that costs nothing (zeros) while the loop sleeps between
batches, so the workers are always ahead and ``next()`` only receives: the queue, unpickling,
mapping the tensors' shared memory. Timed per call: the wall time and the main thread's CPU
time (the wall time on a loaded machine includes waiting for a CPU). Recorded, never asserted;
replaces only its own section of bench/RESULTS.md.

    .venv/bin/python bench/receive_cost.py [--batches 80]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: bench/ is on the path, the root is not
    sys.path.insert(0, str(ROOT))

from bench.results_index import refresh, with_section  # noqa: E402

RESULTS = ROOT / "bench" / "RESULTS.md"
BEGIN = "<!-- receive-cost:begin -->"
END = "<!-- receive-cost:end -->"
SHAPES = (((1, 28, 28), 32, "32 MNIST images"), ((1, 28, 28), 256, "256 MNIST images"),
          ((3, 224, 224), 32, "32 images of 3x224x224"))  # fmt: skip


def _quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def measure(shape: tuple[int, ...], batch: int, batches: int) -> tuple[list[float], list[float]]:
    """(wall, CPU) seconds of each ``next()`` with two workers ahead of the loop."""
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Zeros(Dataset[tuple[torch.Tensor, int]]):
        def __len__(self) -> int:
            return 1_000_000

        def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
            return torch.zeros(shape), index

    batches_of = iter(DataLoader(Zeros(), batch_size=batch, num_workers=2))
    next(batches_of)  # the workers started
    wall, cpu = [], []
    for _ in range(batches):
        time.sleep(0.03)  # the loop's work: the workers get ahead
        w, c = time.perf_counter(), time.thread_time()
        next(batches_of)
        cpu.append(time.thread_time() - c)
        wall.append(time.perf_counter() - w)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=80)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    load0 = os.getloadavg()[0]
    rows = []
    for shape, batch, what in SHAPES:
        wall, cpu = measure(shape, batch, args.batches)
        rows.append(
            f"| {what} | {1000 * _quantile(cpu, 0.1):.2f} | {1000 * _quantile(cpu, 0.5):.2f} | "
            f"{1000 * _quantile(wall, 0.1):.2f} | {1000 * _quantile(wall, 0.5):.2f} |"
        )
    load1 = os.getloadavg()[0]
    section = "\n".join([
        BEGIN,
        "## Receiving a batch from a DataLoader worker (issue 31 §3)",
        "",
        f"Recorded {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `.venv/bin/python "
        f"bench/receive_cost.py --batches {args.batches}`. Load average {load0:.2f} at the "
        f"start, {load1:.2f} at the end, on {os.cpu_count()} CPUs shared with other work.",
        "",
        "Two workers always ahead of a loop that sleeps 30 ms a batch; per `next()`: the main "
        f"thread's CPU time and the wall time, {args.batches} batches each. The step-time "
        "model assumes 1 ms a batch (`RECEIVE_S`, advisor/steptime.py), never more than the "
        "measured wait.",
        "",
        "| batch | CPU p10, ms | CPU median, ms | wall p10, ms | wall median, ms |",
        "|---|---|---|---|---|",
        *rows,
        END,
    ])  # fmt: skip
    text = args.out.read_text(encoding="utf-8") if args.out.exists() else "# Benchmarks\n"
    args.out.write_text(refresh(with_section(text, section, BEGIN, END)), encoding="utf-8")
    print(section)


if __name__ == "__main__":
    main()
