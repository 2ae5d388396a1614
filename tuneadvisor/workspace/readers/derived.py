"""Steps that read no input of their own: facts the advisor derives across the inputs read
before them (usage.*, alloc.*, the Slurm release's), and the evidence stamp. They sit in
``registry.READERS`` where what they combine has been read."""

from __future__ import annotations

from tuneadvisor.advisor.evidence import usage_facts
from tuneadvisor.advisor.measured_allocation import allocation_facts, recorded_allocation
from tuneadvisor.workspace.readers.base import Gathering, Reader


def _usage(state: Gathering) -> None:
    """usage.*: sacct, else seff (advisor/evidence.py)."""
    usage_facts(state.facts, state.notes)


def _stamp(state: Gathering) -> None:
    """What the evidence is, for the tuned script's `# tuneadvisor: tuned from` line and to
    recognise that line's evidence; none without a job script (nothing to tune or to read)."""
    from tuneadvisor.workspace.evidence_stamp import evidence_stamp

    state.stamp = evidence_stamp(state.inputs)


def _allocation(state: Gathering) -> None:
    """alloc.*: what the measured run was given (recordings, then run records, then
    accounting, then what the script says this same evidence had)."""
    stamp = state.stamp
    recorded = recorded_allocation(state.facts, stamp.digest if stamp else None)
    alloc, notes = allocation_facts(state.facts, state.measured, [recorded] if recorded else [])
    state.facts.update(alloc)
    state.notes += notes


def _slurm_release(state: Gathering) -> None:
    """Where srun starts the tasks without its cores: the Slurm release (srun's own, asked
    when a cluster is) and what it means for them (advisor/slurm_release.py)."""
    from tuneadvisor.advisor.slurm_release import release_facts

    if state.client is not None:
        from tuneadvisor.slurm.client import SlurmError
        from tuneadvisor.slurm.client.version import version_facts

        try:
            state.facts.update(version_facts(state.client.version("srun")))
        except SlurmError as exc:
            state.cannot_read("the Slurm release", exc.one_line(), note=False)
            state.notes.append(f"Slurm version unknown: {exc.one_line()}")
    state.facts.update(release_facts(state.facts))


USAGE = Reader("usage", _usage)
STAMP = Reader("evidence stamp", _stamp, given=lambda state: state.job.job is not None)
ALLOCATION = Reader("allocation", _allocation)
SLURM_RELEASE = Reader(
    "Slurm release", _slurm_release, given=lambda state: "job.srun_cpus_unset" in state.facts
)
