"""What a file given as a profile is, when it is not one: a job script given in place of the
profile is the commonest mix-up (issue 24, point 17), and deserves its own line."""

from __future__ import annotations

import re

JOB_SCRIPT_GIVEN = "a Slurm job script (#! and #SBATCH lines), not a profile: pass it with --job"

# an #SBATCH directive at the start of a line, as sbatch reads them
_DIRECTIVE = re.compile(r"^#SBATCH(?:\s|$)", re.MULTILINE)


def looks_like_job_script(head: str) -> bool:
    """``head`` (the file's start) opens with ``#!`` and holds an ``#SBATCH`` directive, and
    is no line_profiler table (a table printed from a job's log may follow its script)."""
    return head.startswith("#!") and bool(_DIRECTIVE.search(head)) and "Timer unit:" not in head
