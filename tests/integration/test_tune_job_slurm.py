"""Real Slurm: `tune --job` tunes a training script of the test's own (num_workers=0 written
as a literal, generated items that cost CPU, torch on the CPU) through its job script, as one
job array on the one-node cluster; the user's files are never edited."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.integration.slurm_cluster import Cluster, start_cluster
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.tune.job_array import ArrayPlan, array_script
from tuneadvisor.tune.job_grid import JobSetting

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

# num_workers=0 written as a literal, generated items that cost CPU; shared with
# bench/tune_job_bench.py
TRAIN_PY = (REPO / "tests" / "fixtures" / "costly_train" / "train.py").read_text()

JOB = """\
#!/bin/bash
#SBATCH --job-name=mytrain
#SBATCH --cpus-per-task=1
#SBATCH --mem=2G
#SBATCH --time=00:10:00
python train.py
"""


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster(start_cluster())


ATTEMPTS = 3  # tunes at most: one measured while other work took the CPUs is run again
QUIET = 0.1  # the share of the machine's CPUs other work may use while a trial trains
QUIET_WAIT_S = 30.0  # the longest wait for a quiet machine before a tune
GRID = [(1, 0), (1, 1), (2, 1), (2, 2)]  # the start and its neighbours on a 2-CPU node


def _machine_busy(seconds: float = 2.0) -> float:
    """The share of this machine's CPUs in use over ``seconds`` (/proc/stat)."""

    def ticks() -> tuple[int, int]:
        values = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        return sum(values) - sum(values[3:5]), sum(values)

    busy0, total0 = ticks()
    time.sleep(seconds)
    busy1, total1 = ticks()
    return (busy1 - busy0) / max(1, total1 - total0)


def _wait_for_quiet() -> None:
    """Until other work leaves the CPUs mostly free, for at most QUIET_WAIT_S (then the tune
    runs anyway: each trial records how much other work took)."""
    deadline = time.monotonic() + QUIET_WAIT_S
    while time.monotonic() < deadline and _machine_busy() > QUIET:
        pass


def _others(folder: Path, trials: list[dict[str, Any]]) -> dict[int, float | None]:
    """Per trial, the share of the CPUs other work used while it trained (the test script's
    own record; None where it wrote none)."""
    found: dict[int, float | None] = {}
    for trial in trials:
        record = folder / f"machine-{trial['array_task_id']}.json"
        share = json.loads(record.read_text())["others_share"] if record.exists() else None
        found[trial["array_task_id"]] = share
    return found


def _tune_once(cluster: Cluster, folder: Path) -> dict[str, Any]:
    """One `tune --job` of the test's own job, its ledger checked for what holds under any
    load: the user's files unchanged, the trials in task order, each setting tried, a job
    script written only with a winner."""
    (folder / "train.py").write_text(TRAIN_PY)
    (folder / "train.sbatch").write_text(JOB)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    done = cluster.tuneadvisor(
        folder, "tune", "--job", "train.sbatch", "--steps", "60", "--repeats", "3",
        "--budget", "8", "--format", "json",
    )  # fmt: skip  # --budget: minutes, the bound of the wait
    assert done.returncode == 0, done.stderr
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.name in before} == before
    ledger: dict[str, Any] = json.loads(done.stdout)
    trials = ledger["trials"]
    assert not [t["failed"] for t in trials if t["failed"]]
    assert all(t["node"] == "vm" for t in trials)
    tasks = [t["array_task_id"] for t in trials]
    settings = [(t["setting"]["cpus_per_task"], t["setting"]["num_workers"]) for t in trials]
    assert all(setting == GRID[task % 4] for task, setting in zip(tasks, settings, strict=True))
    spent = "the budget (8 min) is spent" in done.stderr  # a queue of other jobs: rerun
    assert spent or set(settings) == set(GRID)  # each setting runs once before a decision
    ledger["budget_spent"] = spent
    decision = ledger["decision"]
    assert decision["trials_planned"] == 12
    assert decision["trials_started"] == len(trials) + len(decision["stopped_while_running"])
    assert f"{len(trials)} done" in done.stderr  # the progress line, to the end
    winner = ledger["winner"]
    tuned_path = folder / "train.tuned.sbatch"
    assert tuned_path.exists() == (winner is not None)  # nothing written without a winner
    if winner is not None:
        tuned = JobScript.parse(tuned_path.read_text())
        assert tuned.directives()["cpus-per-task"] == str(winner["cpus_per_task"])
        assert f"tuned from tune array {ledger['job_id']}" in tuned.text
    return ledger


