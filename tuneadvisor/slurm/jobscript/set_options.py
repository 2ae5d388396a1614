"""A plan's sbatch values written into a job script: each option set where it takes effect
(or added), a value sbatch would refuse left out with a note, and never next to an option
sbatch refuses with it: cores go where the script sizes them (``--cpus-per-gpu``), and an
option that excludes the one written (another memory option) is dropped, with a note."""

from __future__ import annotations

from collections.abc import Mapping

from tuneadvisor.numbers import is_ascii_digits
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.options import MEMORY_OPTIONS, conflicting_with
from tuneadvisor.slurm.units import render_memory

MEMORY_OPTIONS_SET = frozenset(MEMORY_OPTIONS)


def with_options(job: JobScript, values: Mapping[str, str], notes: list[str]) -> JobScript:
    """``job`` with each ``--option=value`` of ``values`` (long names), in their order."""
    memory_before = job.request().node_mem_mib
    for option, value in values.items():
        if option == "cpus-per-task" and job.directive("cpus-per-gpu") is not None:
            job = _cores_per_gpu(job, value, notes)
            continue
        try:
            job = job.with_directive(option, value)
        except ValueError as exc:  # a value sbatch would refuse: say so, keep the rest
            notes.append(f"--{option}={value} not written: {exc}")
            continue
        job = _without_conflicts(job, option, f"--{option}={value}", notes)
    if memory_before is not None and not MEMORY_OPTIONS_SET & set(values):
        job = _memory_kept(job, memory_before, notes)
    return job


def _memory_kept(job: JobScript, before: int, notes: list[str]) -> JobScript:
    """The node's memory as it was where the plan left it (it judged it enough) but the
    script sizes it per core: --mem-per-cpu=4G times the plan's 4 cores instead of 1 would
    ask for 16G (more than the node may have), and fewer cores for less than the run needs."""
    after = job.request().node_mem_mib
    if after is None or after == before:
        return job
    mem = render_memory(before)
    job = job.with_directive("mem", mem)
    for other in sorted(conflicting_with("mem")):
        if job.directive(other) is not None:
            job = job.without_directive(other)
            notes.append(
                f"--{other} replaced by --mem={mem}: the node's memory as before, not "
                f"{render_memory(after)} with the new core count"
            )
    return job


def _cores_per_gpu(job: JobScript, value: str, notes: list[str]) -> JobScript:
    """The plan's cores per task in a script that sizes cores with --cpus-per-gpu (sbatch
    refuses both): --cpus-per-gpu with the same cores per task where they split evenly over
    the node's GPUs, else --cpus-per-task in its place."""
    request = job.request()
    gpus, tasks = request.node_gpus or 0, request.tasks_per_node
    cores = int(value) if is_ascii_digits(value) else 0
    both = job.directive("cpus-per-task") is not None  # sbatch refused the script as given
    if gpus and cores and (cores * tasks) % gpus == 0 and not both:
        per_gpu = str(cores * tasks // gpus)
        try:
            written = job.with_directive("cpus-per-gpu", per_gpu)
        except ValueError as exc:
            notes.append(f"--cpus-per-gpu={per_gpu} not written: {exc}")
            return job
        if int(per_gpu) != request.cpus_per_gpu:
            notes.append(
                f"--cpus-per-gpu={per_gpu} written for {cores} cores per task: the script "
                "sizes cores per GPU, and sbatch refuses --cpus-per-task next to it"
            )
        return written
    job = job.without_directive("cpus-per-gpu")
    try:
        job = job.with_directive("cpus-per-task", value)
    except ValueError as exc:
        notes.append(f"--cpus-per-task={value} not written: {exc}")
        return job
    why = (
        "the script has both"
        if both
        else f"{value} cores per task do not split evenly over {gpus or 'no'} GPUs"
    )
    notes.append(
        f"--cpus-per-gpu removed: --cpus-per-task={value} replaces it ({why}), and sbatch "
        "refuses the two together"
    )
    return job


def _without_conflicts(job: JobScript, option: str, written: str, notes: list[str]) -> JobScript:
    """``job`` without the options sbatch refuses next to ``option`` (one memory option)."""
    for other in sorted(conflicting_with(option)):
        if job.directive(other) is not None:
            job = job.without_directive(other)
            notes.append(f"--{other} removed: {written} replaces it")
    return job


def with_unix_line_breaks(job: JobScript) -> JobScript:
    """sbatch refuses CRLF scripts: the same script with LF line ends."""
    return JobScript.parse(job.render_text().replace("\r\n", "\n"), job.path)
