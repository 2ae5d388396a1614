"""The command line's contract in a real process: one line on stderr and exit 2 for bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tuneadvisor.cli import commands

EXAMPLE = REPO / "examples" / "mnist" / "24752610.lprof"


def run_cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tuneadvisor", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0]


@pytest.mark.parametrize("command", ["report", "open"])
def test_missing_profile_is_one_line_exit_2(command: str, tmp_path: Path) -> None:
    missing = tmp_path / "24752610.lprof"
    assert_one_line_error(run_cli(command, str(missing)), str(missing), "no such file")


@pytest.mark.parametrize("command", ["report", "open"])
def test_no_inputs_is_one_line_exit_2(command: str) -> None:
    assert_one_line_error(run_cli(command), "profile")


def test_directory_as_profile_is_one_line_exit_2(tmp_path: Path) -> None:
    assert_one_line_error(run_cli("report", str(tmp_path)), str(tmp_path))


def test_missing_job_script_is_named(tmp_path: Path) -> None:
    job = tmp_path / "job.sbatch"
    assert_one_line_error(run_cli("report", "--job", str(job)), str(job), "no such file")


def test_source_root_must_be_a_directory(tmp_path: Path) -> None:
    bogus = tmp_path / "not-a-dir"
    result = run_cli("report", str(EXAMPLE), "--source-root", str(bogus))
    assert_one_line_error(result, str(bogus))


def test_corrupt_profile_via_cli_writes_nothing_to_stdout(tmp_path: Path) -> None:
    bad = tmp_path / "bad.lprof"
    bad.write_bytes(b"\x80\x05\x95garbage")
    assert_one_line_error(run_cli("report", str(bad), "--format", "json"), str(bad))


def test_a_corrupt_seff_in_a_real_process_is_one_line(tmp_path: Path) -> None:
    seff = tmp_path / "seff.txt"
    seff.write_text("Job ID: 5\nMemory Utilized: a lot\n")
    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --cpus-per-task=2\npython train.py\n")
    result = subprocess.run(
        [sys.executable, "-m", "tuneadvisor", "report", "--job", str(job), "--seff", str(seff)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": str(tmp_path / "cfg")},
    )
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"tuneadvisor: {seff}: ")


def test_help_lists_the_commands() -> None:
    # A wide terminal: argparse then puts each help line on its command's line, unwrapped.
    result = subprocess.run(
        [sys.executable, "-m", "tuneadvisor", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "1000"},
    )
    assert result.returncode == 0
    section = result.stdout.split("\n  COMMAND\n", 1)[1].split("\n\n", 1)[0]
    listed = [tuple(line.split(maxsplit=1)) for line in section.splitlines()]
    table = [(name, command.HELP) for name, command in commands().items()]
    assert len(table) == 10
    assert listed == table  # every command of the table, in its order, with its help line
