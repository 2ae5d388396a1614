"""What Slurm itself says about one job (``--jobid`` without a saved ``--sacct`` file), and
the shape of the cluster's nodes, as evidence for the rules.

- the script the job ran (``scontrol write batch_script``, else the copy in accounting);
- its accounting once complete (``sacct --json``, polled: it lags the end) and ``seff``;
- the job as it ran (``scontrol show job``, else accounting): options given to sbatch on
  the command line win over the script's ``#SBATCH`` lines, so ``job.*`` facts take these;
- for a running job, the steps' memory and GPU use so far (``sstat``: MaxRSS, and
  gres/gpuutil, gres/gpumem where Slurm gathers them), as notes: numbers are provisional.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from tuneadvisor.advisor.site import NodeShape
from tuneadvisor.errors import InputError
from tuneadvisor.files import MAX_JOB_SCRIPT
from tuneadvisor.slurm.accounting.as_run import as_run_facts
from tuneadvisor.slurm.accounting.sacct.gpu import accounting_gpu
from tuneadvisor.slurm.accounting.sacct.records import SacctJob
from tuneadvisor.slurm.accounting.seff import SeffReport
from tuneadvisor.slurm.client import SlurmClient, SlurmError, check_job_id
from tuneadvisor.slurm.client.scontrol import JobInfo
from tuneadvisor.slurm.client.sinfo import default_partition, largest
from tuneadvisor.slurm.jobscript.model import JobScript


@dataclass(frozen=True)
class LiveJob:
    job_id: str
    shown: JobInfo | None  # None once slurmctld has forgotten the job
    accounting: SacctJob | None
    seff: SeffReport | None
    script: JobScript | None  # only when asked for
    notes: tuple[str, ...]

    def facts(self) -> dict[str, object]:
        """sacct.* and seff.* facts."""
        facts: dict[str, object] = {}
        if self.seff is not None:
            facts.update(self.seff.facts())
        if self.accounting is not None:
            facts.update(self.accounting.facts())
        return facts

    def as_run(self) -> dict[str, object]:
        return as_run_facts(self.shown, self.accounting)


def fetch_job(client: SlurmClient, job_id: str, want_script: bool) -> LiveJob:
    job_id = check_job_id(job_id)
    notes: list[str] = []
    shown = client.show_job(job_id)
    acct = client.accounting(job_id)
    seff = None
    if shown is None and acct is None:
        raise InputError(None, f"--jobid {job_id}: neither slurmctld nor accounting knows it")
    if shown is not None and shown.active:
        notes.append(f"job {job_id} is {shown.state}: its numbers are provisional")
        if shown.state == "RUNNING":
            notes += _running_note(client, job_id, _gpus(shown, acct))
    else:
        if acct is None or not acct.complete:  # accounting lags the end by seconds
            acct = client.poll_accounting(job_id)
        if acct is not None and not acct.complete:
            notes.append(
                f"the accounting of job {job_id} is not complete yet ({', '.join(acct.missing)}):"
                " numbers may still change"
            )
        seff = client.seff(job_id)
    script = _script(client, job_id, shown, notes) if want_script else None
    return LiveJob(job_id, shown, acct, seff, script, tuple(notes))


def _running_note(client: SlurmClient, job_id: str, gpus: int | None) -> list[str]:
    """Memory and GPU use so far, from sstat (a nicety: no note when sstat cannot say).
    Notes, not facts: a running job's figures are not its run's."""
    try:
        steps = client.step_stats(job_id)
    except SlurmError:
        return []
    if steps is None:
        return []
    notes = []
    if steps.mem_peak_mib is not None:
        notes.append(f"peak memory so far: {steps.mem_peak_mib:.0f} MiB (sstat)")
    gpu, _ = accounting_gpu(replace(steps, alloc_gpus=gpus))
    if gpu is not None:
        notes.append(f"GPU so far: from {gpu.label} (sstat): {gpu.summary}")
    return notes


def _gpus(shown: JobInfo, acct: SacctJob | None) -> int | None:
    if acct is not None and acct.alloc_gpus is not None:
        return acct.alloc_gpus
    return shown.gpus


def _script(
    client: SlurmClient, job_id: str, shown: JobInfo | None, notes: list[str]
) -> JobScript | None:
    text = client.batch_script(job_id)
    if text is None:
        notes.append(f"Slurm no longer has the script of job {job_id}: give it with --job FILE")
        return None
    if len(text.encode("utf-8", "replace")) > MAX_JOB_SCRIPT:
        notes.append(
            f"the script of job {job_id} is larger than {MAX_JOB_SCRIPT // 1024} KiB: not read"
        )
        return None
    # Named as if it sat in the job's working directory: relative paths in the script
    # resolve there, as they did when the job ran.
    name = Path(shown.command).name if shown is not None and shown.command else None
    folder = Path(shown.work_dir) if shown is not None and shown.work_dir else Path.cwd()
    return JobScript.parse(text, folder / (name or f"job-{job_id}.sbatch"))


def cluster_node(client: SlurmClient, partition: str | None, notes: list[str]) -> NodeShape | None:
    """The biggest node of the partition (default: the cluster's default one), from sinfo;
    None, with a note, when Slurm does not answer."""
    try:
        rows = client.partitions()
    except SlurmError as exc:
        notes.append(f"node shape unknown: {exc.one_line()}")
        return None
    name = partition or default_partition(rows)
    row = largest(rows).get(name) if name else None
    if row is None:
        notes.append(f"node shape unknown: sinfo lists no partition {name!r}")
        return None
    return NodeShape(cores=row.cpus, mem_mib=row.mem_mib, gpus=row.gpus, max_time_s=row.max_time_s)
