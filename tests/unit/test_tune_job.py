"""`tune --job`'s pure parts: the settings tried, the trial and array scripts, the verdicts."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.tune.job_array import ArrayPlan, array_script, trial_script
from tuneadvisor.tune.job_grid import MAX_SETTINGS, JobSetting, job_grid
from tuneadvisor.tune.job_ledger import TaskResult, ledger, winner

settings = st.builds(JobSetting, st.integers(1, 64), st.integers(0, 64))
HEADERS = st.lists(
    st.sampled_from([
        "#SBATCH --mem=4G", "#SBATCH -c 3", "#SBATCH --cpus-per-task=8", "#SBATCH --time=1:00:00",
        "#SBATCH --partition=debug", "#SBATCH --gres=gpu:1", "# a comment", "",
    ]),
    max_size=6,
)  # fmt: skip
BODIES = st.lists(
    st.sampled_from([
        "module load cuda", "srun python train.py --epochs 3", 'echo "$SLURM_CPUS_PER_TASK"',
        "torchrun --nproc-per-node=2 train.py", "#SBATCH --mem=1G  # after a command: a comment",
    ]),
    min_size=1, max_size=5,
)  # fmt: skip


def _job(header: list[str], body: list[str]) -> JobScript:
    return JobScript.parse("\n".join(["#!/bin/bash", *header, *body]) + "\n", "job.sbatch")


def _not_directives(job: JobScript) -> list[str]:
    end = job.first_command_line or len(job.lines) + 1
    return [
        line.text for line in job.lines
        if not (line.number < end and line.text.lstrip().startswith("#SBATCH"))
    ]  # fmt: skip


@given(HEADERS, BODIES, settings)
def test_a_trial_script_differs_from_the_users_only_in_sbatch_lines(
    header: list[str], body: list[str], setting: JobSetting
) -> None:
    job = _job(header, body)
    trial = trial_script(job, setting)
    assert _not_directives(trial) == _not_directives(job)
    assert trial.directives()["cpus-per-task"] == str(setting.cores)


@given(st.lists(settings, min_size=1, max_size=MAX_SETTINGS, unique=True), st.integers(1, 5))
def test_the_array_interleaves_repeats_one_task_at_a_time(
    tried: list[JobSetting], repeats: int
) -> None:
    plan = ArrayPlan(tuple(tried), repeats, steps=10)
    text = array_script(_job(["#SBATCH --output=mine.out"], ["python train.py"]), plan,
                        Path("/tmp/tune x"), "tune-x")  # fmt: skip
    array = JobScript.parse(text)
    assert array.directives()["array"] == f"0-{plan.tasks - 1}%1"
    assert array.directives()["output"] == "/tmp/tune x/task-%a.out"
    assert array.directives()["cpus-per-task"] == str(max(s.cores for s in tried))
    for rnd in range(repeats):  # each round tries every setting once
        chunk = range(rnd * len(tried), (rnd + 1) * len(tried))
        assert sorted(plan.setting_of(i) for i in chunk) == list(range(len(tried)))
        for i in chunk:
            s = tried[plan.setting_of(i)]
            assert (
                f"  {i}) setting={plan.setting_of(i)} cores={s.cores} workers={s.workers} ;;"
                in text
            )
    assert "python train.py" not in text  # the user's body runs from its trial script only


@given(settings, st.one_of(st.none(), settings), st.integers(1, 256))
def test_the_grid_keeps_the_start_and_the_node(
    start: JobSetting, predicted: JobSetting | None, node: int
) -> None:
    grid = job_grid(start, predicted, node)
    assert grid.settings[0] == start
    assert len(set(grid.settings)) == len(grid.settings) <= MAX_SETTINGS
    assert all(s.cores <= node for s in grid.settings[1:])
    if predicted is not None and predicted.cores <= node:
        assert predicted in grid.settings


rates = st.lists(st.floats(1.0, 1000.0), min_size=1, max_size=6)


@given(st.lists(rates, min_size=2, max_size=5), st.floats(0.0, 0.2))
def test_a_winner_within_the_noise_is_never_kept(
    measured: list[list[float]], min_gain: float
) -> None:
    tried = [JobSetting(1, w) for w in range(len(measured))]
    tasks = [TaskResult(i, tried[i], tuple(r)) for i, r in enumerate(measured)]
    results = ledger(tasks, tried, min_gain)
    best = winner(results)
    start = results[0].rate
    assert start is not None
    for r in results[1:]:
        assert r.rate is not None and r.verdict is not None
        beyond = r.rate.median / start.median - 1 > max(min_gain, start.spread + r.rate.spread)
        assert r.verdict.kept == beyond
    if best is not None:
        assert best.verdict is not None and best.verdict.kept
        assert best.rate is not None and all(
            best.rate.median >= r.rate.median
            for r in results[1:]
            if r.verdict and r.verdict.kept and r.rate
        )
    else:
        assert not any(r.verdict and r.verdict.kept for r in results[1:])


def test_a_failed_trial_still_leaves_the_others() -> None:
    tried = [JobSetting(1, 0), JobSetting(2, 1)]
    tasks = [
        TaskResult(0, tried[0], (10.0, 10.1, 9.9)),
        TaskResult(1, tried[1], (), failed="MemoryError"),
        TaskResult(2, tried[0], (10.0,)),
        TaskResult(3, tried[1], (30.0, 30.3, 29.7)),
    ]
    results = ledger(tasks, tried, 0.05)
    assert winner(results) is results[1]


def test_spread_trials_run_one_per_node_each_node_exclusive() -> None:
    plan = ArrayPlan((JobSetting(1, 0), JobSetting(2, 1)), repeats=2, steps=10, parallel=3)
    job = _job([], ["python train.py"])
    array = JobScript.parse(array_script(job, plan, Path("/tmp/t"), "tune-x"))
    assert array.directives()["array"] == "0-3%3"
    assert "exclusive" in array.directives()
    one = JobScript.parse(array_script(job, ArrayPlan(plan.settings, 2, 10), Path("/tmp/t"), "t"))
    assert "exclusive" not in one.directives()


def test_a_gated_task_starts_its_trial_only_on_the_tunes_go(tmp_path: Path) -> None:
    """Where the tune may cancel trials, a task waits for its go file: a trial no longer
    needed is cancelled before it starts the user's job."""
    import subprocess

    plan = ArrayPlan((JobSetting(1, 0), JobSetting(2, 1)), repeats=1, steps=10, gate=True)
    array = tmp_path / "array.sbatch"
    array.write_text(array_script(_job([], ["python train.py"]), plan, tmp_path, "tune-x"))
    (tmp_path / "trial-1.sbatch").write_text('echo "ran with $TUNEADVISOR_NUM_WORKERS"\n')
    env = {"PATH": "/usr/bin:/bin", "SLURM_ARRAY_TASK_ID": "1"}
    try:
        waited = subprocess.run(["bash", str(array)], env=env, capture_output=True, text=True,
                                timeout=1.5, check=False)  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        assert not exc.stdout  # still at the gate: the trial has not started
    else:
        raise AssertionError(f"the task did not wait for its go: {waited.stdout!r}")
    (tmp_path / "go-1").write_text("")
    ran = subprocess.run(["bash", str(array)], env=env, capture_output=True, text=True,
                         timeout=30, check=False)  # fmt: skip
    assert ran.stdout == "ran with 1\n", ran.stderr


