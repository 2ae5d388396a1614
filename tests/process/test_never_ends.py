"""Commands that used to run until killed (issue 24, points 7 and 8) now end at once with one
line and exit status 2, on real processes:

- `watch --job ID` where Slurm cannot be asked (no scontrol, slurmctld down or silent) and
  no process of the job is on this node: it sampled nothing until stopped, then said
  "Findings: none" with status 0;
- `open` with stdout not a terminal (a batch job, nohup, a pipe): the screen spun a core
  forever;
- `watch --headless --` with nothing after `--`: it watched the whole node.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tuneadvisor.errors import InputError
from tuneadvisor.watch import start
from tuneadvisor.watch.request import WatchRequest

EXAMPLE = REPO / "examples" / "mnist" / "24752610.lprof"
EXAMPLE_JOB = REPO / "examples" / "mnist" / "mnist.sbatch"
RECORDING = REPO / "tests" / "fixtures" / "watch" / "replay-a100.jsonl"
NO_SUCH_JOB = "987654321"  # no process here carries it
SLURMCTLD_DOWN = (
    "#!/bin/sh\necho 'slurm_load_jobs error: Unable to contact slurm controller (connect "
    "failure)' >&2\nexit 1\n"
)
SILENT = "#!/bin/sh\nexec sleep 600\n"


def tuneadvisor(
    *args: str, path: str | None = None, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The command with stdout a pipe (as in a batch job); at most 60 s, which none needs."""
    env = {**os.environ, "PYTHONPATH": str(REPO), **(extra_env or {})}
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [sys.executable, "-m", "tuneadvisor", *args],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60, check=False,
    )  # fmt: skip


def one_line_exit_2(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("tuneadvisor: "), done.stderr
    for needle in needles:
        assert needle in done.stderr
    return done.stderr


def fake_scontrol(tmp_path: Path, script: str) -> str:
    """A PATH whose scontrol is ``script``, with the interpreter's folder (nothing of Slurm)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(script)
    (bin_dir / "scontrol").chmod(0o755)
    return f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin"


def test_a_job_with_no_process_here_and_no_scontrol_is_one_line() -> None:
    path = str(Path(sys.executable).parent)  # the interpreter's folder alone: no Slurm
    assert not (Path(path) / "scontrol").exists()
    done = tuneadvisor("watch", "--headless", "--job", NO_SUCH_JOB, path=path)
    one_line_exit_2(
        done, f"--job {NO_SUCH_JOB}: no process of this job runs on this node",
        "Slurm's scontrol is not on PATH",
    )  # fmt: skip


def test_a_job_with_no_process_here_and_slurmctld_down_is_one_line(tmp_path: Path) -> None:
    path = fake_scontrol(tmp_path, SLURMCTLD_DOWN)
    done = tuneadvisor("watch", "--headless", "--job", NO_SUCH_JOB, path=path)
    one_line_exit_2(done, "no process of this job runs on this node", "Unable to contact")


def test_a_job_of_this_node_is_still_watched_by_its_environment(tmp_path: Path) -> None:
    """The refusal is for a job with nothing here: one with a process here (its
    SLURM_JOB_ID) is watched as before, without Slurm."""
    job = "987654322"
    path = fake_scontrol(tmp_path, SLURMCTLD_DOWN)
    sleeper = subprocess.Popen(["sleep", "60"], env={**os.environ, "SLURM_JOB_ID": job})
    try:
        done = tuneadvisor("watch", "--headless", "--job", job, "--interval", "0.2",
                           "--duration", "1", path=path)  # fmt: skip
    finally:
        sleeper.kill()
        sleeper.wait()
    assert done.returncode == 0, done.stderr
    assert f"job {job} on this node (processes matched by their cgroup or SLURM_JOB_ID" in (
        done.stdout
    )


def test_slurm_not_answering_is_a_bounded_wait_then_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """scontrol that never answers: the client's timeout (20 s in a watch; 1 s here) bounds
    the wait, then the same one line."""
    monkeypatch.setenv("PATH", fake_scontrol(tmp_path, SILENT))
    monkeypatch.setattr(start, "SLURM_TIMEOUT_S", 1.0)
    started = time.monotonic()
    with pytest.raises(InputError) as raised:
        start.run_watch(WatchRequest(job=NO_SUCH_JOB, headless=True), lambda *a: "")
    waited = time.monotonic() - started
    message = raised.value.one_line()
    assert "no process of this job runs on this node" in message
    assert "scontrol did not answer within 1 s" in message
    assert waited < 30  # bounded by the timeout, not by the watch's end (there is none)


def test_open_without_a_terminal_refuses_at_once() -> None:
    done = tuneadvisor("open", str(EXAMPLE), "--job", str(EXAMPLE_JOB))
    one_line_exit_2(done, "open: stdout is not a terminal", "tuneadvisor report")


def test_open_of_a_recording_without_a_terminal_refuses_at_once() -> None:
    done = tuneadvisor("open", str(RECORDING))
    one_line_exit_2(done, "open: stdout is not a terminal", f"report --metrics {RECORDING}")


def test_open_without_a_terminal_still_names_a_bad_file_first(tmp_path: Path) -> None:
    missing = tmp_path / "gone.lprof"
    one_line_exit_2(tuneadvisor("open", str(missing)), str(missing), "no such file")


@pytest.mark.parametrize("args", [["--headless", "--"], ["--headless", "--duration", "1", "--"]])
def test_watch_with_nothing_after_the_dashes_is_a_missing_command(args: list[str]) -> None:
    one_line_exit_2(tuneadvisor("watch", *args), "watch: no command after --")
