"""Crafted and damaged inputs through the real command line (issue 13): each class on a
minimal reproducer gives one line naming the file and exit status 2, within 5 s and
500 MB; and `apply` keeps the user's file whole and theirs (links, owner, mode, byte-order
marks, CR-only lines, a write that fails part-way)."""

from __future__ import annotations

import os
import resource
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.unit.test_apply import JOB, SEFF

TUNEADVISOR = [sys.executable, "-m", "tuneadvisor"]
# A hang fails a case at the subprocess's timeout; how long each input takes is measured in
# bench/fuzz.py (a timed assertion would fail on a loaded machine, not on a slow parser).
MEMORY_BOUND_MIB = 500
DEEP_JSON = "[" * 5000 + "]" * 5000
HUGE = "9" * 5000
RECORDING_HEAD = (
    '{"format":"tuneadvisor-watch","version":1,"started":"2026-01-01T00:00:00+0000",'
    '"host":"h","interval_s":1,"target":"pid 1","gpu_no_data":null}\n'
)


def _cli(
    cwd: Path, *argv: str, limit: Callable[[], None] | None = None, timeout: float = 30
) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    done = subprocess.run(
        [*TUNEADVISOR, *argv], capture_output=True, text=True, cwd=cwd, timeout=timeout,
        check=False, preexec_fn=limit,
    )  # fmt: skip
    return done, time.monotonic() - start


