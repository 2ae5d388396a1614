"""This process's size now, from /proc/self/statm: the start from which a forked child's cost
is judged. A child forked from a pytest worker that ran other tests first inherits hundreds of
MiB (counted in its RSS) and a large address space; the bounds are on what an input costs."""

from __future__ import annotations

import resource
from pathlib import Path


def _statm(field: int) -> int:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[field])
    except (OSError, ValueError, IndexError):
        return 0  # not Linux: judged from zero, as before
    return pages * resource.getpagesize()


def address_space() -> int:
    """Bytes of address space mapped now."""
    return _statm(0)


def resident_mib() -> float:
    """MiB resident now."""
    return _statm(1) / (1 << 20)
