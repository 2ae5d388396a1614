"""Every input of ``gather``, in order: a later reader's facts override an earlier one's, and
a reader may use what one before it left in the state. Adding an input is a module in this
folder and one line here (docs/ARCHITECTURE.md, "Add an input")."""

from __future__ import annotations

from tuneadvisor.workspace.readers import (
    derived,
    job_log,
    job_script,
    live_job,
    metrics,
    probe,
    profile,
    run_record,
    sacct,
    scontrol,
    seff,
    site,
    traces,
    training_script,
)
from tuneadvisor.workspace.readers.base import Reader

READERS: tuple[Reader, ...] = (
    profile.READER,
    traces.READER,
    live_job.READER,
    job_script.READER,
    scontrol.READER,  # the job as it ran (a saved record) over the script's #SBATCH lines
    live_job.AS_RUN,  # sbatch's command line wins over the script's #SBATCH lines
    training_script.READER,  # after the job script: its launch line names the script
    seff.READER,
    sacct.READER,  # after seff: sacct's figures win; its GPU figures are weighed by metrics
    job_log.READER,
    derived.USAGE,
    metrics.READER,
    probe.READER,
    derived.STAMP,
    run_record.READER,
    derived.ALLOCATION,  # every input that says what the run was given is read by now
    site.READER,  # after the job script and the live job: the partition
    derived.EXCLUSIVE_CORES,  # after accounting and the site's node: their core counts
    derived.SLURM_RELEASE,
    derived.OTHER_PROGRAM,
)
