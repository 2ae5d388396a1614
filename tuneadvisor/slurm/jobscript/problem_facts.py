"""job.* facts of the directives sbatch refuses together and of the lines that look like a
misspelt ``#SBATCH`` (each a finding of its own: conflicting-directives,
misspelt-sbatch-directive)."""

from __future__ import annotations

from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.jobscript.syntax import CONFLICTING_DIRECTIVES, IGNORED_DIRECTIVE


def directive_problem_facts(job: JobScript) -> dict[str, object]:
    facts: dict[str, object] = {}
    conflicting = [p for p in job.problems if p.id == CONFLICTING_DIRECTIVES]
    facts["job.conflicting_directives"] = len(conflicting)
    if conflicting:
        first = conflicting[0]
        where = f"line {first.line}: " if first.line else ""
        facts["job.conflicting_directive.first"] = where + first.message
    misspelt = [p.line for p in job.problems if p.id == IGNORED_DIRECTIVE and p.line]
    facts["job.misspelt_directives"] = len(misspelt)
    if misspelt:
        texts = "; ".join(job.lines[n - 1].text.strip() for n in misspelt[:3])
        more = f" and {len(misspelt) - 3} more" if len(misspelt) > 3 else ""
        label = "line" if len(misspelt) == 1 else "lines"
        numbers = ", ".join(str(n) for n in misspelt)
        facts["job.misspelt_directive.lines"] = f"{label} {numbers}: {texts}{more}"
    return facts
