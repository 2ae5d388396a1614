"""sacct.*: saved `sacct --json` output (--sacct), else the live job's accounting; then the
GPU figures of the accounting (jobstats' summary, the GPU TRES), which ``metrics`` weighs
against the metrics files."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tuneadvisor.errors import InputError
from tuneadvisor.files import read_text_input
from tuneadvisor.workspace.gpu_source import accounting_gpu_of
from tuneadvisor.workspace.readers.base import Gathering, Reader

if TYPE_CHECKING:
    from tuneadvisor.slurm.accounting.sacct.records import SacctJob


def _read(state: Gathering) -> None:
    inputs = state.inputs
    if inputs.sacct is not None:
        state.accounting = _read_file(state, inputs.sacct, inputs.jobid)
    elif state.live is not None:
        state.accounting = state.live.accounting
    if inputs.seff is None and inputs.sacct is None and state.live is None:
        state.sharpen.append("Slurm accounting of the finished job (--seff or --sacct)")
    gpu_read = accounting_gpu_of(state.accounting, state.notes, inputs.sacct)
    if gpu_read is not None:  # jobstats' per-node figures feed usage.*
        state.facts.update({k: v for k, v in gpu_read.facts.items() if not k.startswith("gpu.")})
    state.gpu_read = gpu_read


def _read_file(state: Gathering, path: str, jobid: str | None) -> SacctJob:
    from tuneadvisor.slurm.accounting.sacct import parse_sacct
    from tuneadvisor.slurm.accounting.sacct.records import SacctError, select_job

    try:
        jobs = parse_sacct(read_text_input(path, "sacct output"))
    except SacctError as exc:
        raise InputError(path, f"not sacct output: {exc}") from None
    try:  # sacct output, but which job of it is meant is not clear
        accounting = select_job(jobs, jobid)
    except SacctError as exc:
        raise InputError(path, str(exc)) from None
    state.facts.update(accounting.facts())
    return accounting


READER = Reader("sacct output", _read)
