"""What a run asks for (the allocation and the training script's knobs), as a run record
keeps it. How settings are made (from flags, advice or a saved report) and checked is
relaunch's (relaunch/settings.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tuneadvisor.errors import InputError
from tuneadvisor.numbers import finite_int

# knob name (as the advisor's plan.script spells it) -> the training scripts' flag and kind:
# "int", "str", "bool" (--flag / --no-flag) or "flag" (--flag when true).
KNOBS: dict[str, tuple[str, str]] = {
    "num_workers": ("--num-workers", "int"),
    "batch_size": ("--batch-size", "int"),
    "pin_memory": ("--pin-memory", "bool"),
    "persistent_workers": ("--persistent-workers", "bool"),
    "prefetch_factor": ("--prefetch-factor", "int"),
    "amp": ("--amp", "flag"),
    "max_steps": ("--max-steps", "int"),
    "epochs": ("--epochs", "int"),
    "input_cost": ("--input-cost", "str"),
    "max_eval_batches": ("--max-eval-batches", "int"),
    "log_interval": ("--log-interval", "int"),
}


@dataclass(frozen=True)
class Settings:
    ntasks: int = 1  # all the tasks (DDP ranks), on every node
    cpus_per_task: int = 1
    gpus: int = 0
    mem: str | None = None
    time: str | None = None
    knobs: Mapping[str, object] = field(default_factory=dict)
    extra_args: tuple[str, ...] = ()
    because: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # knob -> finding ids
    notes: tuple[str, ...] = ()
    nodes: int = 1  # the tasks spread evenly: ntasks // nodes on each (gpus are per node)

    @property
    def tasks_per_node(self) -> int:
        return max(1, self.ntasks // max(1, self.nodes))

    def check_shape(self, source: str | None = None) -> Settings:
        """These settings, or ``InputError`` when the tasks do not share out evenly over the
        nodes (a job script says ``--ntasks-per-node``: every node gets as many)."""
        if self.nodes < 1:
            raise InputError(source, f"--nodes must be at least 1, not {self.nodes}")
        if self.ntasks % self.nodes:
            raise InputError(
                source,
                f"{self.ntasks} tasks do not share out evenly over {self.nodes} nodes: give "
                "--ntasks-per-node",
            )
        return self

    def with_knobs(self, **knobs: object) -> Settings:
        return replace(self, knobs={**self.knobs, **knobs})

    def script_args(self) -> list[str]:
        """The knobs as the training scripts' flags, in a stable order."""
        args: list[str] = []
        for name, (flag, kind) in KNOBS.items():
            if name not in self.knobs or self.knobs[name] is None:
                continue
            value = self.knobs[name]
            if kind == "flag":
                if value:
                    args.append(flag)
            elif kind == "bool":
                args.append(flag if value else "--no-" + flag.removeprefix("--"))
            else:
                args += [flag, str(value)]
        return [*args, *self.extra_args]

    def describe(self) -> str:
        """One short line: ``2 cpu, 1 task, workers 1, batch 64``."""
        return ", ".join(self.describe_parts())

    def describe_parts(self) -> list[str]:
        """The words of :meth:`describe`, one setting each (a table shows those that differ)."""
        parts = [f"{self.cpus_per_task} cpu"]
        if self.nodes > 1:
            parts.append(f"{self.nodes} nodes x {self.tasks_per_node} tasks")
        elif self.ntasks != 1:
            parts.append(f"{self.ntasks} tasks")
        if self.gpus:
            parts.append(f"{self.gpus} gpu")
        short = {"num_workers": "workers", "batch_size": "batch", "input_cost": "input"}
        for name in ("num_workers", "batch_size", "pin_memory", "amp", "input_cost"):
            value = self.knobs.get(name)
            if value is None or (name == "amp" and not value):
                continue
            label = short.get(name, name.replace("_", " "))
            parts.append(label if value is True else f"{label} {value}")
        return parts

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "ntasks": self.ntasks,
            "cpus_per_task": self.cpus_per_task,
            "gpus": self.gpus,
            "mem": self.mem,
            "time": self.time,
            "knobs": dict(self.knobs),
            "extra_args": list(self.extra_args),
            "because": {k: list(v) for k, v in self.because.items()},
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Settings:
        return cls(
            nodes=finite_int(data.get("nodes", 1), "settings.nodes"),
            ntasks=finite_int(data.get("ntasks", 1), "settings.ntasks"),
            cpus_per_task=finite_int(data.get("cpus_per_task", 1), "settings.cpus_per_task"),
            gpus=finite_int(data.get("gpus", 0), "settings.gpus"),
            mem=data.get("mem"),
            time=data.get("time"),
            knobs=dict(data.get("knobs", {})),
            extra_args=tuple(data.get("extra_args", ())),
            because={k: tuple(v) for k, v in data.get("because", {}).items()},
            notes=tuple(data.get("notes", ())),
        )
