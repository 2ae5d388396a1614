"""Which of a live job's logs are read (workspace/job_log.py): StdOut and StdErr as slurmctld
reports them, once each, where this machine can read them; a note for each that is not."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from tests.unit.test_slurm_parsers import SHOW_JOB
from tuneadvisor.errors import InputError
from tuneadvisor.slurm.client.scontrol import parse_job
from tuneadvisor.workspace.job_log import live_log_paths, read_job_logs
from tuneadvisor.workspace.live_job import LiveJob


def _live(out: str | None, err: str | None, shown: bool = True) -> LiveJob:
    info = replace(parse_job(SHOW_JOB["scontrol show job -o 4"]), std_out=out, std_err=err)
    return LiveJob("4", info if shown else None, None, None, None, ())


def test_stdout_and_stderr_each_once_and_not_again_when_given(tmp_path: Path) -> None:
    out, err = tmp_path / "j.out", tmp_path / "j.err"
    out.write_text("x\n")
    err.write_text("y\n")
    notes: list[str] = []
    assert live_log_paths(_live(str(out), str(err)), (), notes) == [str(out), str(err)]
    assert live_log_paths(_live(str(out), str(out)), (), notes) == [str(out)]
    assert live_log_paths(_live(str(out), str(err)), (str(out),), notes) == [str(err)]
    assert notes == []


def test_what_cannot_be_read_here_is_a_note_naming_it(tmp_path: Path) -> None:
    notes: list[str] = []
    gone, pattern = tmp_path / "gone.out", str(tmp_path / "slurm-%j.out")
    assert live_log_paths(_live(str(gone), pattern), (), notes) == []
    assert notes == [
        f"job 4: its output {gone} is not a file on this machine: give it with --log FILE",
        f"job 4: its output {pattern} is a pattern, not a file name: give it with --log FILE",
    ]
    forgotten: list[str] = []
    assert live_log_paths(_live(None, None, shown=False), (), forgotten) == []
    assert "Slurm no longer says where its output went" in forgotten[0]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_log_of_slurms_is_a_note(tmp_path: Path) -> None:
    out = tmp_path / "j.out"
    out.write_text("Killed\n")
    out.chmod(0)
    notes: list[str] = []
    assert live_log_paths(_live(str(out), None), (), notes) == []
    assert "permission denied" in notes[0]


def test_a_given_log_must_be_read_and_slurms_may_fail(tmp_path: Path) -> None:
    """--log names a file the user wants read: failing is an InputError. A log Slurm named
    that is gone by the time it is read is a note."""
    out = tmp_path / "j.out"
    out.write_text("Killed\n")
    notes: list[str] = []
    log = read_job_logs((), [str(out), str(tmp_path / "gone.err")], notes)
    assert log is not None and log.paths == (str(out),)
    assert notes == [f"{tmp_path / 'gone.err'}: no such file (job log)"]
    with pytest.raises(InputError):
        read_job_logs((str(tmp_path / "gone.err"),), [], [])
    assert read_job_logs((), [], notes) is None
