"""Princeton jobstats' job summary, as its slurmctld epilog keeps it in the job's AdminComment.

Format (github.com/PrincetonUniversity/jobstats, ``jobstats.py`` and
``slurm/slurmctldepilog.sh``): ``JS1:`` then base64 of gzip of JSON, or ``JS1:Short`` (the job
ran under two sampling periods) or ``JS1:None`` (Prometheus had no data)::

    {"gpus": 1, "total_time": 50944,              # GPUs allocated, run time (End - Start, s)
     "nodes": {"della-l01g13": {
         "cpus": 12, "total_time": 57620.8,       # cores; CPU seconds used on the node
         "total_memory": 137438953472,            # the job's memory on the node (bytes)
         "used_memory": 84683702272,              # its peak RSS + shmem (bytes)
         "gpu_total_memory": {"1": 85899345920},  # per GPU (minor number): memory (bytes),
         "gpu_used_memory": {"1": 83314868224},   #   its peak use (bytes),
         "gpu_utilization": {"1": 98.6}}}}        #   mean utilization over the run (%)

Each figure is one Prometheus query over the whole run: utilization ``avg_over_time``, memory
``max_over_time``, CPU time the cgroup's counter at the end. Any key may be missing (a node
without the GPU exporter, a MIG slice without utilization). jobstats' docs pipe the value
through ``tr -d ' '`` before base64, so spaces are dropped here too.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from tuneadvisor.numbers import finite_float, is_ascii_digits

__all__ = [
    "MAX_SUMMARY_BYTES",
    "SAMPLING_PERIOD_S",
    "JobstatsError",
    "JobstatsGpu",
    "JobstatsNode",
    "JobstatsSummary",
    "JobstatsTooLarge",
    "is_jobstats",
    "parse_jobstats",
]

_N = TypeVar("_N", int, float)

PREFIX = "JS1:"
# jobstats' default SAMPLING_PERIOD (config.py), the Prometheus scrape interval its docs use.
SAMPLING_PERIOD_S = 30.0
_MIB = 1024 * 1024
# A summary as decompressed, at most: a real one is a few KiB (a few hundred bytes per node and
# GPU), so 1 MiB holds thousands of nodes. A blob that inflates past it (a 1.4 MB sacct file
# whose AdminComment inflated to 1 GiB) is refused before it is parsed.
MAX_SUMMARY_BYTES = 1 * _MIB


class JobstatsError(ValueError):
    """AdminComment has jobstats' marker but no summary to read; the message says why."""


class JobstatsTooLarge(JobstatsError):
    """The summary inflates past ``MAX_SUMMARY_BYTES``: a crafted file, not a damaged one."""


@dataclass(frozen=True)
class JobstatsGpu:
    node: str
    index: str  # the GPU's minor number, as jobstats keys it
    util_pct: float | None  # mean over the run
    mem_used_mib: float | None  # peak
    mem_total_mib: float | None


@dataclass(frozen=True)
class JobstatsNode:
    name: str
    cpus: int | None
    cpu_time_s: float | None  # user + system of the job's cgroup on the node
    mem_used_mib: float | None  # peak RSS + shmem
    mem_total_mib: float | None  # the job's memory on the node (its cgroup limit)


@dataclass(frozen=True)
class JobstatsSummary:
    elapsed_s: float | None
    gpus_allocated: int | None
    nodes: tuple[JobstatsNode, ...]
    gpus: tuple[JobstatsGpu, ...]

    @property
    def cores(self) -> int | None:
        return _total(n.cpus for n in self.nodes)

    @property
    def cpu_time_s(self) -> float | None:
        return _total(n.cpu_time_s for n in self.nodes)

    @property
    def cpu_efficiency_pct(self) -> float | None:
        """As jobstats computes it: CPU time over run time x cores, all nodes together."""
        cores, used = self.cores, self.cpu_time_s
        if not cores or used is None or not self.elapsed_s:
            return None
        return 100.0 * used / (self.elapsed_s * cores)

    @property
    def mem_used_mib(self) -> float | None:
        """The nodes' peaks summed (jobstats' figure; each node's peak may come at another
        moment)."""
        return _total(n.mem_used_mib for n in self.nodes)

    @property
    def mem_total_mib(self) -> float | None:
        return _total(n.mem_total_mib for n in self.nodes)

    @property
    def mem_efficiency_pct(self) -> float | None:
        used, total = self.mem_used_mib, self.mem_total_mib
        return None if used is None or not total else 100.0 * used / total

    @property
    def sampling_rounds(self) -> int | None:
        """How many samples a GPU mean stands for, at jobstats' default period."""
        if self.elapsed_s is None:
            return None
        return math.floor(self.elapsed_s / SAMPLING_PERIOD_S)


def is_jobstats(text: str | None) -> bool:
    """AdminComment starts with jobstats' marker (in any case: see ``parse_jobstats``)."""
    return text is not None and text.strip()[: len(PREFIX)].upper() == PREFIX


