"""The one request of every evidence-reading command: the inputs named on the command line
(paths only; nothing is read until the session loads them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Inputs:
    profiles: tuple[str, ...] = ()
    job: str | None = None
    source_roots: tuple[str, ...] = ()
    script: str | None = None
    metrics: tuple[str, ...] = ()
    metrics_columns: str | None = None  # the --query-gpu list of noheader nvidia-smi logs
    seff: str | None = None
    sacct: str | None = None
    jobid: str | None = None  # with --sacct: which job of the file; alone: ask Slurm
    site: str | None = None
    rules: tuple[str, ...] = ()
    cluster: bool = False  # node shapes from the cluster (sinfo) when there is no site file
    logs: tuple[str, ...] = ()  # the job's output logs (--log), read for why it died
    probe: str | None = None  # a bundled script's --probe file: probe.* facts

    def is_empty(self) -> bool:
        return not (self.profiles or self.job or self.script or self.metrics or self.seff
                    or self.sacct or self.jobid or self.logs or self.probe)  # fmt: skip

    @property
    def live(self) -> bool:
        """--jobid without a saved sacct file: Slurm itself is asked about the job."""
        return self.jobid is not None and self.sacct is None