@given(
    st.lists(st.tuples(st.integers(0, 3), rates), min_size=1, max_size=10),
    st.integers(1, 4),
    st.floats(0.0, 0.2),
)
def test_the_race_decides_only_on_what_was_measured(
    measured: list[tuple[int, list[float]]], repeats: int, min_gain: float
) -> None:
    from tuneadvisor.tune.gain import judge
    from tuneadvisor.tune.job_ledger import pooled
    from tuneadvisor.tune.job_race import least_runs, race

    tried = [JobSetting(1, 0), JobSetting(1, 1), JobSetting(2, 1), JobSetting(2, 2)]
    tasks = [TaskResult(i, tried[s], tuple(r)) for i, (s, r) in enumerate(measured)]
    state = race(tasks, tried, repeats, min_gain)
    ran = {t.setting for t in tasks}
    if state.decided is not None:
        assert ran == set(tried)  # every setting ran before any decision
        assert not state.wanted
    rate = {s: pooled([t for t in tasks if t.setting == s]) for s in ran}
    fastest = max(rate.values(), key=lambda r: r.median if r else 0.0)
    for setting in state.out:  # no more runs only where the fastest beats it by the rule
        assert setting != tried[0] and setting in ran
        mine = rate[setting]
        assert mine is not None and fastest is not None
        assert judge(mine, fastest, min_gain).kept
    if state.decided and "beats the start" in state.decided:
        start = rate[tried[0]]
        assert start is not None and fastest is not None and judge(start, fastest, min_gain).kept
        least = least_runs(repeats)
        assert sum(t.setting == tried[0] for t in tasks) >= least
