"""A file that is no job script (a Python file, an empty file, no ``#!`` line) given as
``--job``: one line naming it, exit status 2, nothing written; a script Slurm hands back for
``--jobid`` that is none is a note, and the job's other facts still stand."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuneadvisor.cli import main
from tuneadvisor.errors import EXIT_BAD_INPUT
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.workspace.gather import gather
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.live_job import LiveJob
from tuneadvisor.workspace.read_files import read_job

NOT_SCRIPTS = {
    "train.py": "import torch\n\nprint(torch.__version__)\n",
    "empty.sbatch": "",
    "comment.sbatch": "# my job\n#SBATCH --cpus-per-task=4\npython train.py\n",
}
SHEBANG = "The first line must start with #! followed by the path to an interpreter."


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", sorted(NOT_SCRIPTS))
@pytest.mark.parametrize(
    "command",
    [
        ["report"],
        ["report", "--format", "json"],
        ["apply"],
        ["apply", "--in-place"],
    ],
)
def test_refused_with_one_line_and_nothing_written(
    name: str,
    command: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    job = tmp_path / name
    job.write_text(NOT_SCRIPTS[name])
    monkeypatch.chdir(tmp_path)
    before = _files(tmp_path)
    code = main([*command, "--job", str(job)])
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT
    assert out == ""
    assert err.count("\n") == 1, err
    assert f"{job}: not a Slurm job script: sbatch refuses it" in err
    if name == "empty.sbatch":
        assert "Batch script is empty!" in err
    else:
        assert SHEBANG in err
    assert ("give it with --script" in err) == name.endswith(".py")
    assert _files(tmp_path) == before


def test_open_refuses_before_the_screen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    job = tmp_path / "train.py"
    job.write_text(NOT_SCRIPTS["train.py"])
    monkeypatch.setattr(
        "tuneadvisor.tui.app.run_open", lambda *a, **k: pytest.fail("the screen opened")
    )
    assert main(["open", "--job", str(job)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a Slurm job script" in err


def test_a_script_with_its_shebang_is_read(tmp_path: Path) -> None:
    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH -c 2\npython train.py\n")
    assert read_job(str(job)).request().cpus_per_task == 2


def test_a_script_from_slurm_that_is_none_is_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    bad = JobScript.parse("echo hi\n", "/home/u/job.sh")
    live = LiveJob("42", None, None, None, bad, ())
    monkeypatch.setattr("tuneadvisor.workspace.live_job.fetch_job", lambda *a, **k: live)
    found = gather(Inputs(jobid="42"), None, env={})
    assert found.job is None
    note = "job 42: the script Slurm gave is not a Slurm job script"
    assert any(n.line().startswith(note) for n in found.not_read)
    assert "the job script (--job)" in found.sharpen
