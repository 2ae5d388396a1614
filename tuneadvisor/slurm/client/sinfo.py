"""Node shapes per partition from ``sinfo -h -o FORMAT`` (the format below, ``|`` between fields).

sinfo groups nodes of one configuration into one line, so a partition with two kinds of node
has two lines. ``largest`` keeps the biggest kind (most CPUs, then memory, then GPUs): advice
bounded by it never asks for more than some node of the partition has. A trailing ``*`` on
the partition name marks the default partition; a ``+`` after a number means "at least".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tuneadvisor.numbers import finite_int, is_ascii_digits
from tuneadvisor.slurm.units import UnitError, gpus_in_gres, parse_timelimit

# partition, CPUs per node, memory per node (MiB), generic resources, nodes, time limit
SINFO_FORMAT = "%P|%c|%m|%G|%D|%l"


class SinfoError(ValueError):
    """The text is not ``sinfo -h -o SINFO_FORMAT`` output."""


@dataclass(frozen=True)
class PartitionShape:
    partition: str
    default: bool
    cpus: int  # per node
    mem_mib: int  # per node
    gpus: int  # per node
    nodes: int
    max_time_s: int | None  # None: no limit


def _number(text: str, what: str, line: int) -> int:
    value = text.strip().rstrip("+")
    if not is_ascii_digits(value):
        raise SinfoError(f"line {line}: {what} {text.strip()!r} is not a whole number")
    return finite_int(value, f"line {line}: {what}", SinfoError)


def _limit(text: str, line: int) -> int | None:
    value = text.strip()
    try:
        return parse_timelimit(value)  # None for infinite, unlimited, n/a
    except UnitError:
        raise SinfoError(f"line {line}: time limit {value!r} is not like 1-00:00:00") from None


def parse_sinfo(text: str) -> list[PartitionShape]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) != 6:
            raise SinfoError(f"line {number}: expected 6 fields ({SINFO_FORMAT}), got {line!r}")
        name, cpus, mem, gres, nodes, limit = fields
        rows.append(
            PartitionShape(
                partition=name.strip().rstrip("*"),
                default=name.strip().endswith("*"),
                cpus=_number(cpus, "CPUs", number),
                mem_mib=_number(mem, "memory", number),
                gpus=gpus_in_gres(gres.strip()),
                nodes=_number(nodes, "node count", number),
                max_time_s=_limit(limit, number),
            )
        )
    return rows


def largest(rows: Iterable[PartitionShape]) -> dict[str, PartitionShape]:
    """Partition name -> its biggest kind of node."""
    best: dict[str, PartitionShape] = {}
    for row in rows:
        current = best.get(row.partition)
        if current is None or _size(row) > _size(current):
            best[row.partition] = row
    return best


def _size(row: PartitionShape) -> tuple[int, int, int]:
    return row.cpus, row.mem_mib, row.gpus


def default_partition(rows: Iterable[PartitionShape]) -> str | None:
    return next((row.partition for row in rows if row.default), None)
