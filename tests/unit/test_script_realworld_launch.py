"""A real job (chhajedvaibhav/AiMOS-codes, PyramidNet): four GPUs asked, one plain process on
'cuda', and a launch option the kept train.py's parser does not define (issue 20, points 8
and 10). Kept byte for byte: tests/fixtures/realworld/jobscripts/MANIFEST.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO
from tuneadvisor.cli import main

JOBS = REPO / "tests" / "fixtures" / "realworld" / "jobscripts"
STEM = "chhajedvaibhav-aimos-codes-pyramidnet-schedular"
INPUTS = ["--job", str(JOBS / f"{STEM}.sh"), "--script", str(JOBS / f"{STEM}.py")]


def test_the_report_names_the_refused_option_and_the_idle_gpus(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["report", *INPUTS, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    found = {f["id"]: f for f in doc["findings"]}
    evidence = found["unknown-launch-option"]["evidence"]
    assert evidence["options"] == "--gpu_devices (nothing close)"
    idle = found["unused-gpus"]["evidence"]
    assert idle["GPUs per node asked"] == 4
    assert idle["GPUs the program uses"] == 1


def test_apply_says_the_line_fails_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tuned.sh"
    assert main(["apply", *INPUTS, "-o", str(out)]) == 0
    printed = capsys.readouterr()
    tuned = out.read_text()
    assert "--gpu_devices 0 1 2 3" in tuned  # the user's words are not dropped
    assert "--num_worker" in tuned  # the plan's option was added to the line...
    said = printed.out + printed.err
    assert "(line 18) fails as it is" in said  # ...and apply says the line fails anyway
