"""Steps that read no input of their own: facts the advisor derives across the inputs read
before them (usage.*, alloc.*, the Slurm release's), and the evidence stamp. They sit in
``registry.READERS`` where what they combine has been read."""

from __future__ import annotations

from tuneadvisor.advisor.evidence import usage_facts
from tuneadvisor.advisor.fact_view import view
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


def _exclusive_cores(state: Gathering) -> None:
    """An ``--exclusive`` job without --cpus-per-task has its nodes' cores: as accounting
    counted them, else the node's (site file or sinfo) over its tasks; never a default
    node's, and never 1. Unknown, no rule judges its cores, and the report says so."""
    facts = state.facts
    v = view(facts)
    cores = v.alloc.cpus_per_task
    per_task = v.job.tasks_per_node or 1
    described = v.node.assumed is not True  # a site file's or sinfo's node
    if cores is None and v.node.cores is not None and described:
        cores = v.node.cores // per_task if v.node.cores >= per_task else None
    if cores is not None and cores > 0:
        facts["job.cpus_per_task"] = cores
        facts.setdefault("alloc.cpus_per_task", cores)
        facts["job.exclusive_cores_unknown"] = False
        return
    state.cannot_read(
        "--exclusive",
        "each task has its node's cores, how many is not known here (no site file, Slurm "
        "not asked, no accounting): no finding about cores or workers is judged; --site, "
        "--cluster or the job's sacct gives the count",
    )


def _other_program(state: Gathering) -> None:
    """A profile read whole that is of another program: it says nothing of the job's."""
    state.cannot_read(
        "the profile",
        "it is of another program than the job's training script, so it says nothing about "
        "that script's lines",
    )


# srun --version answers from the binary, no daemon: a few seconds at most where it is there
_VERSION_TIMEOUT_S = 10.0


def _slurm_release(state: Gathering) -> None:
    """Where srun starts the tasks without its cores: the Slurm release (srun's own, asked
    when a cluster is, or where srun is on the PATH) and what it means for them
    (advisor/slurm_release.py)."""
    import shutil  # here: with bz2 and lzma, ~2 ms of every report's start

    from tuneadvisor.advisor.slurm_release import release_facts

    client = state.client
    asked = client is not None  # a cluster the user named: its failure is worth a note
    if client is None and shutil.which("srun", path=state.env.get("PATH")) is not None:
        from tuneadvisor.slurm.client import SlurmClient

        client = SlurmClient(env=state.env, timeout_s=_VERSION_TIMEOUT_S)
    if client is not None:
        from tuneadvisor.slurm.client import SlurmError
        from tuneadvisor.slurm.client.version import version_facts

        try:
            state.facts.update(version_facts(client.version("srun")))
        except SlurmError as exc:  # unasked, the finding's title says the version is assumed
            if asked:
                state.cannot_read("the Slurm release", exc.one_line())
    state.facts.update(release_facts(state.facts))


USAGE = Reader("usage", _usage)
STAMP = Reader("evidence stamp", _stamp, given=lambda state: state.job.job is not None)
ALLOCATION = Reader("allocation", _allocation)
EXCLUSIVE_CORES = Reader(
    "exclusive cores",
    _exclusive_cores,
    given=lambda state: (
        state.facts.get("job.exclusive_cores_unknown") is True
        and "job.cpus_per_task" not in state.facts
    ),
)
OTHER_PROGRAM = Reader(
    "profile of another program",
    _other_program,
    given=lambda state: state.facts.get("profile.other_program") is True,
)
SLURM_RELEASE = Reader(
    "Slurm release", _slurm_release, given=lambda state: "job.srun_cpus_unset" in state.facts
)
