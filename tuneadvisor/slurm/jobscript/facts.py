"""job.* facts of a job script as sbatch applies it, with its launch line, and what the
report says about the script besides findings (which launch is read, site plugins' options,
quotes bash would refuse)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from tuneadvisor.numbers import ascii_int
from tuneadvisor.slurm.jobscript.cpu_binding import binding_facts
from tuneadvisor.slurm.jobscript.launch_mistakes import launch_mistake_facts
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.jobscript.plugins import plugin_option
from tuneadvisor.slurm.jobscript.problem_facts import directive_problem_facts
from tuneadvisor.slurm.jobscript.syntax import DIRECTIVE_AFTER_COMMAND, SITE_PLUGIN_OPTION
from tuneadvisor.slurm.jobscript.tuned_from import read_tuned_from
from tuneadvisor.slurm.launch_line.lexing import unclosed_quote
from tuneadvisor.slurm.launch_line.model import LaunchLine
from tuneadvisor.slurm.units import INT_MAX, gpu_count


def job_facts(
    job: JobScript, launch: LaunchLine | None, launches: Sequence[LaunchLine] | None = None
) -> dict[str, object]:
    req = job.request()
    facts: dict[str, object] = {}
    invalid_options = {p.option for p in job.problems if p.id == "invalid-directive"}
    # sbatch refuses an unreadable --cpus-per-task; "1" would be a guess that rules then
    # double ("2 cores") while the user meant 72. Absent: invalid-directive says what to fix.
    # --exclusive without a core count: the task has the node's cores, a number the script
    # does not say (sinfo, the site file or accounting may): not 1, which rules would cut to.
    whole_node = req.exclusive == "exclusive" and req.cpus_per_task is None
    if whole_node and req.cpus_per_gpu is None:
        facts["job.exclusive_cores_unknown"] = True
    elif "cpus-per-task" not in invalid_options:
        # --cpus-per-gpu counts too: 8 GPUs x 4 is 32 cores for a one-task job, not 1.
        facts["job.cpus_per_task"] = req.task_cpus
    mem_mib = req.node_mem_mib  # from --mem, --mem-per-cpu or --mem-per-gpu
    if mem_mib is not None:
        facts["job.mem_mib"] = float(mem_mib)
    if req.mem_per_cpu_mib:
        facts["job.mem_per_cpu_mib"] = float(req.mem_per_cpu_mib)
    if req.time_limit is not None and req.time_limit.seconds is not None:
        facts["job.time_s"] = req.time_limit.seconds
    facts["job.nodes"] = req.node_count
    if req.ntasks_per_node is not None:
        facts["job.ntasks_per_node"] = req.ntasks_per_node
    facts["job.ntasks"] = req.ntasks or req.tasks_total
    facts["job.tasks_total"] = req.tasks_total
    facts["job.tasks_per_node"] = req.tasks_per_node
    facts["job.gpus"] = req.node_gpus or 0
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
    ignored = [p for p in job.problems if p.id == DIRECTIVE_AFTER_COMMAND and p.line]
    facts["job.ignored_directives"] = len(ignored)
    if ignored:
        facts["job.ignored_directive.lines"] = _lines_text(job, [p.line or 0 for p in ignored])
    facts.update(directive_problem_facts(job))
    ranks: int | None = 1  # no launch line read: one process, as a plain `python` runs
    if launch is not None:
        facts["job.launcher"] = _rank_launcher(launch)
        facts["job.task_launcher"] = any(
            launcher.name in _TASK_LAUNCHERS for launcher in launch.launchers
        )
        ranks = _ranks_per_task(launch, req.node_gpus or 0)
        facts.update(binding_facts(job, launch))  # srun's cores, OMP_NUM_THREADS
        if facts.get("job.exclusive_cores_unknown") is True:
            # no --cpus-per-task, so no SLURM_CPUS_PER_TASK for srun to lose or to export
            facts.pop("job.srun_cpus_unset", None)
    if ranks is not None:
        facts["job.ranks_per_task"] = ranks
    # launched in the background, an array past its list, srun's tasks per node
    facts.update(launch_mistake_facts(job, launch, launches))
    stamp = read_tuned_from(job)  # what an earlier apply tuned it from
    if stamp is not None:
        facts.update(stamp.facts())
    return facts


def job_notes(
    job: JobScript, launches: Sequence[LaunchLine] = (), launch: LaunchLine | None = None
) -> list[str]:
    """What the report says about the script besides findings: which of several Python
    launches is read as the training, options of site plugins (checked by that site's
    sbatch, not here) and a script bash would not run at all."""
    notes: list[str] = []
    if launch is not None and len(launches) > 1:
        seen = ", ".join(f"{_target(other)} (line {other.line})" for other in launches)
        notes.append(
            f"the job runs {len(launches)} Python programs: {seen}; {_target(launch)} (line "
            f"{launch.line}) is read as the training, the others as side steps: give --script "
            "to read another"
        )
    by_plugin: dict[str, list[str]] = {}
    for problem in job.problems:
        known = plugin_option(problem.option or "")
        if problem.id == SITE_PLUGIN_OPTION and known is not None:
            by_plugin.setdefault(known.plugin, []).append(f"--{known.name}")
    for plugin, options in by_plugin.items():
        what = "an option" if len(options) == 1 else "options"
        notes.append(
            f"{', '.join(options)}: {what} of {plugin}, a site plugin to sbatch; that "
            "site's sbatch checks them, not tuneadvisor"
        )
    unclosed = unclosed_quote([(line.number, line.text) for line in job.lines])
    if unclosed is not None:
        at, since, quote = unclosed
        notes.append(
            f"bash cannot run this script: bash -n would refuse it (line {at}: unexpected "
            f"EOF while looking for matching `{quote}'); the quotes pair up wrongly from "
            f"line {since} on, so the commands after it are not what they look like"
        )
    return notes


def _target(launch: LaunchLine) -> str:
    return launch.script if launch.script is not None else f"-m {launch.module}"


def _lines_text(job: JobScript, numbers: list[int], shown: int = 3) -> str:
    """``lines 6-13: #SBATCH -p x; #SBATCH --nodes=2; ... and 5 more``: every line number
    (as ranges), the first few lines as written."""
    ranges: list[list[int]] = []
    for number in numbers:
        if ranges and number == ranges[-1][1] + 1:
            ranges[-1][1] = number
        else:
            ranges.append([number, number])
    where = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)
    label = "line" if len(numbers) == 1 else "lines"
    texts = "; ".join(job.lines[n - 1].text.strip() for n in numbers[:shown])
    more = f" and {len(numbers) - shown} more" if len(numbers) > shown else ""
    return f"{label} {where}: {texts}{more}"


# Launchers that start the ranks themselves (one per GPU), as slurm/launch_line names them.
_SPAWNERS = (
    "torchrun",
    "python -m torch.distributed.run",
    "python -m torch.distributed.launch",
    "accelerate launch",
    "deepspeed",
    "lightning run model",
    "fabric run",
)


# Programs that start the job's tasks (one process per task).
_TASK_LAUNCHERS = frozenset({"srun", "mpirun", "mpiexec", "orterun", "prterun"})
# Each spawner's option for the processes it starts on a node; None: per job (accelerate).
_NPROC_OPTIONS = {
    "torchrun": ("--nproc-per-node", "--nproc_per_node"),
    "python -m torch.distributed.run": ("--nproc-per-node", "--nproc_per_node"),
    "python -m torch.distributed.launch": ("--nproc-per-node", "--nproc_per_node"),
    "deepspeed": ("--num_gpus", "--num-gpus"),
    "accelerate launch": ("--num_processes", "--num-processes"),
}
# Values that mean "one process per GPU of the node".
_PER_GPU = re.compile(r"gpu|auto|\$\{?SLURM_GPUS_(ON_NODE|PER_NODE)\}?")


def _ranks_per_task(launch: LaunchLine, node_gpus: int) -> int | None:
    """Training processes each task starts: a spawner's process count (torchrun's
    --nproc-per-node, 1 by default; deepspeed's --num_gpus, every GPU by default); 1 without
    a spawner; None when the count cannot be read (a variable, accelerate's config file)."""
    spawner = next(
        (launcher for launcher in reversed(launch.launchers) if launcher.name in _SPAWNERS),
        None,
    )
    if spawner is None:
        return 1
    names = _NPROC_OPTIONS.get(spawner.name)
    if names is None:
        return None
    options = spawner.options
    value = next((options[name] for name in names if name in options), None)
    if value is None:
        if spawner.name == "deepspeed":
            return node_gpus or None
        return 1 if spawner.name != "accelerate launch" else None
    value = value.strip("'\"")
    count = ascii_int(value)
    if count is not None and 1 <= count <= INT_MAX:  # a launcher's count is a C int
        if spawner.name == "accelerate launch":  # all machines' processes: per node
            machines = options.get("--num_machines", options.get("--num-machines", "1"))
            per = ascii_int(machines)
            return math.ceil(count / per) if per else None  # 0 machines: no count at all
        return count
    if _PER_GPU.fullmatch(value) and node_gpus:
        return node_gpus
    return None


def _rank_launcher(launch: LaunchLine) -> str:
    """Who starts the training processes: `srun torchrun ...` is torchrun's (srun starts one
    torchrun per task), `srun kernprof ...` is srun's; "python" without a launcher."""
    names = [launcher.name for launcher in launch.launchers]
    spawner = next((name for name in reversed(names) if name in _SPAWNERS), None)
    return spawner or (names[0] if names else "python")
