"""The README's first hour, run as written (issue 24, points 3 and 4): the commands of its
"First hour" section that need no torch (report and apply on the bundled example with the
bundled seff, the report saved as JSON) run through bash, word for word, in a copy of the
checkout's examples, with `tuneadvisor` on PATH as the activated venv has it. The ones that
train are parsed and their files checked in tests/unit/test_readme_first_hour.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.report_schema import checked
from tests.unit.test_readme_first_hour import REPO, first_hour, tuneadvisor_argv

CHEAP = ("report", "apply")  # no torch, no training, a second or two each


def _cheap_lines() -> list[str]:
    lines = []
    for line in first_hour():
        argv = tuneadvisor_argv(line)
        if argv and argv[0] in CHEAP:
            lines.append(line)
    return lines


@pytest.fixture
def checkout(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A working folder holding the checkout's examples, and an environment whose PATH has a
    `tuneadvisor` that runs this checkout's code (as `.venv/bin/tuneadvisor` would)."""
    work = tmp_path / "clone"
    shutil.copytree(REPO / "examples", work / "examples")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "tuneadvisor"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m tuneadvisor "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PATH=f"{bin_dir}:{env['PATH']}", PYTHONPATH=str(REPO), NO_COLOR="1")
    return work, env


def _bash(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip


def test_there_are_cheap_commands_to_run() -> None:
    verbs = {tuneadvisor_argv(line)[0] for line in _cheap_lines()}  # type: ignore[index]
    assert verbs == set(CHEAP)


def test_the_cheap_first_hour_commands_run_as_written(
    checkout: tuple[Path, dict[str, str]],
) -> None:
    work, env = checkout
    for line in _cheap_lines():
        done = _bash(line, work, env)
        assert done.returncode == 0, f"{line}\n{done.stderr}"
        assert not done.stderr.startswith("tuneadvisor:"), done.stderr
    # what the README says each shows
    report = _bash(_cheap_lines()[0], work, env).stdout
    assert "dataloader-bound" in report and "seff" in report
    tuned = work / "examples" / "mnist" / "mnist.tuned.sbatch"
    (cores,) = re.findall(r"^#SBATCH --cpus-per-task=(\d+)", tuned.read_text(), re.MULTILINE)
    assert int(cores) > 1  # the example's one core, raised for the workers it advises
    saved = checked(json.loads((work / "report.json").read_text()))
    assert any(f["id"] == "dataloader-bound" for f in saved["findings"])


def test_apply_as_written_twice_writes_the_same_file(
    checkout: tuple[Path, dict[str, str]],
) -> None:
    work, env = checkout
    (apply_line,) = [line for line in _cheap_lines() if tuneadvisor_argv(line)[0] == "apply"]  # type: ignore[index]
    tuned = work / "examples" / "mnist" / "mnist.tuned.sbatch"
    assert _bash(apply_line, work, env).returncode == 0
    first = tuned.read_bytes()
    assert _bash(apply_line, work, env).returncode == 0
    assert tuned.read_bytes() == first
