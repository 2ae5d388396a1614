"""A run through sbatch: the job script (the launch line, its profiles, ``tuneadvisor watch``
beside it), the record written at submission, and the measurements read from the job's
output once it has ended."""

from __future__ import annotations

import shlex
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from tuneadvisor import __version__
from tuneadvisor.errors import InputError
from tuneadvisor.files import is_regular_file, write_atomic
from tuneadvisor.relaunch.bundled import script_path
from tuneadvisor.relaunch.measurements import Measured, Measurements, parse_event
from tuneadvisor.relaunch.records import (
    Paths,
    Resources,
    RunRecord,
    write_record,
)
from tuneadvisor.relaunch.runner import (
    RunRequest,
    new_run_dir,
    torchrun_command,
    trace_args,
    traces_in,
)
from tuneadvisor.relaunch.settings import Expands, render_job_script
from tuneadvisor.relaunch.usage import recorded_usage
from tuneadvisor.relaunch.watcher import tuneadvisor_command


def _per_rank(req: RunRequest) -> bool:
    """Several ranks, each with its own profile."""
    return req.spec.launcher == "torchrun" or (
        req.spec.launcher == "srun" and req.settings.ntasks > 1
    )


def launch_line(req: RunRequest) -> list[str]:
    """The job script's command line for this script and these settings. Profiled ranks
    name their profile in their own shell (``SLURM_PROCID``, torchrun's ``RANK`` are set per
    rank, not in the batch script)."""
    if req.spec.launcher == "torchrun":
        name = '"${SLURM_JOB_ID}_${RANK}.lprof"' if req.profile else None
        return torchrun_command(req, name)
    script = str(script_path(req.spec))
    # the job runs in its run folder: the traces land there
    args = [
        "--data-dir", str(req.data_dir.resolve()), *req.settings.script_args(),
        *trace_args(req, "."),
    ]  # fmt: skip
    command = [req.python, script, *args]
    if req.profile and _per_rank(req):
        inner = (
            f"exec {shlex.quote(req.python)} -m kernprof -l -q -o "
            f'"${{SLURM_JOB_ID}}_${{SLURM_PROCID}}.lprof" {shlex.quote(script)} "$@"'
        )
        command = ["sh", "-c", inner, "sh", *args]
    elif req.profile:
        output = Expands("${SLURM_JOB_ID}.lprof")  # the job's shell names it
        command = [req.python, "-m", "kernprof", "-l", "-q", "-o", output, script, *args]
    return ["srun", *command] if req.spec.launcher == "srun" else command


def profile_names(req: RunRequest, job_id: str) -> list[str]:
    if not req.profile:
        return []
    if _per_rank(req):
        return [f"{job_id}_{rank}.lprof" for rank in range(req.settings.ntasks)]
    return [f"{job_id}.lprof"]


def metrics_name(job_id: str) -> str:
    """The recording the job script's ``tuneadvisor watch`` writes (see render_job_script)."""
    return f"metrics-{job_id}.jsonl"


def write_submission(req: RunRequest) -> tuple[str, Path, Path]:
    """A run folder with the job script in it: (run id, folder, job script)."""
    run_id, run_dir = new_run_dir(req.runs_root, req.spec.name)
    job = run_dir / "job.sbatch"
    write_atomic(
        job,
        render_job_script(
            req.settings,
            name=req.spec.name,
            launch=launch_line(req),
            workdir=run_dir.resolve(),
            output=str(run_dir.resolve() / "slurm-%j.out"),
            watch=tuneadvisor_command() if req.watch else None,
        ).encode(),
    )
    return run_id, run_dir, job


def submitted_record(
    req: RunRequest, run_id: str, run_dir: Path, job: Path, job_id: str
) -> RunRecord:
    record = RunRecord(
        id=run_id,
        name=req.spec.name,
        label=req.label,
        status="submitted",
        where="slurm",
        slurm_job_id=job_id,
        script=str(script_path(req.spec)),
        launcher=req.spec.launcher,
        settings=req.settings,
        source=dict(req.source),
        prediction=req.prediction.as_json() if req.prediction is not None else None,
        commands=(tuple(launch_line(req)),),
        versions={"tuneadvisor": __version__, "python": sys.version.split()[0]},
        started=datetime.now(UTC).isoformat(timespec="seconds"),
        paths=Paths(
            dir=str(run_dir),
            job=job.name,
            log=f"slurm-{job_id}.out",
            profiles=tuple(profile_names(req, job_id)),
            metrics=(metrics_name(job_id),) if req.watch else (),
        ),
        notes=tuple(req.settings.notes),
    )
    return write_record(run_dir, record)


def complete_from_output(record: RunRecord, state: str | None) -> RunRecord:
    """Fill a submitted run's measurements from its job output and its recording, once the
    job has ended."""
    if record.path is None:
        raise InputError(None, "the run record has no folder")
    run_dir = record.path.parent
    log = run_dir / record.paths.log
    measurements = Measurements()
    if is_regular_file(log):
        for line in log.read_text(errors="replace").splitlines():
            event = parse_event(line)
            if event is not None:
                measurements.add(event)
    versions = {
        **record.versions,
        **{k: measurements.start.get(k) for k in ("torch", "torchvision", "cuda", "python")},
    }
    resources = record.resources
    sampled = recorded_usage(record.metrics_paths())
    if sampled:
        resources = replace(resources or Resources(), sampled=sampled)
    paths = record.paths
    if "--torch-profile" in (record.commands[0] if record.commands else ()):
        paths = replace(paths, traces=traces_in(run_dir))
    done = replace(
        record,
        paths=paths,
        status="completed" if state == "COMPLETED" else (state or "unknown").lower(),
        slurm_state=state,
        measured=Measured.of(measurements),
        ended=datetime.now(UTC).isoformat(timespec="seconds"),
        versions=versions,
        resources=resources,
    )
    return write_record(run_dir, done)