@pytest.mark.alone  # a trial beside the other xdist worker's tests measures that worker
def test_tune_job_finds_the_cores_and_workers_without_editing(
    cluster: Cluster, tmp_path: Path
) -> None:
    """On 2 CPUs, with items that cost about as much CPU as the step, a worker on the second
    core makes the job up to twice as fast. The decision is the tool's own (beyond both
    spreads). A tune whose trials shared the CPUs with other work and did not find it (no
    winner, or one a lull favoured) is run again, at most ATTEMPTS times; a tune on a quiet
    machine must find it."""
    said = []
    for attempt in range(ATTEMPTS):
        _wait_for_quiet()
        folder = tmp_path / f"attempt-{attempt}"
        folder.mkdir()
        ledger = _tune_once(cluster, folder)
        winner = ledger["winner"]
        if winner is not None and winner["cpus_per_task"] == 2 and winner["num_workers"] >= 1:
            assert (folder / "train.py.tuneadvisor.patch").is_file()  # num_workers=0 changes
            assert (folder / "train.py").read_text() == TRAIN_PY
            return
        others = _others(folder, ledger["trials"])
        quiet = not ledger["budget_spent"] and all(
            share is not None and share <= QUIET for share in others.values()
        )
        assert not quiet, (winner, others, ledger)  # nothing took the CPUs: it must be found
        worst = max((v for v in others.values() if v is not None), default=None)
        said.append(f"winner {winner}, other work took up to "
                    f"{'?' if worst is None else f'{100 * worst:.0f} %'} of the CPUs")  # fmt: skip
    pytest.skip(f"other work took the CPUs in every tune ({'; '.join(said)}): no finding")


@pytest.mark.parametrize(
    "settings", [((1, 0), (1, 1), (2, 1), (2, 2)), ((2, 0), (1, 0)), ((1, 1),)]
)
def test_the_array_script_is_accepted_by_test_only(
    cluster: Cluster, tmp_path: Path, settings: tuple[tuple[int, int], ...]
) -> None:
    folder = tmp_path / "tune folder 'quoted'"
    folder.mkdir()
    job = JobScript.parse(JOB + "#SBATCH --output=ignored-after-command\n")
    gate = len(settings) > 1  # the wait for the tune's go file, where it may cancel trials
    plan = ArrayPlan(tuple(JobSetting(c, w) for c, w in settings), repeats=2, steps=5, gate=gate)
    array = folder / "array.sbatch"
    array.write_text(array_script(job, plan, folder, "tune-mytrain"))
    assert cluster.test_only(array) is None
    syntax = subprocess.run(["bash", "-n", str(array)], capture_output=True, text=True, check=False)
    assert syntax.returncode == 0, syntax.stderr


def test_a_job_sbatch_refuses_is_one_line_and_leaves_nothing(
    cluster: Cluster, tmp_path: Path
) -> None:
    (tmp_path / "train.py").write_text(TRAIN_PY)
    (tmp_path / "train.sbatch").write_text(JOB.replace("--mem=2G", "--partition=nosuch"))
    done = cluster.tuneadvisor(tmp_path, "tune", "--job", "train.sbatch")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "invalid partition" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py", "train.sbatch"]
