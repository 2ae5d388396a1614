"""The launch's CPU binding from the job script: srun without its cores on Slurm 22.05-23.02
(srun-cpus-not-inherited), torchrun without OMP_NUM_THREADS (omp-num-threads-unset), the
release that decides, and the ``export`` line `apply` writes before the launch line."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuneadvisor.advisor.slurm_release import release_facts
from tuneadvisor.slurm.client.version import parse_version
from tuneadvisor.slurm.jobscript.cpu_binding import binding_facts
from tuneadvisor.slurm.jobscript.exports import export_line, with_exports
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.launch_line.choose import choose_launch
from tuneadvisor.slurm.launch_line.model import LaunchLine
from tuneadvisor.slurm.launch_line.search import find_launches
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import load_workspace

DDP = "#!/bin/bash\n#SBATCH --ntasks-per-node=4\n#SBATCH --cpus-per-task=8\n#SBATCH --gres=gpu:4\n"


def _read(text: str) -> tuple[JobScript, LaunchLine]:
    job = JobScript.parse(text)
    launch = choose_launch(find_launches(job))
    assert launch is not None, text
    return job, launch


def _facts(body: str, head: str = DDP) -> dict[str, object]:
    return binding_facts(*_read(head + body))


# --------------------------------------------------------------------------- srun's cores


@pytest.mark.parametrize(
    "body",
    [
        "srun python train.py\n",
        "module load pytorch\nsrun --cpu-bind=cores python train.py\n",
        "export OMP_NUM_THREADS=8\nsrun --exact python train.py\n",
        "# export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK\nsrun python train.py\n",  # a comment
        "export SLURM_CPUS_PER_TASK=8\nsrun python train.py\n",  # srun 22.05 does not read it
    ],
)
def test_srun_without_its_cores(body: str) -> None:
    assert _facts(body)["job.srun_cpus_unset"] is True


@pytest.mark.parametrize(
    "body",
    [
        "srun -c $SLURM_CPUS_PER_TASK python train.py\n",
        "srun -c8 python train.py\n",
        "srun --cpus-per-task=8 python train.py\n",
        'srun --cpus-per-task "$SLURM_CPUS_PER_TASK" python train.py\n',
        "export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK\nsrun python train.py\n",
        "SRUN_CPUS_PER_TASK=8 srun python train.py\n",
        "SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK\nexport SRUN_CPUS_PER_TASK\nsrun python t.py\n",
        'if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK;'
        " fi\nsrun python train.py\n",
    ],
)
def test_srun_given_its_cores(body: str) -> None:
    assert _facts(body)["job.srun_cpus_unset"] is False


def test_no_srun_no_srun_fact() -> None:
    assert "job.srun_cpus_unset" not in _facts("python train.py\n")
    assert "job.srun_cpus_unset" not in _facts("torchrun --nproc-per-node=4 train.py\n")
    assert binding_facts(JobScript.parse(DDP + "echo hi\n"), None) == {}


@pytest.mark.parametrize(
    ("body", "omp"),
    [
        ("torchrun --nproc-per-node=4 train.py\n", False),
        ("export OMP_NUM_THREADS=8\ntorchrun --nproc-per-node=4 train.py\n", True),
        ("OMP_NUM_THREADS=2 torchrun --nproc-per-node=4 train.py\n", True),
        ("srun env OMP_NUM_THREADS=2 python train.py\n", True),
    ],
)
def test_omp_threads(body: str, omp: bool) -> None:
    assert _facts(body)["job.omp_threads_set"] is omp


@pytest.mark.parametrize(
    ("body", "follows"),
    [
        ("export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}\nsrun python train.py\n", True),
        ("export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK\nsrun python train.py\n", True),
        ("OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK srun python train.py\n", True),
        ("export OMP_NUM_THREADS=1\ntorchrun --nproc-per-node=4 train.py\n", False),
        ("export OMP_NUM_THREADS=8  # $SLURM_CPUS_PER_TASK later\nsrun python train.py\n", False),
        ("srun python train.py\n", None),  # not set: nothing to follow
    ],
)
def test_omp_threads_follow_the_cores(body: str, follows: bool | None) -> None:
    """The step-time model counts the intra-op threads only where they follow the cores (the
    bundled jobs' ``OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}``), never for a fixed count."""
    assert _facts(body).get("job.omp_threads_follow_cores") is follows


# --------------------------------------------------------------------------- the release


@pytest.mark.parametrize(
    ("said", "version"),
    [
        ("slurm 22.05.8", "22.05.8"),
        ("slurm-wlm 22.05.8\n", "22.05.8"),
        ("slurm 23.11.10", "23.11.10"),
        ("slurm 24.05", "24.05"),
        ("srun: command not found", None),
    ],
)
def test_version_as_srun_says_it(said: str, version: str | None) -> None:
    assert parse_version(said) == version


@pytest.mark.parametrize(
    ("version", "drops"),
    [
        ("21.08.8", False),
        ("22.05.0", True),
        ("22.05.8", True),
        ("23.02.7", True),
        ("23.11.0", False),
        ("24.05.1", False),
    ],
)
def test_releases_whose_srun_ignores_slurm_cpus_per_task(version: str, drops: bool) -> None:
    facts = release_facts({"slurm.version": version})
    assert facts["slurm.srun_drops_cpus"] is drops
    assert facts["slurm.version_note"] == f"{version} (srun --version)"


def test_unknown_release_is_assumed_and_said() -> None:
    facts = release_facts({})
    assert facts["slurm.srun_drops_cpus"] is True
    assert str(facts["slurm.version_note"]).startswith("not known")


# --------------------------------------------------------------------------- the export line


def test_export_written_before_the_launch_line_indented_as_it() -> None:
    job, launch = _read(DDP + "for i in 1; do\n    srun python train.py\ndone\n")
    notes: list[str] = []
    tuned = with_exports(job, launch, {"OMP_NUM_THREADS": 2}, notes)
    assert tuned.render_text().splitlines()[5:7] == [
        "    export OMP_NUM_THREADS=2",
        "    srun python train.py",
    ]
    assert notes == []
    assert tuned.directives() == job.directives()


def test_a_variable_is_passed_on_only_where_it_is_set() -> None:
    """srun refuses SRUN_CPUS_PER_TASK="" (a job without --cpus-per-task)."""
    line = export_line("SRUN_CPUS_PER_TASK", "$SLURM_CPUS_PER_TASK")
    assert line.startswith('if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then export')
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    for env, said in (({"SLURM_CPUS_PER_TASK": "8"}, "8"), ({}, "unset")):
        script = f'set -eu\n{line}\necho "${{SRUN_CPUS_PER_TASK-unset}}"\n'
        done = subprocess.run([bash, "-c", script], env=env, capture_output=True, text=True)
        assert (done.returncode, done.stdout.strip()) == (0, said), done.stderr


@pytest.mark.parametrize(
    "value", ["$(rm -rf ~)", "8; reboot", "`id`", "a b", "${X:-$(id)}", "'8'", ""]
)
def test_a_value_the_shell_would_run_is_not_written(value: str) -> None:
    job, launch = _read(DDP + "srun python train.py\n")
    notes: list[str] = []
    assert with_exports(job, launch, {"OMP_NUM_THREADS": value}, notes) is job
    assert notes and "not written" in notes[0]


def test_a_launch_line_that_continues_a_command_gets_no_line_in_between() -> None:
    job, launch = _read(DDP + "cd /work &&\n  srun python train.py\n")
    notes: list[str] = []
    assert with_exports(job, launch, {"OMP_NUM_THREADS": 4}, notes) is job
    assert "not written" in notes[0] and "continues" in notes[0]


_SRUN_FORMS = st.sampled_from(
    ["srun", "srun --cpu-bind=cores", "srun -c 8", "srun -N 1 --exact", "srun -l"]
)
_BEFORE = st.lists(
    st.sampled_from(
        [
            "module load pytorch",
            "export OMP_NUM_THREADS=4",
            "export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK",
            "cd $SLURM_SUBMIT_DIR",
            "# a comment SRUN_CPUS_PER_TASK",
            "",
        ]
    ),
    max_size=4,
)
_EXPORTS = st.dictionaries(
    st.sampled_from(["SRUN_CPUS_PER_TASK", "OMP_NUM_THREADS"]),
    st.sampled_from(["$SLURM_CPUS_PER_TASK", "2", "8"]),
    max_size=2,
)


@settings(max_examples=60, deadline=None)
@given(srun=_SRUN_FORMS, before=_BEFORE, exports=_EXPORTS, crlf=st.booleans())
def test_exporting_twice_is_exporting_once(
    srun: str, before: list[str], exports: dict[str, str], crlf: bool
) -> None:
    """The written names then read as set (the rules go quiet), a second pass adds nothing,
    and nothing but the added lines changes."""
    text = DDP + "".join(line + "\n" for line in before) + f"{srun} python train.py\n"
    if crlf:
        text = text.replace("\n", "\r\n")
    job, launch = _read(text)
    once = with_exports(job, launch, exports, [])
    again_launch = choose_launch(find_launches(once))
    assert again_launch is not None
    assert with_exports(once, again_launch, exports, []).render() == once.render()
    facts = binding_facts(once, again_launch)
    if "SRUN_CPUS_PER_TASK" in exports:
        assert facts["job.srun_cpus_unset"] is False
    if "OMP_NUM_THREADS" in exports:
        assert facts["job.omp_threads_set"] is True
    added = [ln for ln in once.render_text().splitlines() if ln not in text.splitlines()]
    assert len(once.lines) - len(job.lines) == len(added) <= len(exports)
    assert once.line_ending == job.line_ending


# --------------------------------------------------------------------------- report and apply


def _workspace(tmp_path: Path, body: str, head: str = DDP) -> tuple[list[str], str, str]:
    job = tmp_path / "job.sbatch"
    job.write_text(head + body)
    workspace = load_workspace(Inputs(job=str(job)))
    assert workspace.advice is not None
    ids = [f.id for f in workspace.advice.findings]
    tuned = workspace.tuned.tuned_job
    return ids, workspace.tuned.job_diff, tuned.render_text() if tuned is not None else ""


def test_report_names_srun_and_apply_exports_the_cores(tmp_path: Path) -> None:
    ids, diff, tuned = _workspace(tmp_path, "srun python train.py\n")
    assert "srun-cpus-not-inherited" in ids
    assert '+if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then export SRUN_CPUS_PER_TASK=' in diff
    (tmp_path / "job.sbatch").write_text(tuned)
    workspace = load_workspace(Inputs(job=str(tmp_path / "job.sbatch")))
    assert workspace.advice is not None
    assert "srun-cpus-not-inherited" not in [f.id for f in workspace.advice.findings]
    assert workspace.tuned.job_diff == ""


def test_report_names_torchrun_threads(tmp_path: Path) -> None:
    head = "#!/bin/bash\n#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=32\n#SBATCH --gres=gpu:4\n"
    ids, diff, _ = _workspace(tmp_path, "torchrun --nproc-per-node=4 train.py\n", head)
    assert "omp-num-threads-unset" in ids
    assert "+export OMP_NUM_THREADS=8\n" in diff
    assert "srun-cpus-not-inherited" not in ids  # no srun


def test_the_release_from_srun_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a cluster is asked, its srun's version is named, and a release that reads
    SLURM_CPUS_PER_TASK again keeps the rule quiet."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    srun = bin_dir / "srun"
    job = tmp_path / "job.sbatch"
    job.write_text(DDP + "srun python train.py\n")
    for version, fires in (("22.05.8", True), ("23.11.4", False)):
        srun.write_text(f"#!/bin/sh\necho 'slurm {version}'\n")
        srun.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
        workspace = load_workspace(Inputs(job=str(job), cluster=True))
        assert workspace.advice is not None
        assert workspace.advice.facts["slurm.version"] == version
        found = [f for f in workspace.advice.findings if f.id == "srun-cpus-not-inherited"]
        assert bool(found) is fires
        if found:
            evidence = {e.label: e.value for e in found[0].evidence}
            assert evidence["Slurm version"] == "22.05.8 (srun --version)"
