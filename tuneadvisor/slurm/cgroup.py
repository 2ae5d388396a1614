"""Which Slurm job a process's cgroup belongs to, read from ``/proc/PID/cgroup``.

slurmd's cgroup plugins put every step of a job under a ``job_ID`` folder: cgroup v1
``4:memory:/slurm/uid_1000/job_123/step_0/task_0`` (one line per controller), cgroup v2
``0::/system.slice/slurmstepd.scope/job_123/step_0/user/task_0`` (one line). A shell that
``ssh`` placed in a job (pam_slurm_adopt) is in its ``step_extern``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tuneadvisor.numbers import is_ascii_digits

_JOB = re.compile(r"/job_([0-9]+)(?:/step_([^/\s]+))?")


@dataclass(frozen=True)
class CgroupPlace:
    version: int  # 1 or 2 (the unified hierarchy alone)
    path: str  # the memory controller's path on v1, the unified path on v2
    job_id: str | None  # the job whose cgroup this is; None outside every job
    step: str | None  # "0", "batch", "extern", "interactive"


def parse_cgroup(text: str) -> CgroupPlace | None:
    """The place of the process in the cgroup tree; None when the text names none."""
    entries: list[tuple[str, str]] = []
    for line in text.splitlines():
        number, sep, rest = line.partition(":")
        controllers, sep2, path = rest.partition(":")
        if sep and sep2 and is_ascii_digits(number):
            entries.append((controllers, path.strip()))
    if not entries:
        return None
    v1 = [(c, p) for c, p in entries if c]
    version = 1 if v1 else 2
    # v1: the memory controller is the one Slurm always constrains; any job path otherwise
    ordered = sorted(v1, key=lambda e: "memory" not in e[0].split(",")) if v1 else entries
    for _, path in ordered:
        match = _JOB.search(path)
        if match:
            return CgroupPlace(version, path, match.group(1), match.group(2))
    return CgroupPlace(version, ordered[0][1], None, None)
