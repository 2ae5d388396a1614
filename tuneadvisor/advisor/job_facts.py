"""Facts from a job script, as sbatch applies it."""

from __future__ import annotations

import math

from tuneadvisor.slurm.jobscript import JobScript
from tuneadvisor.slurm.launch import LaunchLine
from tuneadvisor.slurm.options import gpu_count


def job_facts(job: JobScript, launch: LaunchLine | None) -> dict[str, object]:
    req = job.request()
    facts: dict[str, object] = {}
    invalid_options = {p.option for p in job.problems if p.id == "invalid-directive"}
    # sbatch refuses an unreadable --cpus-per-task; "1" would be a guess that rules then
    # double ("2 cores") while the user meant 72. Absent: invalid-directive says what to fix.
    if "cpus-per-task" not in invalid_options:
        facts["job.cpus_per_task"] = req.cpus_per_task or 1
    if req.mem_mib:  # 0 means "all of the node": no number to compare with
        facts["job.mem_mib"] = float(req.mem_mib)
    if req.mem_per_cpu_mib:
        facts["job.mem_per_cpu_mib"] = float(req.mem_per_cpu_mib)
        facts.setdefault("job.mem_mib", float(req.mem_per_cpu_mib * (req.cpus_per_task or 1)))
    if req.time_limit is not None and req.time_limit.seconds is not None:
        facts["job.time_s"] = req.time_limit.seconds
    nodes = req.nodes.minimum if req.nodes is not None else 1
    facts["job.nodes"] = nodes
    if req.ntasks_per_node is not None:
        facts["job.ntasks_per_node"] = req.ntasks_per_node
    tasks_total = req.ntasks or nodes * (req.ntasks_per_node or 1)
    facts["job.ntasks"] = req.ntasks or tasks_total
    facts["job.tasks_total"] = tasks_total
    facts["job.tasks_per_node"] = req.ntasks_per_node or math.ceil(tasks_total / max(nodes, 1))
    gpus = req.gpus_on_node
    if gpus is None and req.gpus is not None:
        gpus = math.ceil(gpu_count(req.gpus) / max(nodes, 1))
    if gpus is None and req.gpus_per_task is not None:
        gpus = gpu_count(req.gpus_per_task) * int(facts["job.tasks_per_node"])  # type: ignore[call-overload]
    facts["job.gpus"] = gpus or 0
    if req.gpus_per_task is not None:
        facts["job.gpus_per_task"] = gpu_count(req.gpus_per_task)
    if req.partition:
        facts["job.partition"] = req.partition
    facts["job.dos_line_breaks"] = any(p.id == "dos-line-breaks" for p in job.problems)
    invalid = [p for p in job.problems if p.id == "invalid-directive"]
    facts["job.invalid_directives"] = len(invalid)
    if invalid:
        first = invalid[0]
        where = f"line {first.line}: " if first.line else ""
        facts["job.invalid_directive.first"] = where + first.message
    if launch is not None:
        facts["job.launcher"] = _rank_launcher(launch)
    return facts


# Launchers that start the ranks themselves, also when srun runs them (one per node).
_SPAWNERS = ("torchrun", "python -m torch.distributed.run", "accelerate launch", "deepspeed")


def _rank_launcher(launch: LaunchLine) -> str:
    """Who starts the training processes: `srun torchrun ...` is torchrun's (srun starts one
    torchrun per task), `srun kernprof ...` is srun's; "python" without a launcher."""
    names = [launcher.name for launcher in launch.launchers]
    spawner = next((name for name in reversed(names) if name in _SPAWNERS), None)
    return spawner or (names[0] if names else "python")
