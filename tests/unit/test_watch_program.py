"""The program `watch -- COMMAND` starts (real processes), the lines its output pane shows,
and the job output file a `--job` pane follows."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tuneadvisor.errors import InputError
from tuneadvisor.watch.output import FileTail, OutputLines, open_tail
from tuneadvisor.watch.program import Program, default_log, exit_status, start_program

TRAINER = Path(__file__).resolve().parents[1] / "fixtures" / "watch" / "trainer.py"


def until(done, what: str, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


# ---------------------------------------------------------------------- the pane's lines


def test_lines_as_a_terminal_leaves_them() -> None:
    out = OutputLines()
    out.feed("\x1b[1;32mgreen\x1b[0m and plain\n")
    out.feed("epoch 1:  10%|#   |\r")
    assert out.since(0).partial == "epoch 1:  10%|#   |"  # shown until redrawn
    out.feed("epoch 1:  50%|##  |")
    new = out.since(0)
    assert new.lines == ("green and plain",) and new.partial == "epoch 1:  50%|##  |"
    out.feed("\repoch 1: 100%|####|\r\nwindows line\r\n\ttab\x07\n")
    new = out.since(new.count)
    assert new.lines == ("epoch 1: 100%|####|", "windows line", "        tab")
    assert (new.count, new.partial, new.skipped) == (4, "", 0)


def test_bytes_split_inside_a_character_and_bad_bytes() -> None:
    out = OutputLines()
    data = "naïve\n".encode()
    out.feed_bytes(data[:3])
    out.feed_bytes(data[3:] + b"\xff\n")
    assert out.since(0).lines == ("naïve", "\ufffd")


def test_memory_is_bounded_and_the_gap_is_counted() -> None:
    out = OutputLines(keep=3)
    out.feed("".join(f"line {i}\n" for i in range(10)))
    new = out.since(2)
    assert new.lines == ("line 7", "line 8", "line 9") and new.skipped == 5
    out.feed("half")
    assert out.tail(2) == ["line 9", "half"]
    assert out.tail(5) == ["line 7", "line 8", "line 9", "half"]


def test_a_job_output_file_is_followed_from_its_last_lines(tmp_path: Path) -> None:
    path = tmp_path / "slurm-1.out"
    path.write_text("".join(f"old {i}\n" for i in range(100)))
    tail = FileTail(str(path), start_bytes=20)
    tail.read_new()
    assert tail.output.since(0).lines[0].startswith("old 9")  # from a whole line on
    with path.open("a") as f:
        f.write("new line\n")
    tail.read_new()
    assert tail.output.tail(1) == ["new line"]
    path.write_text("cut\n")  # the file was truncated: read again from its start
    tail.read_new()
    assert tail.output.tail(1) == ["cut"]
    tail.close()
    assert open_tail(str(tmp_path / "missing.out")) is None and open_tail(None) is None


# ---------------------------------------------------------------------- the program


def test_default_log_is_beside_the_recording() -> None:
    assert default_log("runs/watch.jsonl") == "runs/watch.log"
    assert default_log("runs/watch.log") == "runs/watch.log.out"
    assert default_log(None) is None
    assert exit_status(-15) == 143 and exit_status(3) == 3


def test_screen_mode_gives_a_terminal_copies_to_the_log_and_passes_the_status(
    tmp_path: Path,
) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(b"an earlier run\n")
    program = start_program([sys.executable, str(TRAINER), "3", "7"], screen=True,
                            log_path=str(log), columns=60)  # fmt: skip
    assert program.wait(60) == 7 and program.describe_end() == "exit status 7"
    assert program.drained(10)
    program.close()
    text = log.read_text()
    assert text.startswith("an earlier run\n")  # appended, as --record is
    assert "trainer: stdout is a terminal: True" in text  # a pty: lines flush as printed
    assert "warning: a line on stderr" in text and text.endswith("training done\n")
    assert "\r" not in text  # the pty passes "\n" as written
    assert program.output.tail(1) == ["training done"]
    assert program.wall_s > 0.3 and not program.running


def test_sigint_reaches_the_whole_process_group(tmp_path: Path) -> None:
    """A shell running the trainer: Ctrl-C on the screen reaches the trainer, not only the
    shell (as in a terminal, the shell ends too)."""
    program = Program(["sh", "-c", f"{sys.executable} {TRAINER} 0; echo shell saw $?"],
                      capture="pty", own_session=True)  # fmt: skip
    until(lambda: "step 2" in "\n".join(program.output.tail(3)), "two steps")
    assert os.getpgid(program.pid) == program.pid != os.getpgid(0)
    assert program.interrupt()
    assert program.wait(30) == 130
    assert program.describe_end() == "killed by SIGINT (status 130)"
    assert program.drained(10)
    assert program.output.tail(1)[0].startswith("SIGINT at step")  # the trainer's own words
    assert not program.interrupt()  # ended: nothing is sent
    program.close()


def test_killed_by_a_signal_reads_as_a_shell_says_it() -> None:
    program = Program([sys.executable, str(TRAINER), "0"], capture="pipe", own_session=True)
    until(lambda: program.output.count >= 3, "some steps")
    program.terminate()
    assert program.wait(30) == 143
    assert program.describe_end() == "killed by SIGTERM (status 143)"
    program.close()


def test_left_running_its_output_still_goes_to_the_log(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    program = start_program([sys.executable, str(TRAINER), "0"], screen=True,
                            log_path=str(log))  # fmt: skip
    try:
        until(lambda: program.output.count >= 2, "the first lines")
        program.detach()  # watch exits; a drainer of its own reads on
        assert program.left_running
        steps = log.read_text().count("step ")
        until(lambda: log.read_text().count("step ") > steps + 3, "more steps in the log")
    finally:
        os.killpg(program.pid, signal.SIGKILL)
        program.wait(30)


def test_a_log_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cannot write the program's log"):
        start_program(["true"], screen=True, log_path=str(tmp_path / "no" / "run.log"))


def test_a_jobs_pane_follows_its_stdout_when_this_node_can_read_it(tmp_path: Path) -> None:
    from tuneadvisor.watch.job_target import JobPlan
    from tuneadvisor.watch.start import _job_output, _Target

    out = tmp_path / "slurm-77.out"
    out.write_text("epoch 1 done\n")
    plan = JobPlan("77", "slurm", "job 77", std_out=str(out))
    run, tail = _job_output(_Target("job 77", None, "77", plan=plan))
    assert tail is not None and run.output is tail.output
    assert run.output_title == f"The job's output: {out}"
    tail.read_new()
    assert run.output.tail(1) == ["epoch 1 done"]
    tail.close()
    hidden = JobPlan("77", "slurm", "job 77", std_out="/nowhere/slurm-77.out")
    run, tail = _job_output(_Target("job 77", None, "77", plan=hidden))
    assert tail is None and run.output is None
    assert run.output_missing == "the job's output: /nowhere/slurm-77.out is not readable here"
