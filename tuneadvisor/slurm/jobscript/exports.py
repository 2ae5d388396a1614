"""``export NAME=value`` lines added to a job script, just before its launch line: the plan's
environment (SRUN_CPUS_PER_TASK, OMP_NUM_THREADS) written where the launch reads it (a value
that is another variable only where that one is set: ``export_line``).

A name the script sets already (anywhere, as ``cpu_binding.sets_variable`` reads it) is left
alone, so applying the same plan twice adds nothing the second time. Values come from rule
files, which anyone may write: only a plain word or a ``$VARIABLE`` is written, never
something the shell would run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tuneadvisor.slurm.jobscript.cpu_binding import sets_variable
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.jobscript.placement import unsafe_before
from tuneadvisor.slurm.jobscript.syntax import Line
from tuneadvisor.slurm.launch_line.model import LaunchLine

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VALUE = re.compile(r"[A-Za-z0-9_.:/,+-]+|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")


def export_line(name: str, value: str) -> str:
    """``export NAME=value``; a value that is another variable is passed on only where that
    one is set: srun refuses ``SRUN_CPUS_PER_TASK=""`` ("Invalid numeric value"; seen on
    22.05.8), which a job without --cpus-per-task would export."""
    source = re.fullmatch(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", value)
    if source is None:
        return f"export {name}={value}"
    var = source.group(1)
    return f'if [ -n "${{{var}:-}}" ]; then export {name}=${var}; fi'


def with_exports(
    job: JobScript, launch: LaunchLine, exports: Mapping[str, object], notes: list[str]
) -> JobScript:
    """The script with an ``export`` line per name it does not set yet, in the plan's order,
    indented as the launch line and right before it."""
    lines = list(job.lines)
    if not 1 <= launch.line <= len(lines):
        return job
    new: list[str] = []
    for name, value in exports.items():
        text = str(value)
        if not _NAME.fullmatch(name) or not _VALUE.fullmatch(text):
            notes.append(f"export {name}={text!r} not written: not a plain name and value")
            continue
        if not sets_variable(job, launch, name):
            new.append(export_line(name, text))
    if not new:
        return job
    at = launch.line - 1
    unsafe = unsafe_before(job, launch)
    if unsafe is not None:  # a line in between would change what runs, or when
        notes.append(
            f"{'; '.join(new)}: not written ({unsafe}): add it where bash runs it just before "
            f"the launch on line {launch.line} yourself"
        )
        return job
    indent = re.match(r"[ \t]*", lines[at].text)
    margin = indent.group(0) if indent else ""
    ending = job.line_ending
    added = [Line(0, margin + text, ending) for text in new]
    text = "".join(line.text + line.ending for line in [*lines[:at], *added, *lines[at:]])
    return JobScript.parse(text, job.path)
