"""Issue 20, point 4: typos sbatch does not refuse but silently ignores. A header line like a
misspelt #SBATCH (`#SBACTH --time=01:00:00`) is a comment to sbatch: it is a finding naming
the line, and `apply` writes it as #SBATCH only when that is unambiguous and revives nothing
the advice did not size. A value typo is repaired to the one valid value a letter away or
kept with a note: never deleted so that sbatch's default applies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_directive_conflicts import SEFF, apply_case, assert_sbatch_takes, run
from tuneadvisor.slurm.jobscript.misspelt import misspelt_magic
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.jobscript.syntax import IGNORED_DIRECTIVE

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "fixtures" / "realworld" / "jobscripts"


def job(*header: str) -> str:
    return "#!/bin/bash\n" + "".join(f"{line}\n" for line in header) + "\npython train.py\n"


def report(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    code, out, err = run(capsys, "report", "--format", "json", "--job", str(path))
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


# sbatch reads none of these (checked with sbatch 22.05.8 --test-only: the time limit is lost).
FIXABLE = ["#SBACTH", "#SBTACH", "#sbatch", "#Sbatch", "#SBATC", "#SBACH", "#SBAATCH"]
AMBIGUOUS = ["# SBATCH", " #SBATCH", "\t#SBATCH", "#SABTHC", "#  sbatch"]


@pytest.mark.parametrize("magic", FIXABLE + AMBIGUOUS)
def test_a_misspelt_sbatch_line_is_a_finding_naming_it(
    magic: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.sbatch"
    path.write_text(job("#SBATCH -c 2", f"{magic} --time=01:00:00"))
    parsed = JobScript.parse(path.read_bytes())
    assert "time" not in parsed.directives()  # what sbatch does: the limit is lost
    doc = report(capsys, path)
    [finding] = [f for f in doc["findings"] if f["id"] == "misspelt-sbatch-directive"]
    assert finding["evidence"]["where"] == f"line 3: {magic.strip()} --time=01:00:00"


@pytest.mark.parametrize(
    "line",
    [
        "##SBATCH --time=01:00:00",  # turned off on purpose
        "#SBATCH--time=01:00:00",  # sbatch reads it
        "# batch size 64",
        "# Set -e",
        "#SBATCH --time=01:00:00",
        "#SLURM --time=01:00:00",
        "# Batches of work: see --help",
    ],
)
def test_what_is_no_misspelt_sbatch_line(line: str) -> None:
    assert misspelt_magic(line) is None
    parsed = JobScript.parse(job(line))
    assert [p for p in parsed.problems if p.id == IGNORED_DIRECTIVE] == []


@pytest.mark.parametrize("magic", FIXABLE)
def test_apply_writes_an_unambiguous_one_as_sbatch(
    magic: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tuned, out = apply_case(capsys, tmp_path, job("#SBATCH -c 1", f"{magic} --time=01:00:00"))
    assert_sbatch_takes(tuned)
    assert tuned.directives()["time"] == "01:00:00"
    assert tuned.directives()["cpus-per-task"] == "4"
    assert f"line 3: {magic} is no #SBATCH: written as #SBATCH" in out
    assert [p.id for p in tuned.problems] == []


@pytest.mark.parametrize("magic", AMBIGUOUS)
def test_apply_keeps_an_ambiguous_one_and_says_so(
    magic: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tuned, out = apply_case(capsys, tmp_path, job("#SBATCH -c 1", f"{magic} --time=01:00:00"))
    assert f"{magic} --time=01:00:00\n" in tuned.render_text()
    assert "time" not in tuned.directives()
    assert f"line 3: {magic.strip()} --time=01:00:00 kept: sbatch ignores it" in out


@pytest.mark.parametrize(
    ("lines", "why"),
    [
        (("#SBATCH --time=02:00:00", "#SBACTH --time=01:00:00"), "--time (line 3) is set"),
        (("#SBATCH --mem=8G", "#SBACTH --mem-per-cpu=1G"), "--mem (line 3) conflicts"),
        (("#SBATCH --mem=8G", "#SBACTH --ntasks=64"), "--ntasks asks for resources"),
        (("#SBATCH --mem=8G", "#SBACTH --bogus=1"), "as #SBATCH, sbatch would refuse it"),
    ],
)
def test_apply_revives_no_line_that_would_change_what_was_sized(
    lines: tuple[str, str], why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tuned, out = apply_case(capsys, tmp_path, job("#SBATCH -c 1", *lines))
    assert_sbatch_takes(tuned)
    assert lines[1] + "\n" in tuned.render_text()  # still a comment to sbatch
    assert f"line 4: {lines[1]} kept as a comment to sbatch: {why}" in out


def test_a_revived_option_the_plan_sizes_gets_the_plans_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tuned, _ = apply_case(capsys, tmp_path, job("#SBACTH --cpus-per-task=1", "#SBATCH --mem=8G"))
    assert_sbatch_takes(tuned)
    assert tuned.directives()["cpus-per-task"] == "4"


# -- value typos


def test_a_value_typo_is_repaired_a_letter_away(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tuned, out = apply_case(capsys, tmp_path, job("#SBATCH -c 1", "#SBATCH --time=01:00:00x"))
    assert_sbatch_takes(tuned)
    assert tuned.directives()["time"] == "01:00:00"
    assert "line 3: --time 01:00:00x written as 01:00:00 (Invalid --time specification)" in out


@pytest.mark.parametrize(
    ("line", "name", "value"),
    [
        ("#SBATCH --time=1:00:00:00x", "time", "1:00:00:00x"),  # no valid value a letter away
        ("#SBATCH --nodes=2x", "nodes", "2x"),  # a resource: the advice did not size it
        ("#SBATCH --time=1O:00", "time", "1O:00"),  # 1:00 or 10:00? no key pressed twice
    ],
)
def test_a_value_typo_without_one_repair_is_kept_never_defaulted(
    line: str, name: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tuned, out = apply_case(capsys, tmp_path, job("#SBATCH -c 1", line))
    assert tuned.directives()[name] == value
    assert_sbatch_takes(tuned, kept=("invalid-directive",))
    assert f"line 3: --{name} {value} kept: sbatch refuses it" in out


def test_a_value_typo_the_plan_sizes_gets_the_plans_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tuned, _ = apply_case(capsys, tmp_path, job("#SBATCH -c 1", "#SBATCH --mem=8GG"))
    assert_sbatch_takes(tuned)
    assert tuned.directives()["mem"] == "4G"


def test_an_overridden_value_typo_goes_the_later_one_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = job("#SBATCH -c 1", "#SBATCH --nodes=2x", "#SBATCH -N 1")
    tuned, out = apply_case(capsys, tmp_path, text)
    assert_sbatch_takes(tuned)
    assert tuned.directives()["nodes"] == "1"
    assert "line 3: --nodes 2x removed (" in out
    assert "); a later --nodes sets it" in out


# -- real scripts


def test_real_script_sbtach_exclusive_is_reported_and_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """dpmbaltar/sispar's OpenMP job: `#SBTACH --exclusive` (a whole node it never got)."""
    real = REAL / "typos" / "dpmbaltar-sispar-src-tp02-test_omp.sh"
    doc = report(capsys, real)
    [finding] = [f for f in doc["findings"] if f["id"] == "misspelt-sbatch-directive"]
    assert finding["evidence"]["where"] == "line 5: #SBTACH --exclusive"
    tuned, out = apply_case(capsys, tmp_path, real.read_text())
    assert "#SBTACH --exclusive\n" in tuned.render_text()
    assert "line 5: #SBTACH --exclusive kept as a comment to sbatch: --exclusive asks" in out
    assert_sbatch_takes(tuned)


