"""Probe mode of the bundled training scripts (``--probe OUT.json``): three timings that size
the input pipeline in one step, written to a small JSON file that ``tuneadvisor report
--probe OUT.json`` reads as evidence.

After a warm-up, each measured in ``REPEATS`` windows of ``--probe-steps`` steps (their spread
says how far to trust them):

- the ceiling: one batch already on the device, stepped again and again (no input pipeline:
  the fastest the loop could go);
- the input pipeline alone, at 0, 1, 2, 4 ... workers up to the cores the process may use
  (``os.sched_getaffinity``): batches per second with no step at all;
- the real loop at the given settings, with the time spent waiting for the next batch.

The file (``kind: tuneadvisor-probe``, ``schema: 1``) keeps the raw windows; tuneadvisor
derives the medians, spreads, stall share and the smallest worker count that feeds 95 % of
the ceiling (``tuneadvisor/runrecord/probe.py``). Under ``--device-time-ms`` the step is the
sleep of the test mode and the file says ``"test_mode": "device-time-stand-in"``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

KIND = "tuneadvisor-probe"
SCHEMA = 1
REPEATS = 3
WARMUP_STEPS = 2

Batch = tuple[torch.Tensor, torch.Tensor]
Step = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def worker_counts(cores: int) -> list[int]:
    """0, 1, 2, 4 ... up to ``cores``, and ``cores`` itself."""
    counts, n = [0], 1
    while n <= cores:
        counts.append(n)
        n *= 2
    if counts[-1] != cores and cores > 0:
        counts.append(cores)
    return counts


def available_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _batches(make_iter: Callable[[], Iterator[Any]]) -> Iterator[Any]:
    """Batches without end: the loader started again when an epoch runs out."""
    while True:
        yielded = False
        for batch in make_iter():
            yielded = True
            yield batch
        if not yielded:
            raise RuntimeError("the training loader gave no batch")


def _ceiling(batch: Batch, step: Step, device: torch.device, steps: int) -> list[float]:
    data, target = batch
    for _ in range(WARMUP_STEPS):
        step(data, target)
    _sync(device)
    windows = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        for _ in range(steps):
            step(data, target)
        _sync(device)
        windows.append((time.perf_counter() - t0) / steps)
    return windows


def _pipeline(make_iter: Callable[[], Iterator[Any]], steps: int) -> list[float]:
    batches = _batches(make_iter)
    next(batches)  # the workers' start-up is not the pipeline's rate
    rates = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        for _ in range(steps):
            next(batches)
        rates.append(steps / (time.perf_counter() - t0))
    return rates


def _loop(
    make_iter: Callable[[], Iterator[Any]], step: Step, device: torch.device, steps: int
) -> tuple[list[float], list[float]]:
    batches = _batches(make_iter)
    for _ in range(WARMUP_STEPS):
        data, target = next(batches)
        step(data.to(device), target.to(device))
    _sync(device)
    step_s, stall = [], []
    for _ in range(REPEATS):
        waited = 0.0
        t0 = time.perf_counter()
        for _ in range(steps):
            before = time.perf_counter()
            data, target = next(batches)
            waited += time.perf_counter() - before
            step(data.to(device, non_blocking=True), target.to(device, non_blocking=True))
        _sync(device)
        took = time.perf_counter() - t0
        step_s.append(took / steps)
        stall.append(waited / took if took > 0 else 0.0)
    return step_s, stall


def run_probe(
    out: str,
    *,
    script: str,
    loader_for: Callable[[int], Any],
    step: Step,
    device: torch.device,
    batch_size: int,
    num_workers: int,
    steps: int,
    test_mode: dict[str, Any],
) -> dict[str, Any]:
    """Time the ceiling, the pipeline at each worker count and the real loop; write ``out``.
    ``loader_for(workers)`` is the training loader with that many workers."""
    cores = available_cores()
    first: Batch = next(iter(loader_for(0)))
    on_device = (first[0].to(device), first[1].to(device))
    ceiling = _ceiling(on_device, step, device, steps)
    pipeline = [
        {"workers": w, "batches_per_s": _pipeline(lambda w=w: iter(loader_for(w)), steps)}
        for w in worker_counts(cores)
    ]
    loop_s, stall = _loop(lambda: iter(loader_for(num_workers)), step, device, steps)
    record = {
        "kind": KIND,
        "schema": SCHEMA,
        "script": script,
        "device": str(device),
        "batch_size": batch_size,
        "num_workers": num_workers,
        "cores": cores,
        "steps_per_window": steps,
        "test_mode": bool(test_mode),
        **({"device_time_ms": test_mode["device_time_ms"]} if test_mode else {}),
        "ceiling_step_s": [round(v, 6) for v in ceiling],
        "pipeline": [
            {"workers": p["workers"], "batches_per_s": [round(v, 3) for v in p["batches_per_s"]]}
            for p in pipeline
        ],
        "loop_step_s": [round(v, 6) for v in loop_s],
        "loop_stall_share": [round(v, 4) for v in stall],
    }
    path = Path(out)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    tmp.replace(path)  # a reader never sees half a file
    return record


def probe_and_report(
    args: Any,
    *,
    script: str,
    loader_for: Callable[[int], Any],
    step: Step,
    device: torch.device,
    test_mode: dict[str, Any],
    emit: Callable[..., None],
) -> int:
    """``--probe OUT``: ``run_probe`` with the script's own settings, and its event."""
    record = run_probe(
        args.probe,
        script=script,
        loader_for=loader_for,
        step=step,
        device=device,
        batch_size=args.batch_size,
        num_workers=args.num_workers,
        steps=args.probe_steps,
        test_mode=test_mode,
    )
    emit("probe", path=args.probe, **{k: record[k] for k in ("cores", "test_mode")})
    return 0
