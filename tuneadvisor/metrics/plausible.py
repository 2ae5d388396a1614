"""What a GPU can report (issue 34, class 8): a value outside it came from a broken or
crafted file, not a device, and is dropped (read as no data) with a note, never shown as a
utilization of -50 % or a memory peak of 10^20 %.

The ranges are wide on purpose: beyond any GPU made or planned, so no real reading is lost.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

S = TypeVar("S")

MAX_MEMORY_MIB = float(1 << 22)  # 4 TiB of device memory
MAX_RATE_MIB_S = 1e8  # 100 TB/s over PCIe or NVLink
# field -> (lowest, highest) any device reports
RANGES: dict[str, tuple[float, float]] = {
    "util_pct": (0.0, 100.0),
    "mem_util_pct": (0.0, 100.0),
    "sm_active_pct": (0.0, 100.0),
    "sm_occupancy_pct": (0.0, 100.0),
    "tensor_active_pct": (0.0, 100.0),
    "dram_active_pct": (0.0, 100.0),
    "mem_used_mib": (0.0, MAX_MEMORY_MIB),
    "mem_total_mib": (0.0, MAX_MEMORY_MIB),
    "power_w": (0.0, 10_000.0),
    "power_limit_w": (0.0, 10_000.0),
    "temp_c": (-100.0, 300.0),
    "sm_clock_mhz": (0.0, 100_000.0),
    "mem_clock_mhz": (0.0, 100_000.0),
    "pcie_rx_mib_s": (0.0, MAX_RATE_MIB_S),
    "pcie_tx_mib_s": (0.0, MAX_RATE_MIB_S),
    "nvlink_rx_mib_s": (0.0, MAX_RATE_MIB_S),
    "nvlink_tx_mib_s": (0.0, MAX_RATE_MIB_S),
}
_SLACK = 1.01  # a used memory a rounding above the total is a reading, not a lie


def out_of_range(sample: object) -> list[str]:
    """The fields of a GpuSample no device could have reported."""
    bad = []
    for name, (low, high) in RANGES.items():
        value = getattr(sample, name, None)
        if value is not None and not low <= value <= high:
            bad.append(name)
    used, total = getattr(sample, "mem_used_mib", None), getattr(sample, "mem_total_mib", None)
    if used is not None and total and used > total * _SLACK and "mem_used_mib" not in bad:
        bad.append("mem_used_mib")
    return bad


class Dropped:
    """Counts what ``in_range`` dropped, for one note."""

    def __init__(self) -> None:
        self.fields: dict[str, int] = {}

    def note(self) -> str | None:
        if not self.fields:
            return None
        listed = ", ".join(f"{name} ({count})" for name, count in self.fields.items())
        return f"values no GPU can report dropped (read as no data): {listed}"


def in_range(samples: Iterable[S], dropped: Dropped) -> Iterator[S]:
    """Each sample with the values no device reports set to None."""
    for sample in samples:
        bad = out_of_range(sample)
        if bad:
            for name in bad:
                dropped.fields[name] = dropped.fields.get(name, 0) + 1
            changed: Any = dataclasses.replace(sample, **dict.fromkeys(bad))  # type: ignore[type-var]
            sample = changed
        yield sample


# What one file of DCGM readings may hold: as many GPUs as a watch recording's round on one
# node (recording.MAX_GPUS_PER_NODE), and samples enough for a day at one a second on each of
# 8 GPUs. Past either, readings are dropped and counted: a file of a million GPUs took 700-900
# MB and 20 s.
MAX_GPUS = 64
MAX_SAMPLES = 700_000


class GpuBound:
    """The GPUs and samples a reader keeps; ``note`` says what it dropped."""

    def __init__(self, most_gpus: int = MAX_GPUS, most_samples: int = MAX_SAMPLES) -> None:
        self._gpus: set[str] = set()
        self._most_gpus, self._most_samples = most_gpus, most_samples
        self.samples = 0
        self.dropped_gpus: set[str] = set()
        self.dropped_samples = 0

    def admit(self, gpu: str) -> bool:
        """Whether one more sample of ``gpu`` is kept."""
        if gpu not in self._gpus:
            if len(self._gpus) >= self._most_gpus:
                if len(self.dropped_gpus) < self._most_gpus:  # a count, not all of them
                    self.dropped_gpus.add(gpu)
                self.dropped_samples += 1
                return False
            self._gpus.add(gpu)
        if self.samples >= self._most_samples:
            self.dropped_samples += 1
            return False
        self.samples += 1
        return True

    def note(self) -> str | None:
        if not self.dropped_samples:
            return None
        more = f"more than {self._most_gpus} GPUs" if self.dropped_gpus else ""
        many = (
            f"more than {self._most_samples:,} samples"
            if self.samples >= self._most_samples
            else ""
        )
        why = " and ".join(x for x in (more, many) if x)
        return f"{self.dropped_samples:,} samples dropped: the file holds {why} (read at most)"
