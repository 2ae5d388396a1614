"""What the Slurm release means for the job script's launch: whether its srun ignores
SLURM_CPUS_PER_TASK (22.05.x and 23.02.x; sources in ``slurm/jobscript/cpu_binding.py``).

Without a version (no cluster asked) the rule assumes the release that drops the cores: the
fix it suggests, ``SRUN_CPUS_PER_TASK``, changes nothing on other releases, and its evidence
says the version was not known.
"""

from __future__ import annotations

import re

from tuneadvisor.advisor.facts import Facts

# [first, last] releases (year, month) whose srun reads SRUN_CPUS_PER_TASK only.
DROPS_FROM = (22, 5)
DROPS_BEFORE = (23, 11)
_RELEASE = re.compile(r"([0-9]+)\.([0-9]+)")


def release_facts(facts: Facts) -> dict[str, object]:
    """``slurm.srun_drops_cpus`` and ``slurm.version_note``, always."""
    version = facts.get("slurm.version")
    found = _RELEASE.match(version) if isinstance(version, str) else None
    if found is None:
        return {
            "slurm.srun_drops_cpus": True,
            "slurm.version_note": "not known (no cluster asked: --jobid or apply --submit asks "
            "srun --version); 22.05 and 23.02 ignore SLURM_CPUS_PER_TASK",
        }
    release = (int(found.group(1)), int(found.group(2)))
    drops = DROPS_FROM <= release < DROPS_BEFORE
    return {"slurm.srun_drops_cpus": drops, "slurm.version_note": f"{version} (srun --version)"}
