"""Directives a later one overrides, removed from a tuned script: sbatch applies the last
``--mem`` of a header, so an earlier ``--mem=2G`` left above the ``--mem=1G`` that counts
only misleads the reader (and the next edit). ``--mail-type`` adds up: kept."""

from __future__ import annotations

from tuneadvisor.slurm.jobscript.model import JobScript

_ADDING_UP = frozenset({"mail-type"})


def without_overridden(job: JobScript, notes: list[str]) -> JobScript:
    """``job`` with each option set once (the occurrence that takes effect kept)."""
    while True:
        seen: dict[str, int] = {}
        for directive in job.occurrences:
            if directive.component == 0 and directive.name not in _ADDING_UP:
                seen[directive.name] = seen.get(directive.name, 0) + 1
        twice = next((name for name, n in seen.items() if n > 1), None)
        if twice is None:
            return job
        first = next(d for d in job.occurrences if d.component == 0 and d.name == twice)
        notes.append(
            f"--{twice} of line {first.line} removed: a later line sets it again, and sbatch "
            "applies the last"
        )
        job = job.without_occurrence(first)
