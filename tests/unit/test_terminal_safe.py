"""Control characters from the inputs never reach the terminal (issue 23, point 11).

A job script whose job name and an option hold ``ESC ] 0;...`` (set the window title) and
``ESC [ 2J`` (clear the screen) goes through `report` (text, markdown), `apply` (the diff
shown before --submit), `doctor` and the one error line: none prints a control character,
each shows it visibly; the JSON report and the written script keep the exact value.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuneadvisor import cli
from tuneadvisor.errors import InputError
from tuneadvisor.metrics.snapshot import Snapshot
from tuneadvisor.present.terminal_safe import one_line_safe, terminal_safe
from tuneadvisor.workspace.site_checks.model import Check

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mnist"
C0_C1 = re.compile(r"[\x00-\x1f\x7f-\x9f]")
CONTROL_BUT_LAYOUT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J"


@given(st.text())
def test_no_control_character_but_newline_and_tab_survives(text: str) -> None:
    safe = terminal_safe(text)
    assert not CONTROL_BUT_LAYOUT.search(safe)
    assert safe.count("\n") == text.count("\n") and safe.count("\t") == text.count("\t")
    assert not C0_C1.search(one_line_safe(text))


@given(st.text(alphabet=st.characters(exclude_categories=["Cc"])))
def test_text_without_controls_is_left_as_it_is(text: str) -> None:
    assert terminal_safe(text) == text == one_line_safe(text)


@given(st.lists(st.sampled_from(["a", "\\", "\x1b", "\x07", "\x9b", "\r", "x1b"]), max_size=12))
def test_each_control_is_shown_as_its_code(parts: list[str]) -> None:
    text = "".join(parts)
    expected = "".join(f"\\x{ord(p):02x}" if len(p) == 1 and C0_C1.match(p) else p for p in parts)
    assert one_line_safe(text) == expected


def hostile_example(tmp_path: Path) -> Path:
    """The bundled example, its job named with a title-setting sequence and an option (the
    output file) holding a screen clear; the profile and training script beside it."""
    for name in ("24752610.lprof", "mnist_classify.py"):
        shutil.copy2(EXAMPLE / name, tmp_path / name)
    text = (EXAMPLE / "mnist.sbatch").read_text()
    text = text.replace("--job-name=mnist", f"--job-name=mnist{TITLE}", 1)
    option = f"#SBATCH --output=log{CLEAR}%j.out\n"
    text = text.replace("#SBATCH --nodes=1", option + "#SBATCH --nodes=1")
    job = tmp_path / "mnist.sbatch"
    job.write_text(text)
    return job


def test_the_reports_show_the_sequences_and_run_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = hostile_example(tmp_path)
    profile = str(tmp_path / "24752610.lprof")
    for fmt in ("text", "markdown"):
        assert cli.main(["report", profile, "--job", str(job), "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert not CONTROL_BUT_LAYOUT.search(out), fmt
        assert "--output=log\\x1b[2J%j.out" in out, fmt  # in the diff's context, visibly
    assert cli.main(["report", profile, "--job", str(job), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["job"]["directives"]["job-name"] == f"mnist{TITLE}"  # the exact value
    assert report["job"]["directives"]["output"] == f"log{CLEAR}%j.out"


def test_apply_shows_a_diff_that_hides_nothing_and_writes_the_exact_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = hostile_example(tmp_path)
    out = tmp_path / "tuned.sbatch"
    args = ["apply", str(tmp_path / "24752610.lprof"), "--job", str(job), "-o", str(out)]
    assert cli.main(args) == 0
    printed = capsys.readouterr().out
    assert not CONTROL_BUT_LAYOUT.search(printed)
    assert re.search(r"^[-+]#SBATCH --cpus-per-task=", printed, re.M)  # the diff is shown
    written = out.read_text()  # the script keeps what it had, exactly
    assert f"--output=log{CLEAR}%j.out" in written and f"--job-name=mnist{TITLE}" in written


def test_doctor_prints_what_it_found_visibly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # what doctor reports comes from outside: an interpreter's output, a path, nvidia-smi's
    found = Check("torch.import", "failed", f"{CLEAR}ImportError{TITLE}", fix=f"pip{CLEAR}")
    monkeypatch.setattr("tuneadvisor.workspace.site_checks.run_checks", lambda *a, **k: [found])
    assert cli.main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert not CONTROL_BUT_LAYOUT.search(out)
    assert "\\x1b[2JImportError\\x1b]0;pwned\\x07" in out


def test_the_error_line_is_one_line_without_controls(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(args: object) -> int:
        raise InputError(f"job{CLEAR}.sbatch", f"line 3: --time={TITLE}\rbad\tvalue")

    monkeypatch.setattr("tuneadvisor.commands.report.run", refuse)
    assert cli.main(["report", "x.lprof"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not C0_C1.search(err.rstrip("\n"))
    assert err.startswith("tuneadvisor: job\\x1b[2J.sbatch: line 3: --time=\\x1b]0;pwned\\x07")


def test_the_jobs_table_shows_a_job_name_visibly() -> None:
    from tuneadvisor.present.jobs_table import render_rows
    from tuneadvisor.workspace.jobs import JobRow

    row = JobRow("42", f"a{CLEAR}b", "COMPLETED", 60.0, 50.0, 20.0, None, 0)
    table = render_rows([row])
    assert not CONTROL_BUT_LAYOUT.search(table)
    assert "a\\x1b[2Jb" in table.splitlines()[1]


class _Rounds:
    """A sampler with nothing to sample: a round is its time."""

    roots_alive = True

    def __init__(self) -> None:
        self.t = 0.0

    def sample(self) -> Snapshot:
        self.t += 1.0
        return Snapshot(t=self.t)

    def close(self) -> None:
        pass


def test_the_watch_summary_shows_a_mark_visibly() -> None:
    """A mark's text (typed on the screen, or pasted) in the summary printed at the end."""
    from tuneadvisor.present.watch_summary import render_summary
    from tuneadvisor.watch.session import WatchSession
    from tuneadvisor.workspace.rule_files import load_rules, rule_dirs

    session = WatchSession(_Rounds(), load_rules(rule_dirs([])), interval_s=1.0, window_s=30)
    session.round()
    session.mark(f"warm-up{TITLE}done")
    session.round()
    summary = render_summary(session, "pid 1", None)
    assert "Mark at" in summary
    assert not CONTROL_BUT_LAYOUT.search(summary)
    assert "warm-up\\x1b]0;pwned\\x07done" in summary
