"""--scontrol FILE: saved `scontrol show job -o ID` output read as the job as it ran (the
input added by following docs/ARCHITECTURE.md's "Add an input"): its options win over the
job script's #SBATCH lines, with a note where they differ, and a file that is not one job's
record is one line and exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO
from tuneadvisor.cli import main
from tuneadvisor.workspace.gather import gather
from tuneadvisor.workspace.inputs import Inputs

RECORDED = REPO / "tests" / "fixtures" / "slurm-22.05" / "11-scontrol-show-job.txt"


def _record(tmp_path: Path, job_id: str) -> Path:
    """One job's line of the real recording, saved as a user would save it."""
    (line,) = [
        text for text in RECORDED.read_text().splitlines() if text.startswith(f"JobId={job_id} ")
    ]
    path = tmp_path / f"scontrol-{job_id}.txt"
    path.write_text(line + "\n")
    return path


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    for name in ("TUNEADVISOR_SITE", "TUNEADVISOR_RULES"):
        monkeypatch.delenv(name, raising=False)


def test_the_saved_record_gives_the_job_as_it_ran(tmp_path: Path) -> None:
    # job 6 of the recording: -c 2 --mem-per-cpu=300M -t 1-02:00:00 -p gpu --gres=gpu:1
    gathered = gather(Inputs(scontrol=str(_record(tmp_path, "6"))), None, env={})
    facts = gathered.facts
    assert facts["job.cpus_per_task"] == 2 and facts["job.mem_per_cpu_mib"] == 300
    assert facts["job.time_s"] == 26 * 3600 and facts["job.partition"] == "gpu"
    assert (facts["job.nodes"], facts["job.ntasks"]) == (1, 1)
    assert gathered.not_read == ()


def test_what_it_ran_with_wins_over_the_script_and_says_so(tmp_path: Path) -> None:
    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --cpus-per-task=1\n#SBATCH --time=00:10:00\nhostname\n")
    gathered = gather(Inputs(job=str(job), scontrol=str(_record(tmp_path, "6"))), None, env={})
    assert gathered.facts["job.cpus_per_task"] == 2  # sbatch -c 2 job.sbatch
    assert any("ran with --cpus-per-task 2 where its script says 1" in n for n in gathered.notes)


def test_report_reads_it_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _record(tmp_path, "4")
    assert main(["report", "--scontrol", str(path), "--format", "json"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "expected one job record, got 0"),
        ("JobId=1 NumCPUs=2\nJobId=2 NumCPUs=4\n", "expected one job record, got 2"),
        ("slurm_load_jobs error: Invalid job id specified\n", "not Key=Value pairs"),
    ],
)
def test_a_file_that_is_not_one_jobs_record_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, says: str
) -> None:
    path = tmp_path / "scontrol.txt"
    path.write_text(text)
    assert main(["report", "--scontrol", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"{path}: not `scontrol show job -o` output: " in err and says in err, err
