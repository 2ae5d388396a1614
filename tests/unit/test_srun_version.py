"""Issue 30: srun-cpus-not-inherited asks `srun --version` where srun is on the PATH
(bounded), instead of assuming the release that drops the cores; without an answer the
finding stays and its title line says the version is assumed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import load_workspace

JOB = "#!/bin/bash\n#SBATCH --ntasks-per-node=2\n#SBATCH --cpus-per-task=8\nsrun python train.py\n"


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    monkeypatch.delenv("TUNEADVISOR_SITE", raising=False)
    monkeypatch.delenv("TUNEADVISOR_RULES", raising=False)


def _finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, said: str | None) -> str | None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if said is not None:  # a stand-in srun that answers --version as Slurm's does
        srun = bin_dir / "srun"
        srun.write_text(f'#!/bin/sh\n[ "$1" = --version ] && echo "{said}"\n')
        srun.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin" if said is not None else str(bin_dir))
    job = tmp_path / "job.sh"
    job.write_text(JOB)
    advice = load_workspace(Inputs(job=str(job))).advice
    assert advice is not None
    found = [f for f in advice.findings if f.id == "srun-cpus-not-inherited"]
    return found[0].title if found else None


def test_an_srun_on_the_path_is_asked_its_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _finding(tmp_path, monkeypatch, "slurm 23.11.4") is None  # reads it again


def test_a_release_that_drops_the_cores_fires_without_assuming(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    title = _finding(tmp_path, monkeypatch, "slurm 22.05.8")
    assert title == "srun starts the tasks with one core each, not --cpus-per-task"


def test_without_srun_the_title_says_the_version_is_assumed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    title = _finding(tmp_path, monkeypatch, None)
    assert title is not None
    assert title.endswith("(assumed: the Slurm version is not known, 22.05 or 23.02 taken)")


def test_an_srun_that_fails_is_assumed_without_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An srun on the PATH of a machine outside the cluster cannot read its config: the
    title says the version is assumed; no note repeats srun's error the user did not ask."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    srun = bin_dir / "srun"
    srun.write_text(
        '#!/bin/sh\necho "srun: fatal: Could not establish a configuration source" >&2\nexit 1\n'
    )
    srun.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    job = tmp_path / "job.sh"
    job.write_text(JOB)
    advice = load_workspace(Inputs(job=str(job))).advice
    assert advice is not None
    (finding,) = [f for f in advice.findings if f.id == "srun-cpus-not-inherited"]
    assert finding.title.endswith("22.05 or 23.02 taken)")
    assert not [n for n in advice.notes if "Slurm version unknown" in n]
