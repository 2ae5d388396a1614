"""The emulated allocation of a local run, as its run record keeps it (relaunch/local_allocation.py
makes one)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Allocation:
    job_id: str
    hostname: str
    cores: tuple[tuple[int, ...], ...]  # per task
    env: Mapping[str, str]  # job-wide variables
    notes: tuple[str, ...]

    def task_env(self, rank: int) -> dict[str, str]:
        """What ``srun`` adds for task ``rank`` on this one node."""
        return {
            "SLURM_PROCID": str(rank),
            "SLURM_LOCALID": str(rank),
            "SLURM_NODEID": "0",
            "SLURM_STEP_ID": "0",
            "SLURM_CPU_BIND": "mask_cpu",
        }

    def all_cores(self) -> tuple[int, ...]:
        return tuple(sorted({c for task in self.cores for c in task}))

    def to_json(self) -> dict[str, object]:
        return {
            "job_id": self.job_id,
            "hostname": self.hostname,
            "cores": [list(c) for c in self.cores],
            "env": dict(self.env),
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Allocation:
        """As ``to_json`` wrote it (a wrong type raises TypeError or ValueError)."""
        cores = data.get("cores", [])
        env = data.get("env", {})
        notes = data.get("notes", [])
        if not (isinstance(cores, list) and isinstance(env, dict) and isinstance(notes, list)):
            raise TypeError("cores, env or notes of the wrong type")
        return cls(
            job_id=str(data.get("job_id", "")),
            hostname=str(data.get("hostname", "")),
            cores=tuple(tuple(_core(c) for c in task) for task in cores),
            env={str(k): str(v) for k, v in env.items()},
            notes=tuple(str(n) for n in notes),
        )


MAX_CORE = 1 << 20  # a CPU number no machine reaches


def _core(value: object) -> int:
    """A CPU number as ``to_json`` wrote it: int() took "٣" as 3, True as 1 and 1e308 whole."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_CORE:
        raise ValueError(f"a core of {str(value)[:20]!r}, not a CPU number")
    return value
