"""Each input's own package says its facts, under its prefix; the advisor derives only what
combines inputs (alloc.*, usage.*). The bundled example gathers the facts its reviewed golden
report shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO
from tuneadvisor.advisor.measured_allocation import ran_differently
from tuneadvisor.advisor.sizing import model_facts
from tuneadvisor.profile.facts import profile_facts
from tuneadvisor.relaunch.records import write_record
from tuneadvisor.runrecord.parts import Paths
from tuneadvisor.runrecord.record import RunRecord, read_record
from tuneadvisor.runrecord.settings import Settings
from tuneadvisor.slurm.accounting.as_run import as_run_facts
from tuneadvisor.slurm.jobscript.facts import job_facts, job_notes
from tuneadvisor.slurm.launch_line.choose import choose_launch
from tuneadvisor.slurm.launch_line.search import find_launches
from tuneadvisor.workspace.gather import gather
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import analyze_profiles
from tuneadvisor.workspace.read_files import read_job

EXAMPLE = REPO / "examples" / "mnist"
PROFILE = str(EXAMPLE / "24752610.lprof")
JOB = str(EXAMPLE / "mnist.sbatch")


def _only(prefix: str, facts: dict[str, object]) -> None:
    assert facts
    assert all(name.startswith(prefix) for name in facts), sorted(facts)


def test_the_job_scripts_facts_come_from_the_slurm_package() -> None:
    assert job_facts.__module__ == job_notes.__module__ == "tuneadvisor.slurm.jobscript.facts"
    job = read_job(JOB)
    facts = job_facts(job, choose_launch(find_launches(job)))
    _only("job.", facts)
    assert facts["job.cpus_per_task"] == 1 and facts["job.mem_mib"] == 8192.0
    assert facts["job.gpus"] == 1 and facts["job.time_s"] == 3600
    assert facts["job.launcher"] == "kernprof"


def test_the_job_as_slurm_ran_it_is_the_slurm_packages_and_the_comparison_the_advisors() -> None:
    assert as_run_facts.__module__ == "tuneadvisor.slurm.accounting.as_run"
    assert as_run_facts(None, None) == {}
    # comparing two inputs (the script with Slurm's record) is the advisor's business
    assert ran_differently.__module__ == "tuneadvisor.advisor.measured_allocation"
    (note,) = ran_differently({"job.cpus_per_task": 1}, {"job.cpus_per_task": 4})
    assert "--cpus-per-task 4" in note


def test_the_profiles_facts_come_from_the_profile_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert profile_facts.__module__ == "tuneadvisor.profile.facts"
    monkeypatch.chdir(REPO)
    analysis = analyze_profiles(Inputs(profiles=(PROFILE,)), REPO)
    facts = profile_facts(analysis)
    _only("profile.", facts)
    assert facts["profile.function"] == "train"


def test_the_example_gathers_the_facts_of_its_golden_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The facts the reviewed golden report shows, as gather merges them (the order of the
    inputs decides which value wins)."""
    monkeypatch.chdir(REPO)
    inputs = Inputs(profiles=(PROFILE,), job=JOB)
    env = {"XDG_CONFIG_HOME": str(REPO / "tests" / "no-such-config")}
    got = gather(inputs, analyze_profiles(inputs, REPO), env=env)
    golden = json.loads((REPO / "tests" / "golden" / "example-report.json").read_text())
    # and the step-time model's sizing, which advise() derives from them
    facts = {**got.facts, **model_facts(got.facts)}
    assert json.loads(json.dumps(dict(sorted(facts.items())))) == golden["advice"]["facts"]
    assert list(got.sharpen) == golden["advice"]["sharpen"]


def test_gather_reads_the_run_record_beside_a_profile_with_the_one_reader(
    tmp_path: Path,
) -> None:
    """What relaunch writes, gather reads through the same model (runrecord)."""
    profile = tmp_path / "profile.txt"
    profile.write_bytes(
        (REPO / "tests" / "fixtures" / "realworld" / "profiles" / "lp4.0.3-wide.txt").read_bytes()
    )
    record = RunRecord(
        id="r1", name="mnist_single", label=None, status="completed", where="local",
        script="mnist_classify.py", launcher="python",
        settings=Settings(cpus_per_task=3, knobs={"num_workers": 2}),
        source={}, commands=(), versions={}, started="2024-01-01T00:00:00Z",
        paths=Paths(dir=".", log="train.log", profiles=("profile.txt",)), notes=(),
    )  # fmt: skip
    written = write_record(tmp_path, record)
    assert read_record(tmp_path) == written
    facts = gather(Inputs(profiles=(str(profile),)), None, env={}).facts
    assert facts["alloc.cpus_per_task"] == 3 and facts["alloc.workers"] == 2
