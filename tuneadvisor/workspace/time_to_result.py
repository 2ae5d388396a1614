"""Time to result (``--queue``): when the scheduler would start the job script as written and
as tuned (``sbatch --test-only``: nothing is submitted), and with the run's length
(``advisor/finish.py``) when each would end.

Each script is asked as the file sbatch would be given: its bytes written to a private
temporary folder and passed by absolute path (the values in its ``#SBATCH`` lines are the
script's own, the tuned ones written by the job-script editor), with sbatch's working
directory this one, as a submission from here has. What could not be asked or read is a
"Not read" line naming the piece that is missing; no time is given without it."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tuneadvisor.advisor.evidence import NotRead
from tuneadvisor.advisor.finish import Finish, Steps, finish, verdict

if TYPE_CHECKING:
    from datetime import datetime

    from tuneadvisor.advisor.advice import Advice
    from tuneadvisor.advisor.prediction import Span
    from tuneadvisor.slurm.client import SlurmClient
    from tuneadvisor.slurm.jobscript.model import JobScript
    from tuneadvisor.workspace.tuned_files import TunedFiles

WHAT = "time to result"
SIZED = ("num_workers", "cpus-per-task")  # the plan's settings the step time depends on


@dataclass(frozen=True)
class TimeToResult:
    steps: Steps | None
    now: Finish | None  # the job script as written
    tuned: Finish | None  # None where the plan changes nothing, or a piece is missing
    tuned_changed: bool  # the plan writes a tuned job script
    verdict: str | None  # which gives the result first, where both are known
    not_read: tuple[NotRead, ...] = ()


def time_to_result(advice: Advice, tuned: TunedFiles, client: SlurmClient) -> TimeToResult:
    length = advice.run_length
    missing = [NotRead(WHAT, why) for why in (length.missing if length else ())]
    changed = tuned.tuned_job is not None and bool(tuned.job_diff)
    if tuned.original_job is None:
        missing.append(NotRead(WHAT, "the start: no job script was given (--job)"))
        return TimeToResult(None, None, None, changed, None, tuple(missing))
    tuned_s = length.tuned_s if length else None
    if length is not None and tuned_s is None and length.now_s is not None and changed:
        if any(k in advice.plan.script or k in advice.plan.sbatch for k in SIZED):
            missing.append(NotRead(WHAT, f"the tuned run's step time: {advice.no_prediction}"))
        else:  # memory, a directive repaired: nothing the step's speed depends on
            tuned_s = length.now_s
    if client.which("sbatch") is None:
        missing.append(NotRead(WHAT, "the start: Slurm's sbatch is not on PATH (run this on "
                                     "a login node of the cluster)"))  # fmt: skip
        return TimeToResult(length.steps if length else None, None, None, changed, None,
                            tuple(missing))  # fmt: skip
    scripts = [("the job as written", tuned.original_job)]
    if changed and tuned.tuned_job is not None:
        scripts.append(("the tuned job", tuned.tuned_job))
    starts = _starts(client, scripts, missing)
    now = _end(scripts[0][0], starts[0], length.now_s if length else None, missing)
    later = _end(scripts[1][0], starts[1], tuned_s, missing) if len(starts) > 1 else None
    both = verdict(now, later) if now is not None and later is not None else None
    return TimeToResult(length.steps if length else None, now, later, changed, both,
                        tuple(missing))  # fmt: skip


def _starts(
    client: SlurmClient, scripts: list[tuple[str, JobScript]], missing: list[NotRead]
) -> list[datetime | None]:
    out: list[datetime | None] = []
    with tempfile.TemporaryDirectory(prefix="tuneadvisor-queue-") as folder:
        for index, (name, job) in enumerate(scripts):
            path = Path(folder) / f"job-{index}.sbatch"
            path.write_bytes(job.render())
            out.append(ask_start(client, name, path, None, missing))
    return out


def ask_start(
    client: SlurmClient, name: str, path: Path, chdir: str | None, missing: list[NotRead]
) -> datetime | None:
    """When the scheduler would start the script at ``path``; None, with the line saying
    why in ``missing``, where sbatch refused it or gave no time."""
    from tuneadvisor.slurm.client import SlurmError

    try:
        said = client.will_run(path, chdir=chdir)
    except SlurmError as exc:
        # Slurm's last line is its conclusion ("fatal: ...", "allocation failure: ...")
        last = [line.strip() for line in exc.said.splitlines() if line.strip()][-1:]
        why = last[0] if last else exc.said
        missing.append(NotRead(WHAT, f"the start of {name}: sbatch --test-only said: {why}"))
        return None
    if said is None:
        missing.append(NotRead(WHAT, f"the start of {name}: sbatch --test-only gave no time"))
    return None if said is None else said.start


def _end(
    name: str, start: datetime | None, run_s: Span | None, missing: list[NotRead]
) -> Finish | None:
    if start is None or run_s is None:
        return None
    done = finish(start, run_s)
    if done is None:
        missing.append(NotRead(WHAT, f"the end of {name}: past the calendar's last year"))
    return done
