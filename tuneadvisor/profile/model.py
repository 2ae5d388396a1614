"""The frozen profile model every other layer reads.

Times are in seconds (line_profiler stores integer timer units; loaders convert).
A function is keyed by (filename, first_lineno, name), as line_profiler keys it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tuneadvisor.records import record

FunctionKey = tuple[str, int, str]


# one per profiled line (50,000 in the 50,000-line report): a dataclass's generated
# __init__ builds it faster than a record's (~1 ms once at import, against ~0.1 s there)
@dataclass(frozen=True)
class LineTiming:
    """One line's hits and time as the profile recorded them."""

    lineno: int
    hits: int
    time_s: float


@record
class FunctionTiming:
    """One profiled function's lines as the profile recorded them."""

    filename: str
    first_lineno: int
    name: str
    lines: tuple[LineTiming, ...]
    # Source text per line number when the input carried it (the text table does).
    embedded_source: Mapping[int, str] = field(default_factory=dict)

    @property
    def key(self) -> FunctionKey:
        return (self.filename, self.first_lineno, self.name)

    @property
    def total_s(self) -> float:
        return sum(line.time_s for line in self.lines)


@record
class Profile:
    """One profile file (one rank), or the merge of several."""

    origin: str  # the file it was read from, or "merged(a, b, ...)"
    unit_s: float  # the timer unit line_profiler recorded with
    functions: tuple[FunctionTiming, ...]
    source_format: str  # "lprof" (pickle) or "text" (line_profiler's printed table)

    @property
    def total_s(self) -> float:
        return sum(f.total_s for f in self.functions)


def merge_profiles(profiles: Iterable[Profile]) -> Profile:
    """Sum hits and times line by line over profiles of the same code (one per rank)."""
    profiles = list(profiles)
    if len(profiles) == 1:
        return profiles[0]
    lines: dict[FunctionKey, dict[int, tuple[int, float]]] = {}
    sources: dict[FunctionKey, dict[int, str]] = {}
    order: list[FunctionKey] = []
    for prof in profiles:
        for func in prof.functions:
            if func.key not in lines:
                lines[func.key] = {}
                sources[func.key] = {}
                order.append(func.key)
            acc = lines[func.key]
            for line in func.lines:
                hits, time_s = acc.get(line.lineno, (0, 0.0))
                acc[line.lineno] = (hits + line.hits, time_s + line.time_s)
            sources[func.key].update(func.embedded_source)
    functions = tuple(
        FunctionTiming(
            filename=key[0],
            first_lineno=key[1],
            name=key[2],
            lines=tuple(
                LineTiming(lineno, hits, time_s)
                for lineno, (hits, time_s) in sorted(lines[key].items())
            ),
            embedded_source=sources[key],
        )
        for key in order
    )
    formats = {p.source_format for p in profiles}
    return Profile(
        origin="merged(" + ", ".join(p.origin for p in profiles) + ")",
        unit_s=min(p.unit_s for p in profiles),
        functions=functions,
        source_format=formats.pop() if len(formats) == 1 else "mixed",
    )


@record
class ProfileSet:
    """What the user opened: each file kept for comparison, and their merge."""

    parts: tuple[Profile, ...]
    merged: Profile

    @classmethod
    def of(cls, parts: Iterable[Profile]) -> ProfileSet:
        parts = tuple(parts)
        return cls(parts=parts, merged=merge_profiles(parts))
