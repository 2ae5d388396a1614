"""A local run's other load in its record (``resources.cpu_others`` in run.json): how busy
the CPUs the run could use were with processes other than the run's own over the run, in
cores' worth. What a prediction from this run counts as held by others (advisor/steptime.py)
and what a miss may name CPU starvation with (relaunch/predicted.py).

A figure that could not be read is absent, with why in ``not_read``; never a zero. Records
before these fields have no ``resources.cpu_others``; they load as they did (None).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tuneadvisor.errors import InputError
from tuneadvisor.runrecord.json_fields import JsonFields, is_int, is_str, list_of


@dataclass(frozen=True)
class OthersUse:
    """The CPUs the run could use and what other processes took of them (relaunch/cpu_meter.py
    measures them)."""

    # the CPUs the run's tasks could be given (this process's affinity: the node's CPUs
    # locally, the job's own inside a Slurm allocation), by id
    allowed_cpus: tuple[int, ...] = ()
    # their busy time over the run (every process's: the kernel's per-CPU counters, steal
    # included), in cores' worth of the wall time
    busy_cores: float | None = None
    # the run's own: its tasks and their workers, the watch sampler, tuneadvisor itself
    own_cores: float | None = None
    # busy less own: what other processes held of those CPUs, mean over the run
    others_cores: float | None = None
    wall_s: float | None = None
    not_read: Mapping[str, str] = field(default_factory=dict)  # figure -> why not

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"allowed_cpus": list(self.allowed_cpus)}
        for key in ("busy_cores", "own_cores", "others_cores", "wall_s"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        out["not_read"] = dict(self.not_read)
        return out

    @classmethod
    def from_json(cls, f: JsonFields) -> OthersUse:
        not_read = f.mapping("not_read")
        if not all(is_str(k) and is_str(v) for k, v in not_read.items()):
            raise InputError(f.file, "run record: resources.cpu_others.not_read holds a non-string")
        cpus = f.get("allowed_cpus", list_of(is_int), "a list of whole numbers", [])
        for key in ("busy_cores", "own_cores", "others_cores", "wall_s"):
            value = f.number(key)  # a hand-edited record: a negative figure is no measurement
            if value is not None and value < 0:
                raise InputError(f.file, f"run record: {f.where}{key} is {value}, out of range")
        return cls(
            allowed_cpus=tuple(cpus),
            busy_cores=f.number("busy_cores"),
            own_cores=f.number("own_cores"),
            others_cores=f.number("others_cores"),
            wall_s=f.number("wall_s"),
            not_read=not_read,
        )
