"""Every real file written by other people (tests/fixtures/realworld/) through the real command
line: no traceback, exit 0 or one line and exit 2, and a job script that `apply` writes still
parses as bash. The files' own expectations are tested where each kind is read."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tuneadvisor.cli import main

REALWORLD = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"
JOBS = sorted((REALWORLD / "jobscripts").glob("*.sh"))
TABLES = sorted((REALWORLD / "profiles").glob("*.txt"))
LPROFS = sorted((REALWORLD / "profiles").glob("*.lprof"))
SACCT = sorted((REALWORLD / "accounting").glob("*sacct*"))
SEFF = sorted((REALWORLD / "accounting").glob("*.seff.txt"))
NVIDIA_SMI = sorted((REALWORLD / "nvidia-smi").iterdir())


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if code == 2:
        assert len(err.splitlines()) == 1, err
    else:
        assert code == 0, err
    return code, out, err


def _parses(script: Path) -> bool:
    return subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0


def test_the_corpus_is_there() -> None:
    assert len(JOBS) >= 40 and len(TABLES) >= 8 and len(LPROFS) >= 5
    assert len(SACCT) >= 10 and len(SEFF) >= 10 and len(NVIDIA_SMI) >= 5


@pytest.mark.parametrize("job", JOBS, ids=[p.name for p in JOBS])
def test_a_real_job_script_is_reported_and_applied_to_valid_bash(
    job: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "report", "--job", str(job))
    assert code == 0 and f"Job script: {job}" in out
    tuned = tmp_path / "tuned.sh"
    code, _, _ = run(capsys, "apply", "--job", str(job), "-o", str(tuned))
    assert code == 0 and tuned.exists()
    checked = subprocess.run(["bash", "-n", str(tuned)], capture_output=True, text=True)
    # a published script bash cannot parse (an unclosed quote) stays as broken as it was
    assert checked.returncode == 0 or not _parses(job), checked.stderr
    assert job.read_bytes().count(b"\n") <= tuned.read_bytes().count(b"\n") + 1


@pytest.mark.parametrize("table", TABLES + LPROFS, ids=[p.name for p in TABLES + LPROFS])
def test_a_real_profile_is_reported(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "report", str(table))
    assert code == 2 or "Total time" in out


@pytest.mark.parametrize("sacct", SACCT, ids=[p.name for p in SACCT])
def test_a_real_sacct_output_is_read_or_refused_in_one_line(
    sacct: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "report", "--sacct", str(sacct))


@pytest.mark.parametrize("seff", SEFF, ids=[p.name for p in SEFF])
def test_a_real_seff_output_is_read_or_refused_in_one_line(
    seff: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "report", "--seff", str(seff))


@pytest.mark.parametrize("log", NVIDIA_SMI, ids=[p.name for p in NVIDIA_SMI])
def test_a_real_nvidia_smi_log_is_read_or_refused_in_one_line(
    log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "report", "--metrics", str(log))
