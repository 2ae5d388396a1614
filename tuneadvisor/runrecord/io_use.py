"""A local run's storage evidence in its record (``resources.io`` in run.json): what the
training process tree read from storage, the machine's I/O wait over the run, and the file
system under the data folder. Each figure is optional: one that could not be read is absent,
with why in ``not_read`` (never a zero standing in for "not measured").

Records before these fields have no ``resources.io``; they load as they did (``io`` None).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tuneadvisor.errors import InputError
from tuneadvisor.runrecord.json_fields import JsonFields, is_str

MIB = 1024 * 1024
_COUNTS = (
    "read_bytes", "read_bytes_before_first_step", "first_step_s", "wall_s", "iowait_pct",
    "iowait_cores",
)  # fmt: skip


@dataclass(frozen=True)
class IoUse:
    """The run's storage figures (metrics/storage_io.py measures them)."""

    # bytes the training tree (the tasks, their ranks and DataLoader workers) caused to be
    # read from storage over the whole run, start-up included (the kernel's accounting of
    # the ended processes); page-cache hits are not reads
    read_bytes: int | None = None
    # of those, read before the first step's event (imports, the dataset's index): the rest
    # is what training read
    read_bytes_before_first_step: int | None = None
    first_step_s: float | None = None  # seconds from the start to the first step's event
    wall_s: float | None = None  # the run's wall time, which the rates are over
    # the machine's CPU time spent idle with I/O outstanding (every process, not only this
    # run's): as a share of all its CPU time, and as cores over the run's wall time
    iowait_pct: float | None = None
    iowait_cores: float | None = None
    data_dir: str | None = None  # resolved
    fs_type: str | None = None  # the file system under data_dir: ext4, nfs4, lustre, tmpfs ...
    fs_mount: str | None = None  # its mount point
    not_read: Mapping[str, str] = field(default_factory=dict)  # figure -> why not

    @property
    def training_read_bytes(self) -> int | None:
        """What the tree read from its first step on (the whole run's where the first step's
        mark is missing: then start-up reads count too)."""
        if self.read_bytes is None:
            return None
        before = self.read_bytes_before_first_step
        return max(0, self.read_bytes - before) if before is not None else self.read_bytes

    @property
    def training_s(self) -> float | None:
        if self.wall_s is None:
            return None
        if self.read_bytes_before_first_step is not None and self.first_step_s is not None:
            return max(0.0, self.wall_s - self.first_step_s)
        return self.wall_s

    @property
    def read_mib_s(self) -> float | None:
        """Storage reads over the training (from the first step on), MiB/s."""
        read, span = self.training_read_bytes, self.training_s
        if read is None or not span:
            return None
        return read / MIB / span

    @property
    def since_first_step(self) -> bool:
        """Whether the read rate leaves the start-up out."""
        return self.read_bytes_before_first_step is not None and self.first_step_s is not None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in (
            "read_bytes", "read_bytes_before_first_step", "first_step_s", "wall_s",
            "iowait_pct", "iowait_cores", "data_dir", "fs_type", "fs_mount",
        ):  # fmt: skip
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        rate = self.read_mib_s
        if rate is not None:  # derived, for whoever scripts against run.json
            out["read_mib_s"] = round(rate, 3)
        out["not_read"] = dict(self.not_read)
        return out

    @classmethod
    def from_json(cls, f: JsonFields) -> IoUse:
        not_read = f.mapping("not_read")
        if not all(is_str(k) and is_str(v) for k, v in not_read.items()):
            raise InputError(f.file, "run record: resources.io.not_read holds a non-string")
        for key in _COUNTS:  # a hand-edited record: a negative figure is no measurement
            value = f.number(key)
            if value is not None and (value < 0 or (key == "iowait_pct" and value > 100)):
                raise InputError(f.file, f"run record: {f.where}{key} is {value}, out of range")
        return cls(
            read_bytes=f.opt_whole("read_bytes"),
            read_bytes_before_first_step=f.opt_whole("read_bytes_before_first_step"),
            first_step_s=f.number("first_step_s"),
            wall_s=f.number("wall_s"),
            iowait_pct=f.number("iowait_pct"),
            iowait_cores=f.number("iowait_cores"),
            data_dir=f.opt_text("data_dir"),
            fs_type=f.opt_text("fs_type"),
            fs_mount=f.opt_text("fs_mount"),
            not_read=not_read,
        )
