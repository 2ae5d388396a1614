"""The one job array of a tune of the user's own job: per setting, the user's job script with
that setting's ``#SBATCH`` values (nothing else changed), and the array script whose task i
runs setting i mod S (the repeats interleaved, so that drift hits every setting alike), one
task at a time (``%1``: trials never share cores), with the probe hook on ``PYTHONPATH`` and
the trial's worker count, steps and cores in the environment. Where the tune may cancel trials
(``job_trials``), each task first waits for the tune's word that it has read the trials before
(a ``go-TASK`` file, at most ``GATE_S``), so that a trial no longer needed never starts.

The array asks for the largest setting's cores; a task with fewer is kept on its own cores by
the hook (``TUNEADVISOR_CORES``), and ``SLURM_CPUS_PER_TASK`` says its count to the script.
Every value that reaches the script is checked (whole numbers) and quoted (paths)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from tuneadvisor.errors import InputError
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.jobscript.set_options import with_options
from tuneadvisor.tune.job_grid import JobSetting

# options of the user's header the array replaces: its tasks' logs are the tune's
_REPLACED = ("array", "output", "error", "job-name", "open-mode")
GATE_S = 120  # a tune that is gone (killed, its login session ended) delays each trial this much


@dataclass(frozen=True)
class ArrayPlan:
    settings: tuple[JobSetting, ...]
    repeats: int
    steps: int
    # tasks at once: 1 (%1) on one node; on several, one per node, each node --exclusive
    parallel: int = 1
    # one at a time, each task waits for the tune's go-TASK file (it has read the trials
    # before, and may cancel this one), at most GATE_S, then runs anyway
    gate: bool = False

    @property
    def tasks(self) -> int:
        return len(self.settings) * self.repeats

    def setting_of(self, task: int) -> int:
        """Task i runs setting i mod S: each repeat round tries every setting once."""
        return task % len(self.settings)


def hook_dir() -> Path:
    """The probe hook's folder (a link to training/ in a checkout, a copy in the wheel)."""
    return Path(__file__).resolve().parents[1] / "bundled" / "training" / "probe_hook"


def safe_path(path: Path, what: str) -> str:
    """``path`` quoted for bash; one with a line break or control character is refused
    (sbatch reads #SBATCH values up to the end of the line)."""
    text = str(path)
    if any(not c.isprintable() for c in text):
        raise InputError(
            path, f"{what}: a path with a control character cannot go into a job script"
        )
    return shlex.quote(text)


def trial_script(job: JobScript, setting: JobSetting) -> JobScript:
    """The user's job script with the setting's ``--cpus-per-task``: only #SBATCH lines differ."""
    notes: list[str] = []
    trial = with_options(job, {"cpus-per-task": str(setting.cores)}, notes)
    if notes:
        raise InputError(job.path, f"cannot write the trial's job script: {notes[0]}")
    return trial


def array_script(job: JobScript, plan: ArrayPlan, folder: Path, name: str) -> str:
    """The array script: the user's header (its partition, memory, time, account, GPUs) with
    the largest setting's cores, the array, and logs in ``folder``; then the dispatch."""
    for value in (
        plan.steps,
        plan.repeats,
        plan.parallel,
        *(v for s in plan.settings for v in (s.cores, s.workers)),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InputError(None, f"a trial's value {value!r} is not a whole number")
    header = job
    for option in _REPLACED:
        header = header.without_directive(option)
    values = {
        "cpus-per-task": str(max(s.cores for s in plan.settings)),
        "array": f"0-{plan.tasks - 1}%{max(1, plan.parallel)}",
        "job-name": name,
        "output": str(folder / "task-%a.out"),
    }
    notes: list[str] = []
    if plan.parallel > 1:  # trials side by side never on one node
        values["exclusive"] = ""
    header = with_options(header, values, notes)
    if notes:
        raise InputError(job.path, f"cannot write the tune's array script: {notes[0]}")
    end = header.first_command_line
    lines = [line.text for line in (header.lines if end is None else header.lines[: end - 1])]
    where = safe_path(folder, "the tune folder")
    hook = safe_path(hook_dir(), "the probe hook")
    cases = [
        f"  {i}) setting={plan.setting_of(i)} cores={plan.settings[plan.setting_of(i)].cores} "
        f"workers={plan.settings[plan.setting_of(i)].workers} ;;"
        for i in range(plan.tasks)
    ]
    body = [
        "# tuneadvisor tune --job: trial $SLURM_ARRAY_TASK_ID runs the job script of its setting",
        'case "${SLURM_ARRAY_TASK_ID:-}" in',
        *cases,
        '  *) echo "tuneadvisor: no trial ${SLURM_ARRAY_TASK_ID:-}" >&2; exit 2 ;;',
        "esac",
        *(
            [
                f"# wait (at most {GATE_S} s) for the tune to read the trials before: it may "
                "cancel this one",
                f"for _ in $(seq {GATE_S}); do "
                f'[ -e {where}/go-"$SLURM_ARRAY_TASK_ID" ] && break; sleep 1; done',
            ]
            if plan.gate
            else []
        ),
        f'export TUNEADVISOR_PROBE_OUT={where}/probe-"$SLURM_ARRAY_TASK_ID".json',
        f"export TUNEADVISOR_STEPS={plan.steps}",
        'export TUNEADVISOR_NUM_WORKERS="$workers" TUNEADVISOR_CORES="$cores"',
        'export SLURM_CPUS_PER_TASK="$cores" SRUN_CPUS_PER_TASK="$cores"',
        f'export PYTHONPATH={hook}"${{PYTHONPATH:+:$PYTHONPATH}}"',
        f'exec bash {where}/trial-"$setting".sbatch',
    ]
    return "\n".join([*lines, *body]) + "\n"
