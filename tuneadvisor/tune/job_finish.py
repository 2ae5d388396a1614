"""Time to result in the ledger of ``tune --job``: when the user's job as written and the
winning script would start (``sbatch --test-only``, as the trials were asked) and end, from
the steps of the real run (the training script's options, as ``report`` reads them) and the
step time each setting measured in its trials (not a prediction: the trials timed it).

Kept apart from the tune itself: it reads what the tune left (its ledger, its probe files,
the written winner) and asks Slurm twice more; what is missing is said, never guessed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tuneadvisor.advisor.evidence import NotRead
from tuneadvisor.advisor.finish import Finish, finish, run_steps, times, verdict
from tuneadvisor.advisor.prediction import Span
from tuneadvisor.errors import InputError
from tuneadvisor.workspace.time_to_result import WHAT, TimeToResult, ask_start

if TYPE_CHECKING:
    from tuneadvisor.slurm.client import SlurmClient
    from tuneadvisor.tune.job_ledger import SettingResult
    from tuneadvisor.tune.job_tune import JobTuneResult


def measured_step(result: SettingResult, folder: Path) -> Span | None:
    """The setting's step in seconds from its trials: the probe's batch over the pooled
    samples/s, its spread either way; None where no trial of it measured anything."""
    from tuneadvisor.files import load_json_input
    from tuneadvisor.runrecord.probe import parse_probe

    if result.rate is None or result.rate.median <= 0:
        return None
    for task in result.tasks:
        probe = folder / f"probe-{task.task}.json"
        if not task.rates or not probe.is_file():
            continue
        try:
            batch = parse_probe(load_json_input(probe, "probe file"), probe).batch_size
        except InputError:
            continue
        rate, spread = result.rate.median, result.rate.spread
        step = batch / rate
        return Span(batch / (rate * (1 + spread)), step, batch / (rate * max(1 - spread, 0.05)))
    return None


def ledger_time_to_result(
    result: JobTuneResult, job: Path, winner: Path | None, client: SlurmClient
) -> TimeToResult:
    """The job as written (the start setting's trials) and the winner written at ``winner``
    (its trials); the winner left out where none was kept."""
    from tuneadvisor.advisor.fact_view import view
    from tuneadvisor.workspace.gather import gather
    from tuneadvisor.workspace.inputs import Inputs
    from tuneadvisor.workspace.read_files import read_job

    missing: list[NotRead] = []
    steps = run_steps(view(gather(Inputs(job=str(job)), None, job=read_job(str(job))).facts))
    if isinstance(steps, str):
        missing.append(NotRead(WHAT, steps))
    chdir = str(job.resolve().parent)  # where the trials were submitted from
    scripts = [("the job as written", job, result.results[0])]
    if winner is not None and result.best is not None:
        scripts.append(("the winner", winner, result.best))
    ends: list[Finish | None] = []
    for name, path, measured in scripts:
        step = measured_step(measured, result.folder)
        if step is None:
            missing.append(NotRead(WHAT, f"the step time of {name}: no trial of it measured"))
        start = ask_start(client, name, path.resolve(), chdir, missing)
        if start is None or step is None or isinstance(steps, str):
            ends.append(None)
            continue
        ends.append(finish(start, times(steps.count, step)))
    now, tuned = ends[0], ends[1] if len(ends) > 1 else None
    both = verdict(now, tuned, "winning") if now is not None and tuned is not None else None
    return TimeToResult(
        None if isinstance(steps, str) else steps, now, tuned, winner is not None, both,
        tuple(missing),
    )  # fmt: skip