def _bounded_memory() -> None:
    """The child may not grow past the bound: a runaway allocation fails instead of
    swapping the machine (and shows as a MemoryError, not a passing test)."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BOUND_MIB << 20, MEMORY_BOUND_MIB << 20))


def _rule(name: str, body: str) -> dict[str, str]:
    return {f"rules/{name}.toml": body}


# name -> (files to write, the command line, what the one line must say)
CASES: dict[str, tuple[dict[str, str], list[str], str]] = {
    "sacct --json nested 5000 deep": (
        {"s.json": '{"jobs": ' + DEEP_JSON + "}"}, ["report", "--sacct", "s.json"], "nested"
    ),
    "sacct --json with a 5000-digit integer": (
        {"s.json": '{"jobs": [' + HUGE + "]}"}, ["report", "--sacct", "s.json"], "digits"
    ),
    "a run record nested 5000 deep": (
        {"r/run.json": DEEP_JSON}, ["compare", "r", "r"], "nested"
    ),
    "a run record with fields of the wrong type": (
        {"r/run.json": '{"id": 5, "settings": 7, "paths": "x"}'}, ["compare", "r", "r"],
        "run record",
    ),
    "a report nested 5000 deep": (
        {"rep.json": DEEP_JSON}, ["run", "mnist_single", "--from", "rep.json"], "nested"
    ),
    "a recording whose gpus is a number": (
        {"m.jsonl": RECORDING_HEAD + '{"t":0,"gpus":5}\n'}, ["report", "--metrics", "m.jsonl"],
        "line 2",
    ),
    "a recording with an object for a UUID and a string utilisation": (
        {"m.jsonl": RECORDING_HEAD + '{"t":0,"gpus":[{"index":0,"uuid":{},"util_pct":"hi"}]}\n'},
        ["report", "--metrics", "m.jsonl"], "uuid",
    ),
    "a rule file nested 3000 deep": (
        _rule("deep", "a = " + "[" * 3000 + "]" * 3000 + "\n"), ["rules", "check", "rules"],
        "nested",
    ),
    "a rule file of 200 KB of dotted keys": (
        _rule("dotted", "a" + ".a" * 100_000 + " = 1\n"), ["rules", "check", "rules"],
        "dotted key",
    ),
    "a rule file with a 5000-digit integer": (
        _rule("big", "id = " + HUGE + "\n"), ["rules", "check", "rules"], "digits"
    ),
    "a rule expression formatting 2 GB": (
        _rule("fmt", 'id = "fmt"\ntitle = "t"\nseverity = "info"\nrationale = "r"\n'
                     "when = \"'%2147483000s' % 1 == 'x'\"\n"),
        ["rules", "check", "rules"], "% takes numbers",
    ),
    "a site file nested 3000 deep": (
        {"site.toml": "a = " + "[" * 3000 + "]" * 3000 + "\n", "job.sbatch": JOB},
        ["report", "--job", "job.sbatch", "--site", "site.toml"], "nested",
    ),
    "seff with a 5000-digit core count": (
        {"seff.txt": SEFF.replace("Cores: 1", "Cores: " + HUGE)}, ["report", "--seff", "seff.txt"],
        "digits",
    ),
    "a training script with a 5000-digit num_workers": (
        {"job.sbatch": JOB, "train.py": f"from torch.utils.data import DataLoader\n"
         f"loader = DataLoader(ds, num_workers={HUGE})\n"},
        ["report", "--job", "job.sbatch", "--script", "train.py"], "digits",
    ),
    "an nvidia-smi CSV field over the csv module's limit": (
        {"m.csv": 'timestamp, index, utilization.gpu [%]\n"' + "x" * 200_000 + '", 0, 5 %\n'},
        ["report", "--metrics", "m.csv"], "field limit",
    ),
    "/dev/zero as seff output": ({}, ["report", "--seff", "/dev/zero"], "not a regular file"),
    "a job script over the size bound": (
        {}, ["report", "--job", "big.sbatch"], "larger than",
    ),
    "a printed profile table over 4 MiB": (
        {"t.txt": "Timer unit: 1e-06 s\n\n" + "#" * (4 << 20)}, ["report", "t.txt"],
        "a printed table of more than 4 MiB",
    ),
    "a job script just over the job-script bound (256 KiB)": (
        {"j.sbatch": "#!/bin/bash\n#SBATCH -N1\n" + "echo " + "a" * (256 * 1024) + "\n"},
        ["report", "--job", "j.sbatch"], "job script is larger than 256 KiB",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_hostile_input_is_one_line_and_exit_2(
    case: tuple[dict[str, str], list[str], str], tmp_path: Path
) -> None:
    files, argv, said = case
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    if "big.sbatch" in argv:  # sparse: 65 MiB that take no disk
        with open(tmp_path / "big.sbatch", "wb") as big:
            big.truncate(65 << 20)
    done, _ = _cli(tmp_path, *argv, limit=_bounded_memory)
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("tuneadvisor: ") and said in line, line


def test_a_fifo_is_refused_at_once_as_an_input_a_rule_and_a_recording(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "rules").mkdir()
    os.mkfifo(tmp_path / "rules" / "x.toml")
    for argv in (
        ["report", "--sacct", "fifo"],
        ["rules", "check", "rules"],
        ["watch", "--pid", str(os.getpid()), "--headless", "--duration", "1", "--record", "fifo"],
    ):
        done, _ = _cli(tmp_path, *argv, timeout=20)
        assert done.returncode == 2 and "not a regular file" in done.stderr, (argv, done.stderr)


def test_a_20_digit_pid_is_a_usage_error(tmp_path: Path) -> None:
    done, _ = _cli(tmp_path, "watch", "--pid", "9" * 20, "--headless")
    assert done.returncode == 2 and "not a process id" in done.stderr


def test_a_300_character_script_name_on_the_launch_line_is_just_not_here(
    tmp_path: Path,
) -> None:
    name = "a" * 300 + ".py"  # longer than a file name may be: stat() says ENAMETOOLONG
    (tmp_path / "job.sbatch").write_text(JOB.replace("python train.py", f"python {name}"))
    done, _ = _cli(tmp_path, "report", "--job", "job.sbatch")
    assert done.returncode == 0, done.stderr
    assert "which is not here" in done.stdout


def test_an_unreadable_home_config_is_one_line(tmp_path: Path) -> None:
    """~/.config is there but may not be looked into: one line, not a PermissionError.
    As root the command runs as nobody (root reads every folder)."""
    config = tmp_path / "config"
    (config / "tuneadvisor").mkdir(parents=True)
    tmp_path.chmod(0o755)
    config.chmod(0)
    as_nobody = (lambda: os.setuid(65534)) if os.geteuid() == 0 else None
    env = {**os.environ, "XDG_CONFIG_HOME": str(config), "HOME": str(tmp_path)}
    try:
        done = subprocess.run(
            [*TUNEADVISOR, "rules", "list"], capture_output=True, text=True, env=env, timeout=30,
            check=False, cwd="/", preexec_fn=as_nobody,
        )  # fmt: skip
    except PermissionError:
        pytest.skip("nobody may not run this interpreter (test_files covers the check)")
    finally:
        config.chmod(0o755)
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert str(config) in line and "permission denied" in line


# --------------------------------------------------------------------------- apply


@pytest.fixture
def job_dir(tmp_path: Path) -> Path:
    (tmp_path / "job.sbatch").write_text(JOB)
    (tmp_path / "seff.txt").write_text(SEFF)
    return tmp_path


def _apply_in_place(
    folder: Path, job: str = "job.sbatch", limit: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    done, _ = _cli(folder, "apply", "--job", job, "--seff", "seff.txt", "--in-place", limit=limit)
    return done


def test_in_place_on_a_link_edits_its_target_and_keeps_the_link(job_dir: Path) -> None:
    real = job_dir / "real"
    real.mkdir()
    (job_dir / "job.sbatch").rename(real / "job.sbatch")
    (job_dir / "job.sbatch").symlink_to(real / "job.sbatch")
    done = _apply_in_place(job_dir)
    assert done.returncode == 0, done.stderr
    assert (job_dir / "job.sbatch").is_symlink()
    assert (real / "job.sbatch").read_text() != JOB  # the real script was tuned
    assert f"wrote {real / 'job.sbatch'}, the file the link job.sbatch points at" in done.stdout
    assert (job_dir / "job.sbatch.bak").read_text() == JOB


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_in_place_as_root_keeps_the_users_owner_group_and_mode(job_dir: Path) -> None:
    job = job_dir / "job.sbatch"
    os.chown(job, 4321, 4322)
    job.chmod(0o750)
    done = _apply_in_place(job_dir)
    assert done.returncode == 0, done.stderr
    after = job.stat()
    assert (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == (4321, 4322, 0o750)
    assert job.read_text() != JOB


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"\xef\xbb\xbf" + JOB.encode(), "byte-order mark"),
        (JOB.replace("\n", "\r").encode(), "CR alone"),
    ],
    ids=["utf-8 BOM", "CR-only lines"],
)
def test_a_script_sbatch_would_misread_is_refused_and_left_alone(
    job_dir: Path, data: bytes, said: str
) -> None:
    (job_dir / "job.sbatch").write_bytes(data)
    done = _apply_in_place(job_dir)
    assert done.returncode == 2 and said in done.stderr
    assert (job_dir / "job.sbatch").read_bytes() == data
    assert sorted(p.name for p in job_dir.iterdir()) == ["job.sbatch", "seff.txt"]


def test_a_write_that_fails_part_way_leaves_the_original_byte_for_byte(job_dir: Path) -> None:
    """The file-size limit stands in for a full disk: the backup fits, the tuned script
    (a directive longer) is cut short by the kernel, as ENOSPC would cut it."""
    (job_dir / "job.sbatch").write_text(
        JOB.replace("#SBATCH --cpus-per-task=1        # cores\n", "")
    )
    original = (job_dir / "job.sbatch").read_bytes()
    cap = len(original)

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))

    done = _apply_in_place(job_dir, limit=limited)
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "job.sbatch: cannot write" in line and "left as it was" in line
    assert (job_dir / "job.sbatch").read_bytes() == original
    assert not [p.name for p in job_dir.iterdir() if p.name.endswith(".tmp")]
