"""Issue 30 §1 on the real --exclusive job scripts of tests/fixtures/realworld/jobscripts/:
a whole-node job without --cpus-per-task is never read as one core. Without a site file its
core count is unknown: no core or worker finding, no such change, and the report says what
it could not read; with one, each task has the node's cores over its tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import load_workspace

JOBS = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "jobscripts"
# the job's own partition (a site file that does not describe it sizes nothing)
SITE = '[partitions.{name}]\ncores = 64\nmem = "512G"\ngpus = 8\ndefault = true\n'
CORE_RULES = {"too-many-workers", "under-requested-cores", "srun-cpus-not-inherited"}


def _whole_node(path: Path) -> bool:
    request = JobScript.parse(path.read_bytes()).request()
    return (
        request.exclusive == "exclusive"
        and request.cpus_per_task is None
        and request.cpus_per_gpu is None
    )


EXCLUSIVE = sorted(p for p in JOBS.glob("*.sh") if _whole_node(p))


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    monkeypatch.delenv("TUNEADVISOR_SITE", raising=False)
    monkeypatch.delenv("TUNEADVISOR_RULES", raising=False)


def test_the_corpus_has_whole_node_jobs() -> None:
    assert len(EXCLUSIVE) >= 4


@pytest.mark.parametrize("job", EXCLUSIVE, ids=[p.name for p in EXCLUSIVE])
def test_an_exclusive_job_is_not_read_as_one_core(job: Path, tmp_path: Path) -> None:
    workspace = load_workspace(Inputs(job=str(job)))
    advice = workspace.advice
    assert advice is not None
    assert "job.cpus_per_task" not in advice.facts
    assert not CORE_RULES & {f.id for f in advice.findings}
    assert "cpus-per-task" not in advice.plan.sbatch and "num_workers" not in advice.plan.script
    assert any(
        item.line().startswith("--exclusive: each task has its node's cores")
        for item in advice.not_read
    )
    site = tmp_path / "site.toml"
    partition = JobScript.parse(job.read_bytes()).request().partition or "p"
    site.write_text(SITE.format(name=f'"{partition}"'))
    sized = load_workspace(Inputs(job=str(job), site=str(site))).advice
    assert sized is not None
    tasks = JobScript.parse(job.read_bytes()).request().tasks_per_node
    assert sized.facts["job.cpus_per_task"] == 64 // tasks
    assert not [item for item in sized.not_read if item.what == "--exclusive"]
