"""The site file: the shape of the cluster's nodes, per partition.

```toml
[partitions.gpu]
cores = 64            # per node
mem = "500G"          # per node, as sbatch spells sizes
gpus = 8              # per node
max_cores_per_gpu = 8 # a site limit, when there is one
max_time = "2-00:00:00"  # the partition's MaxTime, as sbatch spells --time
default = true        # the partition jobs land in without --partition
```
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tuneadvisor.advisor.toml_text import parse_toml
from tuneadvisor.errors import InputError
from tuneadvisor.slurm.units import parse_memory, parse_time

PARTITION_KEYS = frozenset({"cores", "mem", "gpus", "max_cores_per_gpu", "max_time", "default"})


@dataclass(frozen=True)
class NodeShape:
    cores: int | None = None
    mem_mib: int | None = None
    gpus: int | None = None
    max_cores_per_gpu: int | None = None
    max_time_s: int | None = None  # the partition's time limit; None: none known

    def facts(self) -> dict[str, object]:
        facts: dict[str, object] = {}
        if self.cores:
            facts["node.cores"] = self.cores
        if self.mem_mib:
            facts["node.mem_mib"] = float(self.mem_mib)
        if self.gpus is not None:
            facts["node.gpus"] = self.gpus
        if self.max_cores_per_gpu:
            facts["node.max_cores_per_gpu"] = self.max_cores_per_gpu
        if self.max_time_s:
            facts["node.max_time_s"] = self.max_time_s
        return facts


@dataclass(frozen=True)
class Site:
    partitions: Mapping[str, NodeShape]
    default: str | None

    def node_for(self, partition: str | None) -> NodeShape | None:
        name = partition or self.default
        return self.partitions.get(name) if name else None


def _positive_int(path: str, where: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputError(path, f"{where} must be a whole number >= 0, not {value!r}")
    return value


def parse_site(text: str, path: str) -> Site:
    data = parse_toml(text, path, "site file")
    unknown = [k for k in data if k != "partitions"]
    if unknown:
        raise InputError(path, f"unknown key '{unknown[0]}' (known: partitions)")
    partitions: dict[str, NodeShape] = {}
    default = None
    tables = data.get("partitions", {})
    if not isinstance(tables, dict):
        raise InputError(path, "partitions must be a table of [partitions.NAME] tables")
    for name, table in tables.items():
        where = f"partitions.{name}"
        if not isinstance(table, dict):
            raise InputError(path, f"{where} must be a table")
        bad = [k for k in table if k not in PARTITION_KEYS]
        if bad:
            raise InputError(
                path, f"unknown key '{where}.{bad[0]}' (known: {', '.join(sorted(PARTITION_KEYS))})"
            )
        mem = table.get("mem")
        mem_mib = None
        if mem is not None:
            try:
                mem_mib = parse_memory(str(mem))
            except ValueError:
                raise InputError(path, f"{where}.mem: not a size sbatch reads: {mem!r}") from None
        max_time_s = None
        if "max_time" in table:
            try:
                max_time_s = parse_time(str(table["max_time"])).seconds
            except ValueError:
                raise InputError(
                    path, f"{where}.max_time: not a time sbatch reads: {table['max_time']!r}"
                ) from None
        partitions[name] = NodeShape(
            cores=_positive_int(path, f"{where}.cores", table["cores"])
            if "cores" in table
            else None,
            mem_mib=mem_mib,
            gpus=_positive_int(path, f"{where}.gpus", table["gpus"]) if "gpus" in table else None,
            max_cores_per_gpu=_positive_int(
                path, f"{where}.max_cores_per_gpu", table["max_cores_per_gpu"]
            )
            if "max_cores_per_gpu" in table
            else None,
            max_time_s=max_time_s,
        )
        is_default = table.get("default", False)
        if not isinstance(is_default, bool):
            raise InputError(path, f"{where}.default must be true or false, not {is_default!r}")
        if is_default:
            if default is not None:
                raise InputError(path, f"{where}: partitions.{default} is the default already")
            default = name
    if default is None and len(partitions) == 1:
        default = next(iter(partitions))
    return Site(partitions, default)
