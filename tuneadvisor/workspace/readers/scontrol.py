"""job.* as the job ran, from saved `scontrol show job -o ID` output (--scontrol): sbatch's
command-line options over the script's #SBATCH lines, for a job Slurm has forgotten (it keeps
a finished job for MinJobAge, 300 s by default; a job script can save its own record)."""

from __future__ import annotations

from tuneadvisor.errors import InputError
from tuneadvisor.files import read_text_input
from tuneadvisor.workspace.readers.base import Gathering, Reader


def _read(state: Gathering) -> None:
    from tuneadvisor.advisor.measured_allocation import ran_differently
    from tuneadvisor.slurm.accounting.as_run import as_run_facts
    from tuneadvisor.slurm.client.scontrol import ScontrolError, parse_job

    path = state.inputs.scontrol
    assert path is not None
    try:
        shown = parse_job(read_text_input(path, "scontrol output"))
    except ScontrolError as exc:
        raise InputError(path, f"not `scontrol show job -o` output: {exc}") from None
    as_run = as_run_facts(shown, None)
    state.notes += ran_differently(state.facts, as_run)
    state.facts.update(as_run)


READER = Reader(
    "scontrol show job output", _read, given=lambda state: state.inputs.scontrol is not None
)
