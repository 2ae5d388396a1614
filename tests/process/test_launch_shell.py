"""Launch lines run by a real shell: the watch lines of a submitted job script pass
`bash -n`, and what each torchrun rank's `sh -c` runs (kernprof with its own profile)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tuneadvisor.relaunch.bundled import bundled
from tuneadvisor.relaunch.local_allocation import emulate
from tuneadvisor.relaunch.runner import RunRequest, plan_tasks
from tuneadvisor.relaunch.settings import Settings, render_job_script
from tuneadvisor.relaunch.submit import launch_line
from tuneadvisor.slurm.launch_line.choose import choose_launch
from tuneadvisor.slurm.launch_line.search import find_launches


def _request(tmp_path: Path, name: str, settings: Settings, **kw: Any) -> RunRequest:
    return RunRequest(bundled(name), settings, tmp_path, "/opt/py/bin/python", tmp_path, **kw)


@pytest.mark.parametrize("profile", [False, True])
@pytest.mark.parametrize(("name", "target"), [("mnist_single", '--pid "$train_pid"'),
                                              ("mnist_ddp", '--job "$SLURM_JOB_ID"')])  # fmt: skip
def test_a_submitted_job_records_watch_beside_the_training(
    tmp_path: Path, name: str, target: str, profile: bool
) -> None:
    # profiled srun jobs run each rank's kernprof in `sh -c '... "$@"' sh ARGS`: the options
    # after the string still count as the training script's
    settings = Settings(ntasks=2 if name == "mnist_ddp" else 1)
    req = _request(tmp_path, name, settings, profile=profile)
    text = render_job_script(
        req.settings, name=name, launch=launch_line(req), workdir=tmp_path,
        output="slurm-%j.out", watch=["/opt/ta/bin/python", "-m", "tuneadvisor"],
    )  # fmt: skip
    assert "/opt/ta/bin/python -m tuneadvisor watch --headless --interval 1 " + target in text
    assert '--record "metrics-${SLURM_JOB_ID}.jsonl"' in text and 'exit "$status"' in text
    # the training stays the job's first command: report --job still reads its options
    found = choose_launch(find_launches(text))
    assert found is not None and found.script is not None
    assert found.script.endswith(f"{name}.py") and "--data-dir" in found.options
    assert subprocess.run(["bash", "-n"], input=text, text=True, check=False).returncode == 0


def test_torchrun_ranks_each_run_kernprof_with_their_own_profile(tmp_path: Path) -> None:
    settings = Settings(ntasks=2, knobs={"num_workers": 0})
    req = _request(tmp_path, "mnist_torchrun", settings, profile=True)
    alloc = emulate(settings, name="t", submit_dir=str(tmp_path), cores=[0, 1])
    (task,), profiles = plan_tasks(req, alloc, tmp_path)
    argv = task.argv
    assert argv[1:3] == ["-m", "torch.distributed.run"] and "--no-python" in argv
    cut = argv.index("--no-python")
    assert argv[cut + 1 : cut + 3] == ["sh", "-c"] and argv[cut + 4] == "sh"
    assert argv[cut + 5 :] == ["--data-dir", str(tmp_path.resolve()), "--num-workers", "0"]
    assert profiles == [tmp_path / "profile-rank0.lprof", tmp_path / "profile-rank1.lprof"]
    # what each rank's sh runs, with RANK as torchrun sets it
    inner = argv[cut + 3].replace("exec ", "printf '%s\\n' ", 1)
    out = subprocess.run(["sh", "-c", inner, "sh", "--a", "1 2"], env={"RANK": "1"},
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    words = out.splitlines()
    assert words[:6] == ["/opt/py/bin/python", "-m", "kernprof", "-l", "-q", "-o"]
    assert words[6] == f"{tmp_path.resolve()}/profile-rank1.lprof"
    assert words[7].endswith("training/mnist_torchrun.py") and words[8:] == ["--a", "1 2"]
