"""``tuneadvisor tune --job JOB``: the user's own job tried at the prediction's setting and its
neighbours, as one Slurm job array of short trials, and the winning job script written as
``apply`` writes one, only where it beats the start beyond both spreads.

Nothing of the user's is edited: each trial is their job script with its ``#SBATCH`` values,
run with the probe hook, which applies the worker count at ``DataLoader.__init__``, times the
steps and ends the program after the trial's steps (``job_array``)."""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tuneadvisor.errors import InputError
from tuneadvisor.files import write_atomic
from tuneadvisor.slurm.client import SlurmClient, SlurmError
from tuneadvisor.tune.job_array import ArrayPlan, array_script, trial_script
from tuneadvisor.tune.job_grid import Grid, JobSetting, job_grid
from tuneadvisor.tune.job_ledger import SettingResult, TaskResult, ledger, winner
from tuneadvisor.tune.job_trials import Outcome, Waiting, run_array

if TYPE_CHECKING:
    from tuneadvisor.advisor.evidence import Gathered
    from tuneadvisor.advisor.prediction import Prediction
    from tuneadvisor.slurm.jobscript.model import JobScript
    from tuneadvisor.workspace.tuned_files import TunedFiles

WORKERS_HOW = "num_workers set by the probe hook at DataLoader.__init__ (TUNEADVISOR_NUM_WORKERS)"


@dataclass(frozen=True)
class JobTuneRequest:
    job: str
    steps: int = 30
    repeats: int = 2
    budget_s: float = 1800.0  # the wait for the array; tasks left then are cancelled
    min_gain: float = 0.05
    output: str | None = None
    force: bool = False
    submit_winner: bool = False
    spread: bool = False  # trials side by side, one per node (--exclusive), not one at a time
    poll_s: float = 1.0  # a gated trial waits for the tune's next look at the queue
    early: bool = True  # tasks no longer needed are cancelled (job_race); False: a plain sweep


@dataclass(frozen=True)
class JobTuneResult:
    job_id: str
    folder: Path
    grid: Grid
    plan: ArrayPlan
    tasks: tuple[TaskResult, ...]
    results: tuple[SettingResult, ...]
    best: SettingResult | None
    prediction: Prediction | None
    start_estimate: str
    written: tuple[str, ...] = ()
    winner_job_id: str | None = None
    notes: tuple[str, ...] = field(default=())
    outcome: Outcome | None = None  # how the array ran: the decision, the tasks cancelled


@dataclass(frozen=True)
class _Read:
    job: JobScript
    gathered: Gathered
    start: JobSetting
    prediction: Prediction | None


def _read(request: JobTuneRequest) -> _Read:
    """The job as ``report`` reads it: the start setting, and the prediction's."""
    from tuneadvisor.advisor.advice import advise
    from tuneadvisor.workspace.gather import gather
    from tuneadvisor.workspace.inputs import Inputs
    from tuneadvisor.workspace.read_files import read_job
    from tuneadvisor.workspace.rule_files import load_rules, rule_dirs

    job = read_job(request.job)
    gathered = gather(Inputs(job=request.job), None, job=job)
    advice = advise(gathered, load_rules(rule_dirs(()), cached=True))
    facts = gathered.facts
    cores, workers = facts.get("job.cpus_per_task", 1), facts.get("script.num_workers")
    if not isinstance(workers, int) or isinstance(workers, bool):
        raise InputError(
            request.job,
            "tune --job: the training script's num_workers could not be read "
            f"({facts.get('script.num_workers.expr', 'no DataLoader found')}): "
            "the start is not known",
        )
    start = JobSetting(cores if isinstance(cores, int) else 1, workers)
    return _Read(job, gathered, start, advice.prediction)


def _nodes(client: SlurmClient, job: JobScript, notes: list[str]) -> tuple[int | None, int]:
    """The CPUs of the job's partition's nodes and how many nodes it has (sinfo); (None, 1),
    said, where Slurm cannot say."""
    try:
        shapes = client.partitions()
    except SlurmError as exc:
        notes.append(f"node size not read ({exc.problem}): no setting left out for it")
        return None, 1
    asked = job.directive("partition")
    names = set(asked.value.split(",")) if asked is not None else None
    mine = [p for p in shapes if (p.partition in names if names else p.default)]
    if not mine:
        return None, 1
    return min(p.cpus for p in mine), min(p.nodes for p in mine)


