"""The job as Slurm tells it now (--jobid without a saved accounting file), and then, after
the job script, the job as it ran over what its script says."""

from __future__ import annotations

from tuneadvisor.workspace.readers.base import Gathering, Reader


def _live(state: Gathering) -> bool:
    inputs = state.inputs
    return state.client is not None and inputs.jobid is not None and inputs.live


def _read(state: Gathering) -> None:
    from tuneadvisor.workspace.live_job import fetch_job

    assert state.client is not None and state.inputs.jobid is not None
    live = fetch_job(state.client, state.inputs.jobid, want_script=state.inputs.job is None)
    state.notes += live.notes
    state.live = live


def _as_run(state: Gathering) -> None:
    """sacct.* and seff.* of the live job, then job.* as it ran over the script's: sbatch's
    command line wins over the script's #SBATCH lines."""
    from tuneadvisor.advisor.measured_allocation import ran_differently

    assert state.live is not None
    as_run = state.live.as_run()
    state.notes += ran_differently(state.facts, as_run)
    state.facts.update(state.live.facts())
    state.facts.update(as_run)


READER = Reader("the job, asked of Slurm", _read, given=_live)
AS_RUN = Reader("the job as it ran", _as_run, given=lambda state: state.live is not None)
