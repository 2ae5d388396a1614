"""`tuneadvisor apply` and its files: where it writes, what it never touches, and that a
bad input or a failed write leaves nothing behind."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TUTORIAL_SEFF
from tuneadvisor.cli import main
from tuneadvisor.errors import InputError
from tuneadvisor.files import backup_path, write_atomic
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.workspace.apply import tuned_name

JOB = """\
#!/bin/bash
#SBATCH --job-name=mnist
#SBATCH --cpus-per-task=1        # cores
#SBATCH --mem=8G
#SBATCH --gres=gpu:1

python train.py
"""

TRAIN = """\
from torch.utils.data import DataLoader

loader = DataLoader(dataset, batch_size=64, num_workers=1, pin_memory=True)
for data, target in loader:
    pass
"""

# One core, busy: under-requested-cores asks for max(4, 2 x 1) = 4 cores. 1.31 GB of 8 GB:
# over-requested-memory asks for 2G.
SEFF = TUTORIAL_SEFF.read_text()


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "job.sbatch").write_text(JOB)
    (folder / "train.py").write_text(TRAIN)
    (folder / "seff.txt").write_text(SEFF)
    return folder


def apply(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["apply", *args])
    out, err = capsys.readouterr()
    return code, out, err


def listing(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def assert_one_line_error(code: int, out: str, err: str, *needles: str) -> None:
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert "wrote" not in out


def test_tuned_name() -> None:
    assert tuned_name(Path("d/job.sbatch")) == Path("d/job.tuned.sbatch")
    assert tuned_name(Path("run")) == Path("run.tuned")
    assert tuned_name(Path("job.slurm.sh")) == Path("job.slurm.tuned.sh")


def test_default_output_beside_the_job(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = listing(run_dir)
    code, out, err = apply(
        capsys, "--job", str(run_dir / "job.sbatch"), "--seff", str(run_dir / "seff.txt")
    )
    assert code == 0, err
    after = listing(run_dir)
    assert set(after) - set(before) == {"job.tuned.sbatch", "train.py.tuneadvisor.patch"}
    for name, data in before.items():
        assert after[name] == data, f"{name} changed"
    directives = JobScript.parse(after["job.tuned.sbatch"]).directives()
    assert directives["cpus-per-task"] == "4"
    # 1.31 GB measured with 1 worker; 3 workers after: (1341 + 2 x 512 MiB) x 1.2 -> 3G
    assert directives["mem"] == "3G"
    assert f"wrote {run_dir / 'job.tuned.sbatch'}" in out


def test_job_without_suffix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "run").write_text(JOB)
    (tmp_path / "seff.txt").write_text(SEFF)
    code, _, err = apply(
        capsys, "--job", str(tmp_path / "run"), "--seff", str(tmp_path / "seff.txt")
    )
    assert code == 0, err
    assert (tmp_path / "run.tuned").is_file()
    assert (tmp_path / "run").read_text() == JOB


def test_output_option(run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "next.sbatch"
    before = listing(run_dir)
    code, _, err = apply(
        capsys,
        "--job",
        str(run_dir / "job.sbatch"),
        "--seff",
        str(run_dir / "seff.txt"),
        "-o",
        str(target),
    )
    assert code == 0, err
    assert listing(run_dir) == before  # nothing written beside the input
    assert sorted(listing(out_dir)) == ["next.sbatch", "train.py.tuneadvisor.patch"]
    assert JobScript.parse(target.read_bytes()).directives()["cpus-per-task"] == "4"


def test_in_place_keeps_a_backup(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = run_dir / "job.sbatch"
    code, out, err = apply(
        capsys, "--job", str(job), "--seff", str(run_dir / "seff.txt"), "--in-place"
    )
    assert code == 0, err
    assert (run_dir / "job.sbatch.bak").read_text() == JOB
    assert JobScript.parse(job.read_bytes()).directives()["cpus-per-task"] == "4"
    assert not (run_dir / "job.tuned.sbatch").exists()
    assert f"backup: {run_dir / 'job.sbatch.bak'}" in out


@pytest.mark.parametrize("command", ["apply", "report"])
def test_the_job_script_is_read_once(
    run_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """One command reads the job file once: the backup of --in-place holds the bytes the
    advice was computed from, not a second read of a file that may have changed since."""
    job = run_dir / "job.sbatch"
    reads: list[int] = []
    real_open = os.open

    def counting_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(path).resolve() == job.resolve() and flags & os.O_ACCMODE == os.O_RDONLY:
            reads.append(flags)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    extra = ["--in-place"] if command == "apply" else []
    code = main([command, "--job", str(job), "--seff", str(run_dir / "seff.txt"), *extra])
    assert code == 0, capsys.readouterr().err
    assert len(reads) == 1
    if command == "apply":
        assert (run_dir / "job.sbatch.bak").read_text() == JOB


def test_in_place_never_overwrites_an_earlier_backup(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = run_dir / "job.sbatch"
    (run_dir / "job.sbatch.bak").write_text("an older backup\n")
    code, _, err = apply(
        capsys, "--job", str(job), "--seff", str(run_dir / "seff.txt"), "--in-place"
    )
    assert code == 0, err
    assert (run_dir / "job.sbatch.bak").read_text() == "an older backup\n"
    assert (run_dir / "job.sbatch.bak.1").read_text() == JOB
    assert backup_path(job) == run_dir / "job.sbatch.bak.2"


def test_in_place_with_nothing_to_change_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --cpus-per-task=4\npython train.py\n")
    code, out, err = apply(capsys, "--job", str(job), "--in-place")
    assert code == 0, err
    assert "nothing to change" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.sbatch"]


@pytest.mark.parametrize("spelling", ["same", "dotted", "relative"])
def test_refuses_output_equal_to_input(
    spelling: str,
    run_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    job = run_dir / "job.sbatch"
    monkeypatch.chdir(run_dir)
    out = {
        "same": str(job),
        "dotted": str(run_dir / "." / ".." / "run" / "job.sbatch"),
        "relative": "job.sbatch",
    }[spelling]
    before = listing(run_dir)
    code, stdout, err = apply(capsys, "--job", str(job), "--seff", "seff.txt", "-o", out)
    assert_one_line_error(code, stdout, err, "--in-place", out)
    assert listing(run_dir) == before


def test_refuses_output_and_in_place_together(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = listing(run_dir)
    code, out, err = apply(
        capsys, "--job", str(run_dir / "job.sbatch"), "-o", str(run_dir / "x"), "--in-place"
    )
    assert_one_line_error(code, out, err, "--in-place")
    assert listing(run_dir) == before


def test_apply_needs_a_job(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = apply(capsys, "--seff", str(run_dir / "seff.txt"))
    assert_one_line_error(code, out, err, "--job")


@pytest.mark.parametrize("in_place", [False, True])
def test_keeps_the_executable_bit(
    in_place: bool, run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = run_dir / "job.sbatch"
    job.chmod(0o750)
    args = ["--job", str(job), "--seff", str(run_dir / "seff.txt")]
    code, _, err = apply(capsys, *args, *(["--in-place"] if in_place else []))
    assert code == 0, err
    written = job if in_place else run_dir / "job.tuned.sbatch"
    assert stat.S_IMODE(written.stat().st_mode) == 0o750
    assert JobScript.parse(written.read_bytes()).directives()["cpus-per-task"] == "4"
    patch = run_dir / "train.py.tuneadvisor.patch"
    assert not stat.S_IMODE(patch.stat().st_mode) & 0o111  # a patch is not a program


BAD_INPUTS = {
    "seff": ("--seff", "seff.txt", "Job not found\n"),
    "seff-garbage": ("--seff", "seff.txt", "this is not seff output at all\n"),
    "sacct": ("--sacct", "sacct.json", '{"jobs": [{"job_id": "x"'),
    "metrics": ("--metrics", "gpu.csv", "timestamp, index, utilization.gpu [%]\nfoo, bar\n"),
    "site": ("--site", "site.toml", "[partitions.gpu]\ncores = 64\nsockets = 2\n"),
    "script": ("--script", "train.py", "\udcff"),  # not UTF-8
    "profile": ("", "run.lprof", "\x80\x05garbage"),
}


@pytest.mark.parametrize("kind", list(BAD_INPUTS))
def test_a_bad_input_writes_nothing_at_all(
    kind: str, run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    option, name, content = BAD_INPUTS[kind]
    bad = run_dir / name
    bad.write_bytes(content.encode("utf-8", "surrogateescape"))
    args = ["--job", str(run_dir / "job.sbatch")]
    if kind != "seff" and kind != "seff-garbage":
        args += ["--seff", str(run_dir / "seff.txt")]
    args += [option, str(bad)] if option else [str(bad)]
    before = listing(run_dir)
    for extra in ([], ["--in-place"]):
        code, out, err = apply(capsys, *args, *extra)
        assert_one_line_error(code, out, err, str(bad))
        assert out == ""
        assert listing(run_dir) == before


def test_a_failed_write_leaves_no_temporary_file(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """-o naming a directory: the rename fails, the temporary file is removed."""
    target = run_dir / "out.sbatch"
    target.mkdir()
    before = listing(run_dir)
    code, _, err = apply(
        capsys,
        "--job",
        str(run_dir / "job.sbatch"),
        "--seff",
        str(run_dir / "seff.txt"),
        "-o",
        str(target),
    )
    assert code == 2
    assert len(err.splitlines()) == 1 and str(target) in err
    assert "Traceback" not in err
    assert listing(run_dir) == before
    assert not [p for p in run_dir.iterdir() if p.name.endswith(".tmp")]


def test_output_in_a_missing_folder(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = run_dir / "no-such-dir" / "out.sbatch"
    code, _, err = apply(capsys, "--job", str(run_dir / "job.sbatch"), "-o", str(target))
    assert code == 2
    assert len(err.splitlines()) == 1 and str(target) in err


def test_successful_apply_leaves_no_temporary_file(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = apply(
        capsys, "--job", str(run_dir / "job.sbatch"), "--seff", str(run_dir / "seff.txt")
    )
    assert code == 0, err
    hidden = [p.name for p in run_dir.iterdir() if p.name.startswith(".")]
    assert hidden == []


# --------------------------------------------------------------------------- atomic writes


def test_write_atomic_replaces_and_takes_the_mode(tmp_path: Path) -> None:
    model = tmp_path / "model.sh"
    model.write_text("x")
    model.chmod(0o711)
    target = tmp_path / "target"
    target.write_text("old")
    write_atomic(target, b"new", mode_from=model)
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o711
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.sh", "target"]


def test_write_atomic_without_a_model_is_not_executable(tmp_path: Path) -> None:
    target = tmp_path / "patch"
    write_atomic(target, b"diff")
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_write_atomic_keeps_the_old_file_when_the_rename_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "job.sbatch"
    target.write_text("the original\n")

    def failing_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(InputError) as caught:
        write_atomic(target, b"half a file")
    assert str(target) in caught.value.one_line()
    assert target.read_text() == "the original\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.sbatch"]


def test_write_atomic_syncs_before_the_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append("fsync")
        real_fsync(fd)

    def replace(src: str, dst: str) -> None:
        calls.append("replace")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    write_atomic(tmp_path / "f", b"data")
    assert calls == ["fsync", "replace"]


def test_backup_path_numbers(tmp_path: Path) -> None:
    job = tmp_path / "job.sbatch"
    assert backup_path(job) == tmp_path / "job.sbatch.bak"
    (tmp_path / "job.sbatch.bak").write_text("")
    (tmp_path / "job.sbatch.bak.1").write_text("")
    assert backup_path(job) == tmp_path / "job.sbatch.bak.2"


@pytest.mark.parametrize("victim", ["seff.txt", "train.py"])
def test_refuses_to_write_over_another_input(
    victim: str, run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """-o naming the seff file, or the training script the launch line runs: both are
    inputs of the run, and writing there would lose them."""
    before = listing(run_dir)
    code, out, err = apply(
        capsys,
        "--job",
        str(run_dir / "job.sbatch"),
        "--seff",
        str(run_dir / "seff.txt"),
        "-o",
        str(run_dir / victim),
    )
    assert_one_line_error(code, out, err, str(run_dir / victim), "input")
    assert listing(run_dir) == before


def test_memory_per_cpu_is_replaced_not_doubled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """sbatch refuses --mem next to --mem-per-cpu: the tuned script has only --mem."""
    job = tmp_path / "job.sbatch"
    job.write_text(JOB.replace("#SBATCH --mem=8G\n", "#SBATCH --mem-per-cpu=8G\n"))
    (tmp_path / "seff.txt").write_text(SEFF)
    code, out, err = apply(capsys, "--job", str(job), "--seff", str(tmp_path / "seff.txt"))
    assert code == 0, err
    tuned = JobScript.parse((tmp_path / "job.tuned.sbatch").read_bytes())
    assert tuned.problems == ()
    # No training script here: the workers of the run are unknown, all 3 are counted.
    assert tuned.directives()["mem"] == "4G"
    assert "mem-per-cpu" not in tuned.directives()
    assert "--mem-per-cpu removed" in out
