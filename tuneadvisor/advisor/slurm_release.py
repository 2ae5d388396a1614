"""What the Slurm release means for the job script's launch: whether its srun ignores
SLURM_CPUS_PER_TASK (22.05.x and 23.02.x; sources in ``slurm/jobscript/cpu_binding.py``).

Without a version (no cluster asked, no srun on the PATH that answers) the rule assumes the
release that drops the cores: the fix it suggests, ``SRUN_CPUS_PER_TASK``, changes nothing on
other releases, and its title and evidence say the version was not known.
"""

from __future__ import annotations

import re

from tuneadvisor.advisor.fact_view import Slurm
from tuneadvisor.advisor.facts import Facts

# [first, last] releases (year, month) whose srun reads SRUN_CPUS_PER_TASK only.
DROPS_FROM = (22, 5)
DROPS_BEFORE = (23, 11)
_RELEASE = re.compile(r"([0-9]+)\.([0-9]+)")


def release_facts(facts: Facts) -> dict[str, object]:
    """``slurm.srun_drops_cpus`` and ``slurm.version_note``, always."""
    version = Slurm.read(facts).version
    found = _RELEASE.match(version) if version is not None else None
    if found is None:
        return Slurm(
            srun_drops_cpus=True,
            version_known=False,
            version_note="not known (srun --version not answered here: --jobid, "
            "apply --submit or srun on the PATH asks it); 22.05 and 23.02 ignore "
            "SLURM_CPUS_PER_TASK",
        ).facts()
    release = (int(found.group(1)), int(found.group(2)))
    drops = DROPS_FROM <= release < DROPS_BEFORE
    return Slurm(
        srun_drops_cpus=drops, version_known=True, version_note=f"{version} (srun --version)"
    ).facts()
