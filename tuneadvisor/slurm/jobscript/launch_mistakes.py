"""job.* facts of mistakes in how the job script starts its training, read from the job
script alone: a launch started in the background that nothing waits for, an ``--array``
past the list its tasks pick from, and the tasks srun starts on each node (to weigh against
the GPUs there without the training script)."""

from __future__ import annotations

from collections.abc import Sequence

from tuneadvisor.slurm.jobscript.array_range import indexed_list, largest_task_id
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.launch_line.background import unwaited_launches
from tuneadvisor.slurm.launch_line.model import LaunchLine
from tuneadvisor.slurm.launch_line.step_tasks import srun_tasks_per_node
from tuneadvisor.slurm.options import parse_count

__all__ = ["launch_mistake_facts"]

_SHOWN = 3  # launches named in the text; the count says how many


def launch_mistake_facts(
    job: JobScript, launch: LaunchLine | None, launches: Sequence[LaunchLine] | None = None
) -> dict[str, object]:
    facts: dict[str, object] = {}
    if launches is None:
        from tuneadvisor.slurm.launch_line.search import find_launches

        launches = find_launches(job)
    unwaited = unwaited_launches(job, launches)
    facts["job.background_launches"] = len(unwaited)
    if unwaited:
        texts = [f"line {item.line}: {' '.join(item.text.split())}" for item in unwaited]
        more = f" and {len(texts) - _SHOWN} more" if len(texts) > _SHOWN else ""
        facts["job.background_launch.lines"] = "; ".join(texts[:_SHOWN]) + more
    facts.update(_array_facts(job))
    req = job.request()
    facts["job.ntasks_per_gpu"] = _ntasks_per_gpu(job)
    srun_tasks = srun_tasks_per_node(launch, req.node_count) if launch is not None else None
    if srun_tasks is not None:
        facts["job.srun_tasks_per_node"] = srun_tasks
    return facts


def _ntasks_per_gpu(job: JobScript) -> int:
    """--ntasks-per-gpu; 0 when not given. One sbatch refuses (invalid-directive says so)
    counts as given: the user asked for tasks to share GPUs."""
    value = job.directives().get("ntasks-per-gpu")
    if value is None:
        return 0
    try:
        return parse_count(value, name="ntasks-per-gpu")
    except ValueError:
        return 1


def _array_facts(job: JobScript) -> dict[str, object]:
    """The largest array task id and the literal list the tasks index, when both read."""
    value = job.directives().get("array")
    largest = largest_task_id(value) if value is not None else None
    listed = indexed_list(job) if largest is not None else None
    if largest is None or listed is None:
        return {}
    return {
        "job.array.max_task_id": largest,
        "job.array.list_size": listed.size,
        "job.array.list_offset": listed.offset,
        "job.array.list": f"{listed.name} (line {listed.line}, {listed.size} elements)",
    }
