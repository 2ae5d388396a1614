"""Real Slurm: the scripts `apply` writes for issue 20's directive cases (conflicts, typos,
misspelt #SBATCH lines, value typos) are accepted by sbatch --test-only on the local one-node
cluster (it creates no job), and where the case says so, sbatch refused the script as given.
The plan is held within the node by a site file of its shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.slurm_cluster import Cluster, start_cluster
from tests.unit.test_directive_conflicts import CASES, SEFF, script

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

# (header lines, sbatch refuses the script as given)
TYPOS = [
    (("#SBACTH --time=00:30:00", "#SBATCH -c 1"), False),  # written as #SBATCH
    (("#sbatch --time=00:30:00", "#SBATCH -c 1"), False),
    (("# SBATCH --time=00:30:00", "#SBATCH -c 1"), False),  # kept as a comment
    (("#SBACTH --ntasks=64", "#SBATCH -c 1"), False),  # kept: a resource not sized
    (("#SBATCH --time=00:30:00x", "#SBATCH -c 1"), True),  # repaired a letter away
    (("#SBATCH --mem=1GG", "#SBATCH -c 1"), True),  # the plan's value
    (("#SBATCH --ntaskss=64", "#SBATCH -c 1"), True),  # removed
]


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster(start_cluster())


def scripts() -> list[tuple[str, str, bool]]:
    """(name, script, sbatch refuses it as given)."""
    refusing = ("conflicting-directives", "invalid-directive")
    cases = [(c.name, script(c), c.finding in refusing) for c in CASES if c.single_gpu]
    typos = [
        (lines[0], "#!/bin/bash\n" + "".join(f"{x}\n" for x in lines) + "\nhostname\n", refuses)
        for lines, refuses in TYPOS
    ]
    return cases + typos


def test_sbatch_takes_every_script_apply_writes(cluster: Cluster, tmp_path: Path) -> None:
    [node] = [p for p in cluster.client.partitions() if p.default]
    site = tmp_path / "site.toml"
    site.write_text(
        f'[partitions.debug]\ncores = {node.cpus}\nmem = "4G"\ngpus = 1\ndefault = true\n'
    )
    (tmp_path / "seff.txt").write_text(SEFF)
    refused: list[str] = []
    for number, (name, text, refuses) in enumerate(scripts()):
        job = tmp_path / f"job{number}.sbatch"
        job.write_text(text.replace("python train.py", "hostname"))
        assert (cluster.test_only(job) is not None) == refuses, name
        out = tmp_path / f"job{number}.tuned.sbatch"
        done = cluster.tuneadvisor(
            tmp_path, "apply", "--job", str(job), "--seff", str(tmp_path / "seff.txt"),
            "--site", str(site), "-o", str(out), "--force",
        )  # fmt: skip
        assert done.returncode == 0, f"{name}: {done.stderr}"
        said = cluster.test_only(out)
        if said is not None:
            refused.append(f"{name}: {said}\n{out.read_text()}")
    assert refused == []
