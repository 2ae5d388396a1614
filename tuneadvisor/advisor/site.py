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

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tuneadvisor.advisor.fact_view import FactView, Node, as_view, positive
from tuneadvisor.advisor.toml_text import parse_toml
from tuneadvisor.errors import InputError
from tuneadvisor.slurm.units import parse_memory, parse_memory_mib, parse_time, render_memory

if TYPE_CHECKING:
    from tuneadvisor.advisor.plan import Plan

PARTITION_KEYS = frozenset({"cores", "mem", "gpus", "max_cores_per_gpu", "max_time", "default"})


@dataclass(frozen=True)
class NodeShape:
    cores: int | None = None
    mem_mib: int | None = None
    gpus: int | None = None
    max_cores_per_gpu: int | None = None
    max_time_s: int | None = None  # the partition's time limit; None: none known
    assumed: bool = False  # the default ceiling, the node's size being unknown

    def facts(self) -> dict[str, object]:
        """``node.*``: the sizes given (0 cores, memory or limits are none; 0 GPUs are)."""
        return Node(
            cores=self.cores or None,
            mem_mib=float(self.mem_mib) if self.mem_mib else None,
            gpus=self.gpus,
            max_cores_per_gpu=self.max_cores_per_gpu or None,
            max_time_s=self.max_time_s or None,
            assumed=True if self.assumed else None,
        ).facts()


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


# The node assumed when neither a site file nor Slurm says how big the job's nodes are: a
# ceiling for raised requests, not a claim about the cluster. 64 cores and 512 GiB is a large
# GPU node of today (2 x 32-core CPUs beside 4-8 A100/H100, as on Perlmutter, Alps or most
# DGX-like partitions): a request past it is rare enough that it should come from the site's
# own numbers (a site file, or --cluster), never from doubling a guess.
DEFAULT_NODE_CORES = 64
DEFAULT_NODE_MEM_MIB = 512 * 1024


def _amount(value: float | None) -> float:
    """A positive figure, else 0 (none known)."""
    return float(positive(value) or 0)


def assumed_node(facts: Mapping[str, object] | FactView) -> NodeShape:
    """The default ceiling, raised to what the job asks for now or had when measured (a node
    ran it, so it is at least that big): with it a tuned request never grows past the ceiling
    and never shrinks below what the user wrote."""
    v = as_view(facts)
    tasks = max(1, int(_amount(v.job.tasks_per_node)))
    cores = max(
        _amount(v.job.cpus_per_task) * tasks,
        _amount(v.alloc.cpus_per_task) * tasks,
        DEFAULT_NODE_CORES,
    )
    # the peak per node as the plan's memory floor counts it: over the fewer of the nodes it
    # was measured on and the nodes asked for now (the plan's _peak_nodes)
    nodes = [
        n
        for n in (
            _amount(v.sacct.alloc_nodes) or _amount(v.seff.nodes),
            _amount(v.job.nodes),
        )
        if n
    ]
    mem = max(
        _amount(v.job.mem_mib),
        _amount(v.alloc.mem_mib),
        _amount(v.usage.mem_peak_mib) / min(nodes, default=1.0),
        DEFAULT_NODE_MEM_MIB,
    )
    mem_mib = -(-math.ceil(mem) // 1024) * 1024  # whole GiB, rounded up
    return NodeShape(cores=int(cores), mem_mib=mem_mib, assumed=True)


def ceiling_notes(plan: Plan, facts: Mapping[str, object] | FactView) -> list[str]:
    """Where a request reached the assumed node's size: say that it is a default ceiling
    (the node's size is unknown), not the cluster's."""
    v = as_view(facts)
    if v.node.assumed is not True:
        return []
    cores, mem = _amount(v.node.cores), _amount(v.node.mem_mib)
    tasks = max(1, int(_amount(v.job.tasks_per_node)))
    reached = []
    change = plan.sbatch.get("cpus-per-task")
    if change is not None and isinstance(change.value, int) and change.value * tasks >= cores:
        reached.append("--cpus-per-task")
    change = plan.sbatch.get("mem")
    if change is not None and parse_memory_mib(str(change.value)) == mem:
        reached.append("--mem")
    # what the plan capped at the node, also where the script has the ceiling already and
    # nothing changes
    reached += [option for option in plan.capped if option not in reached]
    if not reached:
        return []
    return [
        f"{' and '.join(reached)} kept within {cores:g} cores and {render_memory(int(mem))} "
        "per node, a default ceiling: the nodes' size is unknown (no site file, Slurm not "
        "asked); --site or --cluster gives the real one"
    ]
