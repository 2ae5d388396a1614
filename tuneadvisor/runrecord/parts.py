"""The parts of a run record besides its settings and measurements: what a local run used,
its host, and the paths of its files."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from tuneadvisor.runrecord.io_use import IoUse
from tuneadvisor.runrecord.json_fields import JsonFields, is_int, list_of
from tuneadvisor.runrecord.others_use import OthersUse

_CPU_KEYS = ("requested_cores", "cores_allowed", "cpu_s", "cores_used", "max_rss_mib")


@dataclass(frozen=True)
class CpuUse:
    """What a local run asked for and used, from the kernel's accounting of its children."""

    requested_cores: int | None = None
    cores_allowed: int | None = None
    cpu_s: float | None = None
    cores_used: float | None = None  # CPU time over wall time
    max_rss_mib: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, f: JsonFields) -> CpuUse:
        return cls(
            requested_cores=f.opt_whole("requested_cores"),
            cores_allowed=f.opt_whole("cores_allowed"),
            cpu_s=f.number("cpu_s"),
            cores_used=f.number("cores_used"),
            max_rss_mib=f.number("max_rss_mib"),
        )


@dataclass(frozen=True)
class Resources:
    """``cpu``: a local run's accounting; ``sampled``: what ``watch`` sampled beside the
    run (relaunch/usage.py's keys), None when the record has no such key; ``io``: a local
    run's storage evidence (runrecord/io_use.py), None in records before it;
    ``cpu_others``: a local run's other load on its CPUs (runrecord/others_use.py), None in
    records before it."""

    cpu: CpuUse | None = None
    sampled: Mapping[str, float] | None = None
    io: IoUse | None = None
    cpu_others: OthersUse | None = None

    def to_json(self) -> dict[str, Any]:
        out = self.cpu.to_json() if self.cpu is not None else {}
        if self.sampled is not None:
            out["sampled"] = dict(self.sampled)
        if self.io is not None:
            out["io"] = self.io.to_json()
        if self.cpu_others is not None:
            out["cpu_others"] = self.cpu_others.to_json()
        return out

    @classmethod
    def from_json(cls, f: JsonFields) -> Resources:
        cpu = CpuUse.from_json(f) if any(f.has(k) for k in _CPU_KEYS) else None
        sampled = None
        if f.has("sampled"):
            numbers = f.obj("sampled")
            sampled = {k: v for k in numbers.data if (v := numbers.number(k)) is not None}
        io = IoUse.from_json(f.obj("io")) if f.has("io") else None
        others = OthersUse.from_json(f.obj("cpu_others")) if f.has("cpu_others") else None
        return cls(cpu, sampled, io, others)


@dataclass(frozen=True)
class Host:
    hostname: str
    platform: str
    cpus: int | None
    cores_used: tuple[int, ...]  # the cores the allocation gave the run

    def to_json(self) -> dict[str, Any]:
        return {
            "hostname": self.hostname,
            "platform": self.platform,
            "cpus": self.cpus,
            "cores_used": list(self.cores_used),
        }

    @classmethod
    def from_json(cls, f: JsonFields) -> Host:
        cores = f.get("cores_used", list_of(is_int), "a list of whole numbers", [])
        return cls(f.text("hostname"), f.text("platform"), f.opt_whole("cpus"), tuple(cores))


@dataclass(frozen=True)
class Paths:
    """The run's files, relative to ``dir`` (the run folder)."""

    dir: str
    log: str
    profiles: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()  # ``watch --record`` files (a submitted job writes its own)
    events: str | None = None  # a local run's progress events
    job: str | None = None  # a submitted run's job script
    # torch.profiler traces (``run --profile torch``), one per rank; records before them
    # have no such key
    traces: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dir": self.dir}
        if self.job is not None:
            out["job"] = self.job
        out["log"] = self.log
        if self.events is not None:
            out["events"] = self.events
        out["profiles"] = list(self.profiles)
        out["metrics"] = list(self.metrics)
        if self.traces:
            out["traces"] = list(self.traces)
        return out

    @classmethod
    def from_json(cls, f: JsonFields) -> Paths:
        return cls(
            dir=f.text("dir"),
            log=f.text("log"),
            profiles=f.texts("profiles"),
            metrics=f.texts("metrics"),
            events=f.opt_text("events"),
            job=f.opt_text("job"),
            traces=f.texts("traces"),
        )