def parse_jobstats(text: str) -> JobstatsSummary:
    """The summary in an AdminComment that ``is_jobstats``; ``JobstatsError`` says why not."""
    payload = "".join(text.strip()[len(PREFIX) :].split())
    if text.strip().startswith(PREFIX.lower()):
        # Slurm 22.05's sacctmgr stores AdminComment in lower case (checked on 22.05.8):
        # base64 does not survive that.
        raise JobstatsError(
            "AdminComment holds a jobstats summary in lower case (written with the"
            " sacctmgr of Slurm 22.05, which lower-cases it): it cannot be decoded"
        )
    if payload in ("Short", "None"):
        why = "the job ran too short" if payload == "Short" else "its monitoring had no data"
        raise JobstatsError(f"jobstats kept no summary of the job ({why})")
    try:
        document = json.loads(_gunzipped(base64.b64decode(payload, validate=True)))
    except JobstatsTooLarge:
        raise
    except (binascii.Error, OSError, EOFError, zlib.error, UnicodeDecodeError, ValueError) as e:
        raise JobstatsError(f"the jobstats summary in AdminComment does not decode ({e})") from None
    except RecursionError:  # a real summary is nested four deep
        raise JobstatsError("the jobstats summary in AdminComment is nested too deeply") from None
    if not isinstance(document, Mapping) or not isinstance(document.get("nodes"), Mapping):
        raise JobstatsError("the jobstats summary in AdminComment has no 'nodes'")
    return _summary(document)


def _gunzipped(data: bytes) -> bytes:
    """gzip's content, never more than ``MAX_SUMMARY_BYTES`` of it (a gzip bomb is refused
    after that much, not inflated whole). Concatenated members read as one, as gzip does."""
    out = bytearray()
    while True:
        inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # a gzip header and trailer
        out += inflate.decompress(data, MAX_SUMMARY_BYTES + 1 - len(out))
        if len(out) > MAX_SUMMARY_BYTES:
            raise JobstatsTooLarge(
                "the jobstats summary in AdminComment inflates to more than "
                f"{MAX_SUMMARY_BYTES // _MIB} MiB (a real one is a few KiB): not read"
            )
        if not inflate.eof:
            raise EOFError("the gzip stream is cut short")
        data = inflate.unused_data
        if not data.strip(b"\0"):  # only padding after the last member, as gzip allows
            return bytes(out)


def _summary(document: Mapping[str, Any]) -> JobstatsSummary:
    nodes, gpus = [], []
    for name, raw in sorted(document["nodes"].items()):
        data: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        cpus = _number(data.get("cpus"), f"nodes.{name}.cpus")
        nodes.append(
            JobstatsNode(
                name=name,
                cpus=None if cpus is None else int(cpus),
                cpu_time_s=_number(data.get("total_time"), f"nodes.{name}.total_time"),
                mem_used_mib=_mib(data.get("used_memory"), f"nodes.{name}.used_memory"),
                mem_total_mib=_mib(data.get("total_memory"), f"nodes.{name}.total_memory"),
            )
        )
        gpus += _node_gpus(name, data)
    gpus_allocated = _number(document.get("gpus"), "gpus")
    return JobstatsSummary(
        elapsed_s=_number(document.get("total_time"), "total_time"),
        gpus_allocated=None if gpus_allocated is None else int(gpus_allocated),
        nodes=tuple(nodes),
        gpus=tuple(gpus),
    )


def _node_gpus(node: str, data: Mapping[str, Any]) -> list[JobstatsGpu]:
    maps = {
        key: value if isinstance(value, Mapping) else {}
        for key in ("gpu_utilization", "gpu_used_memory", "gpu_total_memory")
        for value in (data.get(key),)
    }
    indexes = sorted({i for m in maps.values() for i in m}, key=_minor_order)
    where = f"nodes.{node}"
    return [
        JobstatsGpu(
            node=node,
            index=str(i),
            util_pct=_number(maps["gpu_utilization"].get(i), f"{where}.gpu_utilization.{i}"),
            mem_used_mib=_mib(maps["gpu_used_memory"].get(i), f"{where}.gpu_used_memory.{i}"),
            mem_total_mib=_mib(maps["gpu_total_memory"].get(i), f"{where}.gpu_total_memory.{i}"),
        )
        for i in indexes
    ]


def _minor_order(index: str) -> tuple[int, str]:
    return (int(index), "") if is_ascii_digits(index) else (1 << 30, index)


def _number(value: Any, path: str) -> float | None:
    if value is None:
        return None
    what = f"the jobstats summary's {path}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise JobstatsError(f"{what} is {value!r}, not a number")
    return finite_float(value, what, JobstatsError)


def _mib(value: Any, path: str) -> float | None:
    number = _number(value, path)
    return None if number is None else number / _MIB


def _total(values: Iterable[_N | None]) -> _N | None:
    """The sum, or None when any node lacks the figure (a partial sum would mislead)."""
    known = list(values)
    if not known or any(v is None for v in known):
        return None
    return sum(v for v in known if v is not None)
