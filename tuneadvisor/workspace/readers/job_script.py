"""job.*: the job script (--job, else the one Slurm gave) and the launch line read as the
training."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tuneadvisor.workspace.read_files import read_job
from tuneadvisor.workspace.readers.base import Gathering, JobRead, Reader

if TYPE_CHECKING:
    from tuneadvisor.slurm.jobscript.model import JobScript


def _read(state: Gathering) -> None:
    job, inputs, live = state.given_job, state.inputs, state.live
    if job is None and inputs.job is not None:
        job = read_job(inputs.job)
    elif job is None and live is not None and live.script is not None:
        if live.script.not_a_script is None:
            job = live.script
        else:  # as a missing script: the live facts still stand
            why = f"the script Slurm gave is {live.script.not_a_script}"
            state.cannot_read(f"job {live.job_id}", why)
    if job is None:
        state.sharpen.append("the job script (--job)")
        return
    from tuneadvisor.slurm.jobscript.facts import job_facts, job_notes
    from tuneadvisor.slurm.launch_line.choose import choose_launch
    from tuneadvisor.slurm.launch_line.search import find_launches, unfollowed_launch

    launches = find_launches(job)
    launch = choose_launch(launches)
    unfollowed = unfollowed_launch(job) if launch is None and inputs.script is None else None
    state.facts.update(job_facts(job, launch, launches))
    state.notes += job_notes(job, launches, launch)
    if launch is None and inputs.script is None:
        _runtime_launches(state, job, unfollowed is not None)
    gpus = state.facts.get("job.gpus")
    if launch is not None and "job.ranks_per_task" not in state.facts and isinstance(gpus, int):
        from tuneadvisor.slurm.launch_line.visible_gpus import visible_gpu_ranks

        said = visible_gpu_ranks(launch, [line.text for line in job.lines], gpus)
        if said is not None:  # torchrun's count from CUDA_VISIBLE_DEVICES: the GPUs per node
            state.facts["job.ranks_per_task"] = gpus
            state.notes.append(said)
    state.job = JobRead(job, launch, unfollowed, len(launches))


def _runtime_launches(state: Gathering, job: JobScript, unfollowed: bool) -> None:
    """No training command read: a command the script builds at run time (``eval "$cmd"``)
    is named as not followed; with none (and no launcher that led nowhere), that the job
    script starts no Python program tuneadvisor reads."""
    from tuneadvisor.slurm.launch_line.runtime import runtime_commands

    built = runtime_commands(job)
    for line, command in built:
        state.cannot_read(
            f"line {line}: `{command}` runs a command built when the job runs",
            "not followed, so the training script and its settings were not read (give --script)",
        )
    if not built and not unfollowed:
        state.cannot_read(
            "the job script's launch", "no Python training command found in it (give --script)"
        )


READER = Reader("job script", _read)