def tune_job(
    request: JobTuneRequest, client: SlurmClient, progress: Callable[[str], None]
) -> JobTuneResult:
    from tuneadvisor.workspace.apply import tuned_name

    read = _read(request)
    out = Path(request.output) if request.output else tuned_name(Path(request.job))
    notes: list[str] = []
    cores, nodes = _nodes(client, read.job, notes)
    grid = job_grid(read.start, _predicted(read), cores)
    # one trial per node at a time (each node exclusive), never two on one node's cores
    parallel = max(1, min(nodes, len(grid.settings))) if request.spread else 1
    gate = request.early and parallel == 1  # side by side, a trial starts with the others
    plan = ArrayPlan(grid.settings, request.repeats, request.steps, parallel, gate)
    job_path = Path(request.job).resolve()
    folder = job_path.parent / f"tune-{job_path.stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    if not request.force and out.exists():
        raise InputError(out, "exists: give another -o, or --force to overwrite it")
    folder.mkdir(parents=False, exist_ok=False)
    for index, setting in enumerate(grid.settings):
        write_atomic(folder / f"trial-{index}.sbatch", trial_script(read.job, setting).render())
    array = folder / "array.sbatch"
    name = f"tune-{job_path.stem}"[:64]
    write_atomic(array, array_script(read.job, plan, folder, name).encode())
    chdir = str(job_path.parent)
    try:  # a script sbatch refuses is refused here: nothing submitted, nothing left
        estimate = client.test_only(array, chdir=chdir)
        job_id = client.submit(array, chdir=chdir)
    except InputError:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    waiting = Waiting(request.min_gain, request.budget_s, request.poll_s, request.early)
    outcome = run_array(client, job_id, plan, folder, waiting, progress, estimate)
    tasks = outcome.tasks
    notes += outcome.notes
    results = ledger(tasks, grid.settings, request.min_gain)
    # a setting given no more runs was beaten beyond the noise by one still in: not the winner
    best = winner([r for r in results if r.setting not in outcome.not_repeated])
    written: tuple[str, ...] = ()
    winner_id = None
    if best is not None:
        tuned = _winning_files(read, best.setting, job_id, folder, plan.tasks)
        from tuneadvisor.workspace.apply import write_outputs

        written = tuple(write_outputs(tuned, Path(request.job), out, in_place=False))
        notes += tuned.notes
        if request.submit_winner:
            winner_id = client.submit(out.resolve(), chdir=chdir)
    return JobTuneResult(
        job_id, folder, grid, plan, tasks, results, best, read.prediction, estimate,
        written, winner_id, tuple(notes), outcome,
    )  # fmt: skip


def _predicted(read: _Read) -> JobSetting | None:
    if read.prediction is None:
        return None
    setting = read.prediction.setting
    return JobSetting(
        int(setting.get("cpus_per_task", read.start.cores)),
        int(setting.get("num_workers", read.start.workers)),
    )


def _winning_files(
    read: _Read, setting: JobSetting, job_id: str, folder: Path, tasks: int
) -> TunedFiles:
    """The winner written as ``apply`` writes a plan: --cpus-per-task in the job script, the
    training script's num_workers literal in a patch, and the line saying what it was tuned
    from (the array and the digest of its probe files)."""
    from tuneadvisor.advisor.plan import Change, Plan
    from tuneadvisor.slurm.jobscript.tuned_from import TunedFrom, with_tuned_from
    from tuneadvisor.workspace.tuned_files import TunedFiles, job_diff, tuned_files

    why = (f"tune-array-{job_id}",)
    sbatch = (
        {"cpus-per-task": Change(setting.cores, why)} if setting.cores != read.start.cores else {}
    )
    script = (
        {"num_workers": Change(setting.workers, why)}
        if setting.workers != read.start.workers
        else {}
    )
    # the patch derives num_workers from SLURM_CPUS_PER_TASK: all cores, or one for the main
    plan = Plan(sbatch=sbatch, script=script, reserve_main_core=setting.workers != setting.cores)
    tuned = tuned_files(read.gathered, plan)
    assert tuned.tuned_job is not None and tuned.original_job is not None
    digest = hashlib.sha256()
    for i in range(tasks):
        probe = folder / f"probe-{i}.json"
        if probe.is_file():
            digest.update(probe.read_bytes())
    stamp = TunedFrom(
        f"tune array {job_id}", digest.hexdigest()[:12], read.start.cores, None, read.start.workers
    )
    job = with_tuned_from(tuned.tuned_job, stamp)
    name = str(tuned.original_job.path or "job.sbatch")
    return TunedFiles(
        tuned.original_job, job, job_diff(tuned.original_job, job, name),
        tuned.script_patch, tuned.script_path, tuned.notes,
    )  # fmt: skip
