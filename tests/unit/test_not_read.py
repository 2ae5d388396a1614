"""Issue 30 §2: every report says what it could not read or follow, in one "Not read" section
(text, markdown, JSON), and "no findings" only of what was read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tuneadvisor.cli import main

EVAL_JOB = """\
#!/bin/bash
#SBATCH --nodes=1
#SBATCH --gres=gpu:1
cmd="python train.py --epochs 3"
eval "$cmd"
"""
TRAIN = """\
from torch.utils.data import DataLoader

loader = DataLoader(dataset, batch_size=64, num_workers=3, pin_memory=True)
for batch in loader:
    pass
"""


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    monkeypatch.delenv("TUNEADVISOR_SITE", raising=False)
    monkeypatch.delenv("TUNEADVISOR_RULES", raising=False)


def _report(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["report", *args]) == 0
    return capsys.readouterr().out


def test_an_eval_launch_is_not_read_and_the_report_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`cmd=...; eval "$cmd"` used to give "Findings: none" without a word about the
    training script it never read."""
    job = tmp_path / "job.sh"
    job.write_text(EVAL_JOB)
    (tmp_path / "train.py").write_text(TRAIN)
    text = _report(capsys, "--job", str(job))
    assert "Findings: none in what was read (see Not read)" in text
    section = text.split("\nNot read:\n", 1)[1]
    assert section.startswith('  - line 5: `eval "$cmd"` runs a command built when the job runs')
    assert "give --script" in section.splitlines()[0]
    markdown = _report(capsys, "--job", str(job), "--format", "markdown")
    assert "No findings in what was read." in markdown
    assert '## Not read\n\n- line 5: `eval "$cmd"`' in markdown
    report = json.loads(_report(capsys, "--job", str(job), "--format", "json"))
    (item,) = report["advice"]["not_read"]
    assert item.startswith('line 5: `eval "$cmd"`')
    # given the training script, it is read: nothing is left unread
    report = json.loads(
        _report(
            capsys, "--job", str(job), "--script", str(tmp_path / "train.py"), "--format", "json"
        )
    )
    assert report["advice"]["not_read"] == []


def test_a_job_that_starts_no_python_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job.sh"
    job.write_text("#!/bin/bash\n#SBATCH -N 1\nmodule load cuda\necho hello\n")
    text = _report(capsys, "--job", str(job))
    assert "Not read:\n  - the job script's launch: no Python training command found in it" in text


def test_a_fully_read_job_says_findings_none_and_has_no_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job.sh"
    job.write_text(
        "#!/bin/bash\n#SBATCH --cpus-per-task=4\n#SBATCH --gres=gpu:1\npython train.py\n"
    )
    (tmp_path / "train.py").write_text(TRAIN)
    text = _report(capsys, "--job", str(job))
    assert "Not read" not in text
    report = json.loads(_report(capsys, "--job", str(job), "--format", "json"))
    assert report["advice"]["not_read"] == []


def test_a_job_log_without_a_known_cause_is_said_not_explained(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "slurm-1.out"
    log.write_text("starting\nepoch 1\nsomething odd happened\n")
    report = json.loads(_report(capsys, "--log", str(log), "--format", "json"))
    said = f"{log}: read, 3 lines, no known cause of death found"
    assert said in report["advice"]["not_read"]
    assert said not in report["advice"]["notes"]


REAL_EVAL = (
    Path(__file__).resolve().parents[1]
    / "fixtures/realworld/jobscripts/huggingface-accelerate-examples-slurm-submit_multicpu.sh"
)


def test_a_real_eval_launch_is_said_not_read(capsys: pytest.CaptureFixture[str]) -> None:
    """Hugging Face's submit_multicpu.sh builds its launch in CMD and runs `eval $CMD`."""
    report = json.loads(_report(capsys, "--job", str(REAL_EVAL), "--format", "json"))
    assert report["findings"] == []
    assert any(
        item.startswith("line 64: `eval $CMD` runs a command built")
        for item in (report["advice"]["not_read"])
    )
    text = _report(capsys, "--job", str(REAL_EVAL))
    assert "Findings: none in what was read (see Not read)" in text
