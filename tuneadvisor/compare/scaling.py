"""Throughput against world size, from the runs themselves: for each setting that is not the
world size (the script and its cores per task), the speedup of each world size over the
smallest one measured, and the scaling efficiency (speedup over the ranks' ratio: 100 % is
linear scaling). Nothing is claimed: a setting measured at one world size has no scaling."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tuneadvisor.relaunch.records import RunRecord


def world_size(run: RunRecord) -> int:
    """The ranks that trained together: as the script said at its start, else as asked."""
    said = run.measured.start.get("world_size") if run.measured is not None else None
    if isinstance(said, int) and said >= 1:
        return said
    return run.settings.ntasks if run.launcher in ("srun", "torchrun") else 1


def steps_per_epoch(run: RunRecord) -> int | None:
    """Optimizer steps in one epoch of each rank, from the start event (each rank's share of
    the training set, padded as DistributedSampler does, in batches); None if unsaid."""
    start = run.measured.start if run.measured is not None else {}
    try:
        share = math.ceil(int(start["train_samples"]) / int(start.get("world_size") or 1))
        steps = math.ceil(share / int(start["batch_size"]))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    return steps if steps >= 1 else None


@dataclass(frozen=True)
class ScalePoint:
    group: str  # the setting the world size varies in, e.g. "mnist_ddp, 1 cpu per task"
    world_size: int
    nodes: int
    run: str  # the run measured here (the fastest, where several are)
    samples_per_s: float
    base_world_size: int  # the group's smallest world size: speedup 1 there
    speedup: float
    efficiency: float  # speedup / (world_size / base_world_size), 1.0 = linear

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "world_size": self.world_size,
            "nodes": self.nodes,
            "run": self.run,
            "samples_per_s": self.samples_per_s,
            "base_world_size": self.base_world_size,
            "speedup": round(self.speedup, 4),
            "efficiency": round(self.efficiency, 4),
        }


def scaling(runs: Sequence[tuple[str, RunRecord]]) -> list[ScalePoint]:
    """(label, run) pairs -> one point per group and world size, for the groups measured at
    two world sizes or more, in the order the groups first appear."""
    best: dict[str, dict[int, tuple[float, str, int]]] = {}
    names = {run.name for _, run in runs}
    for label, run in runs:
        rate = run.samples_per_s
        if rate is None or rate <= 0:
            continue
        cores = f"{run.settings.cpus_per_task} cpu per task"
        group = f"{run.name}, {cores}" if len(names) > 1 else cores
        size = world_size(run)
        here = best.setdefault(group, {})
        if size not in here or rate > here[size][0]:
            here[size] = (rate, label, run.settings.nodes)
    points: list[ScalePoint] = []
    for group, by_size in best.items():
        if len(by_size) < 2:
            continue
        base = min(by_size)
        base_rate = by_size[base][0]
        for size in sorted(by_size):
            rate, label, nodes = by_size[size]
            speedup = rate / base_rate
            points.append(
                ScalePoint(group, size, nodes, label, rate, base, speedup, speedup * base / size)
            )
    return points
