"""`tune_job` end to end against a stand-in for Slurm whose 'trials' write the probe files
the hook would: the winner written (and submitted) only beyond the noise, a failed trial said
from its log, the user's files never edited."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tuneadvisor.commands.tune_job import as_json, ledger_lines
from tuneadvisor.slurm.client.sinfo import PartitionShape
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.tune.job_array import ArrayPlan, array_script
from tuneadvisor.tune.job_grid import JobSetting
from tuneadvisor.tune.job_trials import Waiting, run_array
from tuneadvisor.tune.job_tune import JobTuneRequest, JobTuneResult, tune_job

TRAIN = "from torch.utils.data import DataLoader\nloader = DataLoader(range(9), num_workers=0)\n"
JOB = "#!/bin/bash\n#SBATCH --cpus-per-task=1\n#SBATCH --mem=2G\npython train.py\n"


@dataclass
class FakeSlurm:
    """One task at a time (%1), in task order: each sleep of the tune ends the running task,
    which writes the probe file the hook would, with rate(cores, workers) -> samples/s
    windows (a setting not given dies: its log says MemoryError)."""

    rates: dict[tuple[int, int], Any]  # windows (samples/s), or one list of them per run
    submitted: list[Path] = field(default_factory=list)
    queue: list[tuple[int, int, int]] = field(default_factory=list)  # task, cores, workers
    folder: Path | None = None
    ran: list[int] = field(default_factory=list)  # the tasks that took the node, in order
    cancelled: list[int] = field(default_factory=list)
    started: int | None = None
    done: list[tuple[int, int, int]] = field(default_factory=list)  # ended by itself

    def partitions(self) -> list[PartitionShape]:
        return [PartitionShape("debug", True, 2, 8000, 0, 1, None)]

    def test_only(self, script: Path, *, chdir: str | None = None) -> str:
        return "starts 2026-12-06T07:00:00 on vm"

    def submit(self, script: Path, *, chdir: str | None = None) -> str:
        self.submitted.append(script)
        if script.name == "array.sbatch":
            self.folder = script.parent
            for line in script.read_text().splitlines():
                if ") setting=" in line:
                    task = int(line.split(")")[0])
                    cores = int(line.split("cores=")[1].split()[0])
                    workers = int(line.split("workers=")[1].split()[0])
                    self.queue.append((task, cores, workers))
        return str(100 + len(self.submitted))

    def array_tasks(self, job_id: str) -> tuple[tuple[int | None, str], ...]:
        return tuple(
            (t, "RUNNING" if i == 0 else "PENDING") for i, (t, _, _) in enumerate(self.queue)
        )

    def cancel_tasks(self, job_id: str, tasks: Sequence[int]) -> None:
        self.cancelled += tasks
        self.queue = [q for q in self.queue if q[0] not in tasks]

    def cancel(self, job_id: str) -> None:
        self.cancel_tasks(job_id, [t for t, _, _ in self.queue])

    def clock(self) -> float:
        return float(len(self.ran))  # one trial: a unit of time

    def sleep(self, seconds: float) -> None:
        """The running task ends (a gated one waits for its go file)."""
        if not self.queue:
            return
        assert self.folder is not None
        task, cores, workers = self.queue[0]
        gated = "/go-" in (self.folder / "array.sbatch").read_text()
        if gated and not (self.folder / f"go-{task}").exists():
            return
        self.queue.pop(0)
        self.ran.append(task)
        windows: list[Any] | None = self.rates.get((cores, workers))
        if windows and isinstance(windows[0], list):  # this setting's next run
            runs = sum(1 for t, c, w in self.done if (c, w) == (cores, workers))
            windows = windows[min(runs, len(windows) - 1)]
        self.done.append((task, cores, workers))
        if windows is None:  # this trial dies
            (self.folder / f"task-{task}.out").write_text("MemoryError: out of memory\n")
            return
        probe = {
            "kind": "tuneadvisor-probe", "schema": 1, "batch_size": 10, "cores": cores,
            "test_mode": False, "ceiling_step_s": [0.01] * 3, "pipeline": [],
            "loop_step_s": [10 / r for r in windows], "loop_stall_share": [0.5] * 3,
            "host": "vm", "num_workers": workers,
        }  # fmt: skip
        (self.folder / f"probe-{task}.json").write_text(json.dumps(probe))


def _tune(tmp_path: Path, slurm: FakeSlurm, **options: object) -> JobTuneResult:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "train.sbatch").write_text(JOB)
    request = JobTuneRequest(job=str(tmp_path / "train.sbatch"), **options)  # type: ignore[arg-type]
    result = tune_job(request, slurm, lambda line: None)  # type: ignore[arg-type]
    assert (tmp_path / "train.py").read_text() == TRAIN
    assert (tmp_path / "train.sbatch").read_text() == JOB
    return result


def test_the_winner_beyond_the_noise_is_written_and_submitted(tmp_path: Path) -> None:
    slurm = FakeSlurm({(1, 0): [100, 101, 99], (1, 1): [102, 100, 101], (2, 1): [190, 200, 195],
                       (2, 2): [150, 151, 149]})  # fmt: skip
    result = _tune(tmp_path, slurm, submit_winner=True)
    assert result.best is not None and (result.best.setting.cores, result.best.setting.workers) == (
        2,
        1,
    )
    tuned = (tmp_path / "train.tuned.sbatch").read_text()
    assert "#SBATCH --cpus-per-task=2\n" in tuned and "tuned from tune array 101" in tuned
    assert (tmp_path / "train.py.tuneadvisor.patch").is_file()
    assert slurm.submitted[-1] == (tmp_path / "train.tuned.sbatch").resolve()


@pytest.mark.parametrize("noisy", [[60, 130, 330], [100, 104, 103]])
def test_a_change_within_the_noise_writes_nothing(tmp_path: Path, noisy: list[float]) -> None:
    slurm = FakeSlurm({(1, 0): [100, 101, 99], (1, 1): noisy, (2, 1): noisy, (2, 2): noisy})
    result = _tune(tmp_path, slurm, submit_winner=True)
    assert result.best is None
    assert not (tmp_path / "train.tuned.sbatch").exists()
    assert len(slurm.submitted) == 1  # the array only


def test_a_failed_trial_says_why_and_the_others_count(tmp_path: Path) -> None:
    slurm = FakeSlurm({(1, 0): [100, 101, 99], (1, 1): [100, 100, 100], (2, 1): [190, 200, 195]})
    result = _tune(tmp_path, slurm)
    failed = [t for t in result.tasks if t.failed]
    assert failed and all("MemoryError" in (t.failed or "") for t in failed)
    assert {(t.setting.cores, t.setting.workers) for t in failed} == {(2, 2)}
    assert result.best is not None and result.best.setting.cores == 2


QUIET: dict[tuple[int, int], Any] = {
    (1, 0): [100, 101, 99], (1, 1): [102, 100, 101], (2, 1): [190, 200, 195],
    (2, 2): [150, 151, 149],
}  # fmt: skip


def _setting(result: JobTuneResult) -> tuple[int, int] | None:
    best = result.best
    return None if best is None else (best.setting.cores, best.setting.workers)


def test_a_decision_cancels_the_trials_it_no_longer_needs(tmp_path: Path) -> None:
    slurm = FakeSlurm(QUIET)
    result = _tune(tmp_path, slurm, repeats=3)
    # round 1 tries each setting once; then only the start and the fastest run again
    assert slurm.ran == [0, 1, 2, 3, 4, 6]
    assert sorted(slurm.cancelled) == [5, 7, 8, 9, 10, 11]
    assert _setting(result) == (2, 1)
    outcome = result.outcome
    assert outcome is not None and outcome.started == 6 and not outcome.stopped
    assert outcome.decided and "beats the start beyond both spreads" in outcome.decided
    assert {(s.cores, s.workers) for s in outcome.not_repeated} == {(1, 1), (2, 2)}
    assert [t.task for t in result.tasks] == [0, 1, 2, 3, 4, 6]
    lines = ledger_lines(result)
    assert "decided after 6 of 12 trials: 2 cores, 1 worker beats the start beyond both " \
        "spreads after 2 and 2 runs; the 6 left cancelled" in lines  # fmt: skip
    assert "not repeated: 2 cores, 2 workers: outside both spreads of 2 cores, 1 worker " \
        "(the fastest then)" in lines  # fmt: skip
    decision = as_json(result)["decision"]
    assert decision["trials_started"] == 6 and decision["cancelled"] == [5, 7, 8, 9, 10, 11]
    assert [t["array_task_id"] for t in as_json(result)["trials"]] == [0, 1, 2, 3, 4, 6]


def test_a_plain_sweep_runs_every_trial_and_agrees(tmp_path: Path) -> None:
    slurm = FakeSlurm(QUIET)
    result = _tune(tmp_path, slurm, repeats=3, early=False)
    assert slurm.ran == list(range(12)) and not slurm.cancelled
    assert _setting(result) == (2, 1)
    assert result.outcome is not None and result.outcome.decided is None


def test_the_start_beating_everything_is_decided_after_its_second_run(tmp_path: Path) -> None:
    slurm = FakeSlurm({(1, 0): [300, 301, 299], (1, 1): [100] * 3, (2, 1): [150] * 3,
                       (2, 2): [120] * 3})  # fmt: skip
    result = _tune(tmp_path, slurm, repeats=3)
    assert slurm.ran == [0, 1, 2, 3, 4]
    assert result.best is None and not (tmp_path / "train.tuned.sbatch").exists()


def test_settings_within_the_noise_run_every_repeat(tmp_path: Path) -> None:
    slurm = FakeSlurm({(1, 0): [100, 120, 80], (1, 1): [105, 125, 85], (2, 1): [110, 130, 90],
                       (2, 2): [95, 115, 75]})  # fmt: skip
    result = _tune(tmp_path, slurm, repeats=3)
    assert slurm.ran == list(range(12)) and not slurm.cancelled
    assert result.best is None


def test_a_failed_setting_gets_no_more_runs(tmp_path: Path) -> None:
    slurm = FakeSlurm({(1, 0): [100, 101, 99], (1, 1): [150, 160, 155], (2, 1): [150, 160, 155]})
    result = _tune(tmp_path, slurm, repeats=3)
    assert 3 in slurm.ran and 7 not in slurm.ran and 11 not in slurm.ran  # (2, 2) died once
    assert result.outcome is not None
    assert "failed" in result.outcome.not_repeated[result.grid.settings[3]]


def test_a_decision_reached_while_a_trial_runs_stops_it(tmp_path: Path) -> None:
    """The array moves on while the tune reads: the next trial may be running already."""

    class Eager(FakeSlurm):
        def array_tasks(self, job_id: str) -> tuple[tuple[int | None, str], ...]:
            assert self.folder is not None
            if self.queue and self.queue[0][0] == 6 and (self.folder / "go-6").exists():
                super().sleep(0)  # task 6 ends as the tune looks, the next starts at once
                self.started = self.queue[0][0]
            return super().array_tasks(job_id)

        def sleep(self, seconds: float) -> None:
            if not self.queue or self.queue[0][0] != 6:
                super().sleep(seconds)

    slurm = Eager({**QUIET, (2, 2): [190, 200, 195]})
    result = _tune(tmp_path, slurm, repeats=3)
    outcome = result.outcome
    assert outcome is not None and outcome.decided
    # the gate held the task that started at once: it never ran the job, nothing stopped
    assert slurm.started in slurm.cancelled and slurm.started not in slurm.ran
    assert not outcome.stopped and outcome.started == len(result.tasks) == len(slurm.ran)


def test_side_by_side_a_trial_running_when_decided_is_stopped(tmp_path: Path) -> None:
    slurm = FakeSlurm(QUIET)
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "train.sbatch").write_text(JOB)
    plan = ArrayPlan(tuple(JobSetting(c, w) for c, w in QUIET), 3, 30, parallel=2)
    folder = tmp_path / "tune"
    folder.mkdir()
    (folder / "array.sbatch").write_text(array_script(JobScript.parse(JOB), plan, folder, "t"))
    slurm.submit(folder / "array.sbatch")

    def two_running(job_id: str) -> tuple[tuple[int | None, str], ...]:
        return tuple((t, "RUNNING" if i < 2 else "PENDING") for i, (t, _, _) in
                     enumerate(slurm.queue))  # fmt: skip

    slurm.array_tasks = two_running  # type: ignore[method-assign]
    outcome = run_array(slurm, "7", plan, folder, Waiting(0.05, 3600), lambda line: None)
    assert outcome.decided and outcome.stopped  # ran beside the last trial it needed
    assert set(outcome.stopped) <= set(slurm.cancelled)
    assert not set(outcome.stopped) & {t.task for t in outcome.tasks}
    assert outcome.started == len(outcome.tasks) + len(outcome.stopped)


windows = st.lists(st.floats(20.0, 400.0), min_size=3, max_size=3)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.lists(windows, min_size=3, max_size=3), min_size=4, max_size=4),
    st.integers(1, 3),
    st.booleans(),
)
def test_trials_to_a_decision_never_keep_a_change_within_the_noise(
    tmp_path_factory: pytest.TempPathFactory,
    runs: list[list[list[float]]],
    repeats: int,
    early: bool,
) -> None:
    folder = tmp_path_factory.mktemp("race")
    keys = [(1, 0), (1, 1), (2, 1), (2, 2)]
    slurm = FakeSlurm({k: r for k, r in zip(keys, runs, strict=True)})
    result = _tune(folder, slurm, repeats=repeats, early=early)
    outcome = result.outcome
    assert outcome is not None
    assert slurm.ran == sorted(slurm.ran)  # in task order: the repeats stay interleaved
    assert outcome.started == len(slurm.ran) <= 4 * repeats
    assert {t.task % 4 for t in result.tasks} == {0, 1, 2, 3}  # every setting ran once
    if not early:
        assert outcome.started == 4 * repeats and not outcome.decided
    best = result.best
    if best is not None:  # by the tool's rule, over what ran
        assert best.verdict is not None and best.verdict.kept
        assert best.rate is not None and best.verdict.gain > best.verdict.noise
        assert best.setting not in outcome.not_repeated  # beaten beyond the noise: never
    if outcome.decided and best is not None:
        least = min(2, repeats)
        assert len(best.tasks) >= least and len(result.results[0].tasks) >= least
    assert (folder / "train.tuned.sbatch").exists() == (best is not None)


def test_no_decision_is_claimed_that_the_later_runs_undo(tmp_path: Path) -> None:
    """1 core, 1 worker is out after the first round (the start beats it beyond both
    spreads); the start's second run is slower, and it no longer does: nothing is decided
    early, the start runs its repeats, and the ledger judges what ran."""
    start = [[100, 101, 99], [80, 81, 79], [90, 91, 89]]
    slurm = FakeSlurm({(1, 0): start, (1, 1): [95, 96, 94], (2, 1): [50] * 3, (2, 2): [50] * 3})
    result = _tune(tmp_path, slurm, repeats=3)
    outcome = result.outcome
    assert outcome is not None and outcome.decided is None
    assert slurm.ran == [0, 1, 2, 3, 4, 8]  # the start's repeats; the others' cancelled
    assert set(outcome.not_repeated) == set(result.grid.settings[1:])
    assert result.best is None
