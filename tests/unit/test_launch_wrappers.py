"""A job that hands its command to a shell script of its own (``srun ./launch.sh ARGS``):
the script is read, with ``"$@"`` standing for ARGS, when it is beside the job script."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tuneadvisor.errors import InputError
from tuneadvisor.slurm.launch_line import search
from tuneadvisor.slurm.launch_line.choose import choose_launch
from tuneadvisor.slurm.launch_line.edit import append_words, set_option
from tuneadvisor.slurm.launch_line.search import find_launches, unfollowed_launch
from tuneadvisor.workspace.read_files import read_job

# The shape of Mila's accelerate example: options for the wrapper's launcher, then the
# command it launches, all passed on by "$@".
JOB = """#!/bin/bash
#SBATCH --gres=gpu:4
export MASTER_ADDR=$(hostname)
PORT=29500
srun ./launch.sh --main_process_ip $MASTER_ADDR python train.py --lr 1
"""
FORWARDING = """#!/bin/bash
exec accelerate launch --multi_gpu --num_processes 4 "$@"
"""


def project(tmp_path: Path, wrapper: str | None, job: str = JOB, name: str = "launch.sh") -> Path:
    (tmp_path / "train.py").write_text("print('training')\n")
    if wrapper is not None:
        (tmp_path / name).write_text(wrapper)
    path = tmp_path / "job.sh"
    path.write_text(job)
    return path


def test_the_wrapper_is_read_with_the_jobs_words_for_its_arguments(tmp_path: Path) -> None:
    job = read_job(str(project(tmp_path, FORWARDING)))
    launch = choose_launch(find_launches(job))
    assert launch is not None
    assert [launcher.name for launcher in launch.launchers] == [
        "srun",
        "./launch.sh",
        "accelerate launch",
    ]
    assert launch.launchers[2].options["--main_process_ip"] == "$(hostname)"  # exported
    assert (launch.script, launch.args) == ("train.py", ("--lr", "1"))
    assert launch.script_path == tmp_path / "train.py"
    assert launch.via == tmp_path / "launch.sh"
    assert (launch.line, launch.text.split()[1]) == (5, "./launch.sh")  # the job's own line


def test_an_edit_goes_on_the_jobs_line_when_the_wrapper_passes_words_on(tmp_path: Path) -> None:
    job = read_job(str(project(tmp_path, FORWARDING)))
    launch = choose_launch(find_launches(job))
    assert launch is not None and launch.forwards_words
    edited = set_option(job, launch, "--lr", "2")
    assert edited is not None
    assert edited.lines[4].text.endswith("python train.py --lr 2")
    appended = append_words(job, launch, "--num-workers 3")
    assert appended is not None
    assert appended.lines[4].text.endswith("--lr 1 --num-workers 3")


def test_no_edit_when_the_wrapper_drops_the_words(tmp_path: Path) -> None:
    keeps_own = "#!/bin/bash\nsrun python train.py --lr 1\n"
    job = read_job(str(project(tmp_path, keeps_own, job="#!/bin/bash\n./launch.sh --x 1\n")))
    launch = choose_launch(find_launches(job))
    assert launch is not None and launch.script == "train.py"
    assert not launch.forwards_words
    assert set_option(job, launch, "--lr", "2") is None
    assert append_words(job, launch, "--num-workers 3") is None


@pytest.mark.parametrize(
    ("run", "wrapper_name", "wrapper"),
    [
        ("bash run.sh $PORT\n", "run.sh", "#!/bin/bash\ntorchrun --master-port $1 train.py\n"),
        ("./run\n", "run", "#!/usr/bin/env bash\npython train.py\n"),
        ("sh ./scripts/go.bash\n", "scripts/go.bash", "python train.py\n"),
    ],
)
def test_scripts_run_by_bash_or_by_path_are_read(
    tmp_path: Path, run: str, wrapper_name: str, wrapper: str
) -> None:
    (tmp_path / "scripts").mkdir()
    job = "#!/bin/bash\nPORT=29500\n" + run
    launch = choose_launch(
        find_launches(read_job(str(project(tmp_path, wrapper, job, wrapper_name))))
    )
    assert launch is not None and launch.script == "train.py"
    if "$1" in wrapper:
        assert launch.launchers[-1].options["--master-port"] == "29500"


def test_only_exported_variables_reach_the_wrapper(tmp_path: Path) -> None:
    wrapper = "#!/bin/bash\npython $SCRIPT --port $PORT\n"
    job = "#!/bin/bash\nexport SCRIPT=train.py\nPORT=1\n./launch.sh\n"
    launch = choose_launch(find_launches(read_job(str(project(tmp_path, wrapper, job)))))
    assert launch is not None
    assert (launch.script, launch.args) == ("train.py", ("--port", "$PORT"))


def test_a_script_that_runs_itself_ends(tmp_path: Path) -> None:
    loop = "#!/bin/bash\n./launch.sh\n"
    job = read_job(str(project(tmp_path, loop, "#!/bin/bash\nsrun ./launch.sh\n")))
    assert choose_launch(find_launches(job)) is None
    unfollowed = unfollowed_launch(job)
    assert unfollowed is not None
    assert "the job's own shell script, starts no Python program" in unfollowed.reason


def test_a_wrapper_that_is_not_here_is_named_with_the_reason(tmp_path: Path) -> None:
    job = read_job(str(project(tmp_path, None)))
    assert choose_launch(find_launches(job)) is None
    unfollowed = unfollowed_launch(job)
    assert unfollowed is not None
    assert unfollowed.command.startswith("srun ./launch.sh --main_process_ip")
    assert unfollowed.reason == (
        "./launch.sh is the job's own script, and it is neither beside the job script nor "
        "in its working directory"
    )


def test_a_program_that_is_no_shell_script_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "tool").write_bytes(b"\x7fELF\x02\x01python train.py\n")
    job = read_job(str(project(tmp_path, None, "#!/bin/bash\nsrun ./tool --x\n")))
    assert choose_launch(find_launches(job)) is None


def test_an_unreadable_wrapper_is_a_hand_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = read_job(str(project(tmp_path, FORWARDING)))
    from tuneadvisor.files import read_bytes_input as real

    def read(path: str | os.PathLike[str], what: str, limit: int) -> bytes:
        if Path(path).name == "launch.sh":
            raise InputError(path, f"{what} is not readable (permission denied)")
        return real(path, what, limit)

    monkeypatch.setattr(search, "read_bytes_input", read)
    assert choose_launch(find_launches(job)) is None
    assert unfollowed_launch(job) is not None
