"""No value from a report, an option or a training script becomes code in a job script:
`run --submit` against a stand-in sbatch that keeps the script it was given, each
injection form refused with one line (exit 2, sbatch never called) or written as one
quoted word that the job's shell does not run; and `apply` with a training script whose
option name holds a command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.report_schema import minimal_report
from tests.unit.test_advice_acceptance import (
    SEFF_ONE_CORE_BUSY,
    job_text,
    train_text,
    write_case,
)

TUNEADVISOR = [sys.executable, "-m", "tuneadvisor"]
PWNED = "pwned"  # the file each injected command would create in the test's folder


class Submit:
    """A folder with a fake sbatch (it copies the script it gets to ``submitted.sbatch``),
    a stand-in MNIST data set and `run --submit` through the real command line."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.bin = folder / "bin"
        self.bin.mkdir()
        sbatch = self.bin / "sbatch"
        kept = folder / "submitted.sbatch"
        sbatch.write_text(f'#!/bin/sh\nfor a; do last="$a"; done\ncp "$last" {kept}\necho 4242\n')
        sbatch.chmod(0o755)
        self.data = folder / "data"
        (self.data / "MNIST" / "raw").mkdir(parents=True)
        (self.data / "MNIST" / "raw" / "train-images-idx3-ubyte").write_bytes(b"")
        self.kept = kept

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PATH": f"{self.bin}:{os.environ['PATH']}"}
        env.pop("TUNEADVISOR_TORCH_PYTHON", None)
        return subprocess.run(
            [*TUNEADVISOR, "run", "mnist_single", "--data-dir", str(self.data), "--no-watch",
             "--runs", str(self.folder / "runs"), "--submit", *argv],
            capture_output=True, text=True, cwd=self.folder, env=env, timeout=30, check=False,
        )  # fmt: skip

    def report(self, plan: dict[str, Any], directives: dict[str, Any] | None = None) -> str:
        doc = minimal_report(directives or {}, plan)  # the schema's shape, hostile values
        path = self.folder / "report.json"
        path.write_text(json.dumps(doc))
        return str(path)


@pytest.fixture
def submit(tmp_path: Path) -> Submit:
    return Submit(tmp_path)


def _change(value: object, because: tuple[str, ...] = ("some-finding",)) -> dict[str, Any]:
    return {"value": value, "because": list(because)}


INJECTED_REPORTS = {
    "a worker count that is a command": {"script": {"num_workers": _change("$(touch pwned)")}},
    "a time with a newline and a command": {"sbatch": {"time": _change("1:00\ntouch pwned")}},
    "a memory size with a command": {"sbatch": {"mem": _change("1G;touch pwned")}},
    "an input cost that is a command": {"script": {"input_cost": _change("`touch pwned`")}},
    "a finding id with a newline": {
        "script": {"num_workers": _change(2, ("x\ntouch pwned",))},
    },
    "a 5000-digit core count": {"sbatch": {"cpus-per-task": _change("9" * 5000)}},
    "NaN workers": {"script": {"batch_size": _change(float("nan"))}},
}


@pytest.mark.parametrize("plan", INJECTED_REPORTS.values(), ids=INJECTED_REPORTS.keys())
def test_a_report_never_carries_code_into_the_job(submit: Submit, plan: dict[str, Any]) -> None:
    done = submit.run("--from", submit.report(plan))
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("tuneadvisor: ") and "report.json" in line
    assert not submit.kept.exists()  # sbatch never called
    assert not (submit.folder / PWNED).exists()


def test_directives_of_the_report_are_checked_too(submit: Submit) -> None:
    done = submit.run("--from", submit.report({}, {"time": "10\necho pwned > pwned"}))
    assert done.returncode == 2 and "--time" in done.stderr
    assert not submit.kept.exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["--input-cost", "$(id)"],
        ["--time", "1:00\ntouch pwned"],
        ["--mem", "$(touch pwned)"],
        ["--extra=--lr=1\ntouch pwned"],
        ["--cpus-per-task", "99999999"],
    ],
)
def test_options_never_carry_code_into_the_job(submit: Submit, argv: list[str]) -> None:
    done = submit.run(*argv)
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not submit.kept.exists()


def test_words_that_are_allowed_are_one_quoted_word_the_shell_does_not_run(
    submit: Submit,
) -> None:
    """--extra and --python take any word: written quoted, the job's shell passes them on
    as they are and runs nothing (the stand-in python echoes its arguments)."""
    echo = submit.folder / "echo-args"
    echo.write_text('#!/bin/sh\nfor a; do printf "[%s]\\n" "$a"; done\n')
    echo.chmod(0o755)
    done = submit.run("--extra=$(touch pwned)", "--extra=`touch pwned`;x", "--python", str(echo))
    assert done.returncode == 0, done.stderr
    job = submit.kept.read_text()
    ran = subprocess.run(
        ["bash", str(submit.kept)], capture_output=True, text=True, timeout=10, check=False,
        cwd=submit.folder, env={"PATH": os.environ["PATH"], "HOME": str(submit.folder)},
    )  # fmt: skip
    assert ran.returncode == 0, job + ran.stderr
    assert "[$(touch pwned)]" in ran.stdout and "[`touch pwned`;x]" in ran.stdout
    assert not (submit.folder / PWNED).exists()
    assert not list(Path(json.loads(_record(submit))["paths"]["dir"]).glob(PWNED))


def _record(submit: Submit) -> str:
    (record,) = (submit.folder / "runs").glob("*/run.json")
    return record.read_text()


def test_an_option_name_from_the_training_script_is_not_written_when_it_is_no_name(
    tmp_path: Path,
) -> None:
    """argparse takes any string as an option name; one holding a newline would put a
    command on the next line of the job script. apply leaves the launch line alone and
    says why."""
    train = train_text("num_workers=args.num_workers, pin_memory=True").replace(
        'parser.add_argument("--num-workers", type=int, default=1)',
        'parser.add_argument("--num-workers\\ntouch pwned", dest="num_workers", type=int,'
        " default=1)",
    )
    job = job_text("--cpus-per-task=1", "--mem=8G", "--gres=gpu:1", launch="python train.py")
    write_case(tmp_path, {"job.sbatch": job, "train.py": train, "seff.txt": SEFF_ONE_CORE_BUSY})
    done = subprocess.run(
        [*TUNEADVISOR, "apply", "--job", "job.sbatch", "--seff", "seff.txt"],
        capture_output=True, text=True, cwd=tmp_path, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    tuned = (tmp_path / "job.tuned.sbatch").read_text()
    assert "touch pwned" not in tuned
    assert tuned.splitlines()[-1] == "python train.py"
    assert "is not an option name" in done.stdout
