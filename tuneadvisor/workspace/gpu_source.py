"""Where the GPU figures come from: the metrics' samples when they have GPUs, else the
ended job's accounting (jobstats' summary, Slurm's GPU TRES); a site's seff GPU lines are said
but kept from the GPU rules. The report's notes say which source was used."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tuneadvisor.metrics.model import MetricsSeries
    from tuneadvisor.slurm.accounting.sacct.gpu import AccountingGpu
    from tuneadvisor.slurm.accounting.sacct.records import SacctJob
    from tuneadvisor.slurm.accounting.seff import SeffReport


def accounting_gpu_of(
    job: SacctJob | None, notes: list[str], where: str | None = None
) -> AccountingGpu | None:
    """GPU figures in an ended job's accounting (jobstats' AdminComment, Slurm's GPU TRES);
    a running job has neither yet (its sstat figures are a note of live_job). ``where``:
    the sacct file read, named by the one line a summary past its bound is (None: Slurm's
    own accounting of the job)."""
    from tuneadvisor.slurm.states import UNFINISHED

    if job is None or job.state is None or job.state in UNFINISHED:
        return None
    from tuneadvisor.errors import InputError
    from tuneadvisor.slurm.accounting.jobstats import JobstatsTooLarge
    from tuneadvisor.slurm.accounting.sacct.gpu import accounting_gpu

    try:
        found, problems = accounting_gpu(job)
    except JobstatsTooLarge as exc:
        said = f"job {job.job_id}: {exc}"
        raise InputError(where, said if where else f"the accounting of {said}") from None
    notes += problems
    return found


def choose_gpu_source(
    facts: dict[str, object],
    metrics: MetricsSeries | None,
    accounting: AccountingGpu | None,
    notes: list[str],
) -> None:
    """gpu.* from the metrics when they have GPUs (samples), else from the accounting; the
    report says which, and which kind of figure they are (utilization, SM activity)."""
    from tuneadvisor.metrics.figures import UTILIZATION

    if metrics is not None and metrics.gpus:
        facts["gpu.source"] = metrics.source or "metrics"
        notes.append(figures_note(metrics, f"{metrics.source or 'metrics'} samples"))
        if accounting is not None and "gpu.count" in accounting.facts:
            notes.append(
                f"GPU: from the {metrics.source or 'metrics'} samples; {accounting.label}"
                f" also has {accounting.summary}"
            )
        return
    if accounting is None:
        return
    if "gpu.source" in accounting.facts:
        facts.update({k: v for k, v in accounting.facts.items() if k.startswith("gpu.")})
        notes.append(
            f"GPU: from {accounting.label}: {accounting.summary} ({UTILIZATION}, no SM "
            "activity: the SM-level rules are not judged)"
        )
    else:  # a CPU job's jobstats summary: its cores and memory
        notes.append(f"CPU and memory: from {accounting.label}: {accounting.summary}")


def seff_gpu_note(seff: SeffReport) -> str:
    """A site's seff GPU lines, said but kept from the GPU rules: seff does not say how the
    figure was taken (Slurm's gres/gpuutil is a last reading, not a mean over the run)."""
    said = []
    if seff.gpu_util_pct is not None:
        said.append(f"GPU utilisation {seff.gpu_util_pct:g} %")
    if seff.gpu_mem_used_mib is not None:
        total = f" of {seff.gpu_mem_total_mib:,.0f} MiB" if seff.gpu_mem_total_mib else ""
        said.append(f"GPU memory {seff.gpu_mem_used_mib:,.0f} MiB{total}")
    return (
        f"this site's seff prints {' and '.join(said)}; seff does not say how it was sampled, "
        "so the GPU rules do not rest on it (give --metrics, or the job's accounting with "
        "jobstats)"
    )


# The SM-level rules: they read SM, tensor or DRAM activity, never utilization alone.
SM_LEVEL_RULES = "busy-but-underused, tensor-cores-idle, memory-bandwidth-bound"


def figures_note(series: MetricsSeries, source: str) -> str:
    """The report's note on which kind of GPU figure the metrics hold, and what follows."""
    from tuneadvisor.metrics.figures import SM_ACTIVITY, UTILIZATION, has_activity

    if has_activity(series):
        return (
            f"GPU figures from the {source}: {UTILIZATION} and {SM_ACTIVITY} with tensor-pipe "
            "and DRAM activity; the SM-level rules read the second"
        )
    return (
        f"GPU figures from the {source}: {UTILIZATION} only, no SM activity: the SM-level "
        f"rules ({SM_LEVEL_RULES}) are not judged (record with `tuneadvisor watch` on a "
        "Hopper or newer GPU, or give a dcgmi dmon log or dcgm-exporter scrape)"
    )
