"""A plan's sbatch values written into a job script: each option set where it takes effect
(or added), a value sbatch would refuse left out with a note, and the other memory options
dropped when one is written (sbatch takes only one of them)."""

from __future__ import annotations

from collections.abc import Mapping

from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.options import MEMORY_OPTIONS


def with_options(job: JobScript, values: Mapping[str, str], notes: list[str]) -> JobScript:
    """``job`` with each ``--option=value`` of ``values`` (long names), in their order."""
    for option, value in values.items():
        try:
            job = job.with_directive(option, value)
        except ValueError as exc:  # a value sbatch would refuse: say so, keep the rest
            notes.append(f"--{option}={value} not written: {exc}")
            continue
        if option in MEMORY_OPTIONS:
            for other in MEMORY_OPTIONS:
                if other != option and job.directive(other) is not None:
                    job = job.without_directive(other)
                    notes.append(f"--{other} removed: --{option}={value} replaces it")
    return job


def with_unix_line_breaks(job: JobScript) -> JobScript:
    """sbatch refuses CRLF scripts: the same script with LF line ends."""
    return JobScript.parse(job.render_text().replace("\r\n", "\n"), job.path)