def test_real_script_sbtach_and_cpus_per_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JH-LEE-KR/NodesTest: `#SBTACH -e ...` (its error log went to the output file) and
    cores sized with --cpus-per-gpu=4 over 8 GPUs: the plan's cores go there too."""
    real = REAL / "jh-lee-kr-nodestest-template.sh"
    site = tmp_path / "site.toml"
    site.write_text('[partitions.admin]\ncores = 128\nmem = "1T"\ngpus = 8\n')
    tuned, out = apply_case(capsys, tmp_path / "run", real.read_text(), "--site", str(site))
    assert_sbatch_takes(tuned)
    directives = tuned.directives()
    assert directives["error"] == "%N_%x_%j.err"
    assert "cpus-per-task" not in directives
    assert int(directives["cpus-per-gpu"]) >= 4
    assert "line 12: #SBTACH is no #SBATCH: written as #SBATCH" in out
    assert SEFF  # the tutorial job's evidence: one busy core


def test_a_kept_typo_is_written_but_never_submitted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`apply --submit` of a script sbatch would refuse: written for the user to mend, one
    line and status 2, and sbatch is never asked (a fake one on PATH would leave a mark)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(f"#!/bin/sh\ntouch {tmp_path}/asked\necho 1\n")
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    (tmp_path / "job.sbatch").write_text(job("#SBATCH -c 1", "#SBATCH --time=1O:00"))
    (tmp_path / "seff.txt").write_text(SEFF)
    out_path = tmp_path / "job.tuned.sbatch"
    code, _, err = run(
        capsys, "apply", "--job", str(tmp_path / "job.sbatch"), "--seff",
        str(tmp_path / "seff.txt"), "-o", str(out_path), "--submit",
    )  # fmt: skip
    assert code == 2
    assert err.strip().count("\n") == 0 and "not submitted: sbatch would refuse it" in err
    assert str(out_path) in err and "line 3" in err
    assert "--time=1O:00" in out_path.read_text()  # written as the note says, kept
    assert not (tmp_path / "asked").exists()
