"""The allocation the evidence was measured under (``alloc.*``), apart from what the job
script asks for now (``job.*``).

A seff, a sacct record, a watch recording or a run record describes one run; the rules
compute their suggestions from that run's cores and memory, so applying the same evidence to
a script already changed gives the same script again instead of doubling it once more. Where
the script now asks for something else, one note says so.

Sources, most direct first: what a recording or a run record says the run was given
(``job.cpus_per_task`` of a recording's header, a run record's settings), then sacct's
allocation, then seff's, then (nothing measured) the job script itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tuneadvisor.advisor.expressions import mem_text


@dataclass(frozen=True)
class Measured:
    """What one input says the run was given: ``source`` names it in notes ("this
    recording"), the values are per task (cores) and per node (memory)."""

    source: str
    cpus_per_task: int | None = None
    mem_mib: float | None = None
    workers: int | None = None  # DataLoader workers seen or set


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def _tasks(facts: Mapping[str, object]) -> int:
    tasks = _number(facts.get("job.tasks_total"))
    return int(tasks) if tasks else 1


def _per_task(total: float | None, facts: Mapping[str, object]) -> int | None:
    """The job's cores as cores per task (seff and sacct count every task's)."""
    if total is None:
        return None
    return max(1, int(total) // _tasks(facts))


def from_accounting(facts: Mapping[str, object]) -> list[Measured]:
    """sacct's allocation, then seff's: cores per task, memory per node."""
    out = []
    nodes = _number(facts.get("sacct.alloc_nodes")) or 1.0
    req = _number(facts.get("sacct.req_mem_mib"))
    cores = _per_task(_number(facts.get("sacct.alloc_cpus")), facts)
    if cores or req:
        out.append(Measured("this sacct record", cores, req / nodes if req else None))
    seff_nodes = _number(facts.get("seff.nodes")) or 1.0
    seff_mem = _number(facts.get("seff.mem_requested_mib"))
    seff_cores = _per_task(_number(facts.get("seff.cores")), facts)
    if seff_cores or seff_mem:
        out.append(Measured("this seff", seff_cores, seff_mem / seff_nodes if seff_mem else None))
    return out


def _workers_now(facts: Mapping[str, object], cores: int | None) -> int | None:
    """The workers the training script starts with ``cores`` cores per task, as the scan
    reads it: a number written down, or SLURM_CPUS_PER_TASK (less one when it says so)."""
    source = facts.get("script.num_workers.source")
    value = facts.get("script.num_workers")
    if source == "literal" and isinstance(value, int):
        return value
    if cores is None:
        return None
    if source == "slurm_env":
        expr = str(facts.get("script.num_workers.expr") or "")
        return max(0, cores - 1) if re.search(r"-\s*1\b", expr) else cores
    if facts.get("script.num_workers.passed_source") == "slurm_env":
        passed = str(facts.get("script.num_workers.passed") or "")
        return cores if "SLURM_CPUS_PER_TASK" in passed else None
    return None


def recorded_allocation(facts: Mapping[str, object], digest: str | None) -> Measured | None:
    """What the script's `# tuneadvisor: tuned from` line says the evidence was measured
    under, when the evidence given now is that evidence (``digest`` is its digest): a profile
    alone applied again to the script it tuned is read as of the run it measured, not of the
    script's new request (which would double the cores at every apply). Other evidence (a
    new profile) is measured under the script as it is."""
    if digest is None or facts.get("job.tuned_from.digest") != digest:
        return None
    cores, mem = facts.get("job.tuned_from.cpus_per_task"), facts.get("job.tuned_from.mem_mib")
    workers = facts.get("job.tuned_from.workers")
    return Measured(
        "the evidence this script was tuned from",
        cores if isinstance(cores, int) else None,
        _number(mem),
        workers if isinstance(workers, int) else None,
    )


def allocation_facts(
    facts: Mapping[str, object],
    measured: Sequence[Measured] = (),
    recorded: Sequence[Measured] = (),
) -> tuple[dict[str, object], list[str]]:
    """``alloc.*`` facts and the note where the script now differs from the measured run.

    ``measured``: what recordings and run records said, before accounting's view;
    ``recorded``: what the script says its evidence had (``recorded_allocation``), after it
    (an allocation the evidence states itself is the more direct)."""
    sources = [*measured, *from_accounting(facts), *recorded]
    cores_from = next((m for m in sources if m.cpus_per_task), None)
    mem_from = next((m for m in sources if m.mem_mib), None)
    out: dict[str, object] = {}
    notes: list[str] = []
    now_cores = facts.get("job.cpus_per_task")
    now_mem = facts.get("job.mem_mib")
    cores: int | None = None
    if cores_from is not None and cores_from.cpus_per_task:
        cores = cores_from.cpus_per_task
        out["alloc.cpus_per_task"] = cores
        if isinstance(now_cores, int) and now_cores != cores:
            notes.append(
                f"{cores_from.source} is of a {_cores(cores)} run; the job script now asks for "
                f"{now_cores} {'core' if now_cores == 1 else 'cores'}: the advice is computed "
                "from the run that was measured"
            )
    elif isinstance(now_cores, int):
        cores = now_cores
        out["alloc.cpus_per_task"] = now_cores
    if mem_from is not None and mem_from.mem_mib:
        out["alloc.mem_mib"] = mem_from.mem_mib
        if isinstance(now_mem, int | float) and abs(now_mem - mem_from.mem_mib) >= 1:
            notes.append(
                f"{mem_from.source} is of a run with {mem_text(mem_from.mem_mib)} of memory; "
                f"the job script now asks for {mem_text(now_mem)}"
            )
    elif isinstance(now_mem, int | float):
        out["alloc.mem_mib"] = float(now_mem)
    workers = next((m.workers for m in sources if m.workers is not None), None)
    if workers is None:
        seen = facts.get("host.proc.workers.max")
        workers = seen if isinstance(seen, int) else _workers_now(facts, cores)
    if workers is not None:
        out["alloc.workers"] = workers
    return out, notes


def _cores(n: int) -> str:
    return f"{n}-core"


# The script and Slurm's record of the same job are two inputs: comparing them is the
# advisor's, as comparing the measured run with the script is.
_OPTIONS = {  # job.* fact -> the sbatch option and unit it comes from
    "job.time_s": ("--time", " s"),
    "job.partition": ("--partition", ""),
    "job.cpus_per_task": ("--cpus-per-task", ""),
    "job.mem_mib": ("--mem", " MiB"),
    "job.mem_per_cpu_mib": ("--mem-per-cpu", " MiB"),
    "job.nodes": ("--nodes", ""),
    "job.tasks_per_node": ("--ntasks-per-node", ""),
}


def ran_differently(script: Mapping[str, object], as_run: Mapping[str, object]) -> list[str]:
    """Notes for options the job ran with that its script does not say (sbatch's command
    line wins over #SBATCH lines). Facts derived from options (the tasks in all) follow
    silently."""
    notes = []
    for name, value in as_run.items():
        if name in script and name in _OPTIONS and script[name] != value:
            option, unit = _OPTIONS[name]
            notes.append(
                f"the job ran with {option} {_text(value)}{unit} where its script says "
                f"{_text(script[name])}{unit} (sbatch's command line wins): the advice uses "
                "what it ran with"
            )
    return notes


def _text(value: object) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)
