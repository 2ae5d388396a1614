"""Every real file written by other people (tests/fixtures/realworld/) through the real command
line, in the text report a user reads: a job script is reported and `apply` writes one that
still parses as bash; every profile, seff, sacct and nvidia-smi file is read into what its row
in tests/process/test_realworld_evidence.py says a careful reader concludes (the hottest line
and its share, the job's state, CPU efficiency and memory peak, the GPUs), or, where that row
says the file is refused, refused in one line that names the file and says why. No traceback
either way; no file may be refused that its row does not name."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.process.test_realworld_evidence import (
    EXPECTED,
    Expectation,
    Gpus,
    Hottest,
    Job,
    Jobstats,
    NoTime,
    Refused,
)
from tuneadvisor.cli import main

REALWORLD = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"
JOBS = sorted((REALWORLD / "jobscripts").glob("*.sh"))
TABLES = sorted((REALWORLD / "profiles").glob("*.txt"))
LPROFS = sorted((REALWORLD / "profiles").glob("*.lprof"))
SACCT = sorted((REALWORLD / "accounting").glob("*sacct*"))
SEFF = sorted((REALWORLD / "accounting").glob("*.seff.txt"))
NVIDIA_SMI = sorted((REALWORLD / "nvidia-smi").iterdir())
# the finding (or note) a job's end state gives in the report; COMPLETED gives none of them
STATE_SAYS = {
    "TIMEOUT": "job-timed-out",
    "OUT_OF_MEMORY": "job-out-of-memory",
    "CANCELLED": "job-cancelled",
    "FAILED": "job-failed",
    "RUNNING": "the job is running",
}


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
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, check=False)
    return done.returncode == 0


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
    checked = subprocess.run(
        ["bash", "-n", str(tuned)], capture_output=True, text=True, check=False
    )
    # a published script bash cannot parse (an unclosed quote) stays as broken as it was
    assert checked.returncode == 0 or not _parses(job), checked.stderr
    assert job.read_bytes().count(b"\n") <= tuned.read_bytes().count(b"\n") + 1


def _option(expected: Expectation) -> str | None:
    """The option that hands the file to the reader its row is about."""
    if isinstance(expected, Job | Refused):
        return expected.option
    if isinstance(expected, Jobstats):
        return "--sacct"
    return "--metrics" if isinstance(expected, Gpus) else None


def _says_the_hottest_line(out: str, expected: Hottest) -> None:
    assert f"{expected.function}()" in out, out
    row = re.compile(rf"^ +{expected.line} +\d+ .* {expected.percent:.1f} ", re.MULTILINE)
    assert row.search(out), f"no row for line {expected.line} at {expected.percent:.1f} %"


def _says_the_job(
    out: str, state: str | None, cpu_pct: float | None, mem_mib: float | None
) -> None:
    if cpu_pct is not None:
        assert f"CPU {cpu_pct:.1f} %" in out, out
    if mem_mib is not None:
        assert f"memory peak {mem_mib:.0f} MiB" in out, out
    for other, says in STATE_SAYS.items():
        assert (says in out) == (other == state), f"{state}: {says}"


def _says_the_gpus(out: str, expected: Gpus) -> None:
    assert re.search(rf"\b{expected.count} GPUs?\b", out), out
    if expected.util_mean is None:
        assert "utilisation mean" not in out and "utilization mean" not in out
    if expected.mem_peak_mib is not None:
        assert f"memory peak {expected.mem_peak_mib:.0f} " in out, out


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_real_file_gives_the_user_what_its_row_says(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = EXPECTED[name]
    path = str(REALWORLD / name)
    option = _option(expected)
    code, out, err = run(capsys, "report", *([option, path] if option else [path]))
    if isinstance(expected, Refused):
        assert code == 2 and path in err and expected.says in err, err
        return
    assert code == 0, f"{name} is refused, but its row says what it holds: {err}"
    if isinstance(expected, Hottest):
        assert "Total time" in out
        _says_the_hottest_line(out, expected)
    elif isinstance(expected, NoTime):
        assert (
            f"{expected.function}()" in out and f"no time recorded in {expected.function}()" in out
        )
    elif isinstance(expected, Job):
        _says_the_job(out, expected.state, expected.cpu_efficiency_pct, expected.mem_peak_mib)
    elif isinstance(expected, Jobstats):
        _says_the_job(out, expected.state, expected.cpu_efficiency_pct, expected.mem_peak_mib)
        if expected.gpus is not None:
            assert "GPU: from jobstats (AdminComment)" in out, out
            assert f"utilization mean {expected.gpus.util_mean:.1f} %" in out, out
    else:
        _says_the_gpus(out, expected)


def test_the_sweep_covers_every_real_file_the_globs_find() -> None:
    for path in TABLES + LPROFS + SACCT + SEFF + NVIDIA_SMI:
        if path.name != "MANIFEST.md":
            assert str(path.relative_to(REALWORLD)) in EXPECTED, path
