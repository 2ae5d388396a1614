"""Evidence files in, facts out. Every file is read once; a bad one is one InputError line.

An input that was not given leaves its facts absent, and `sharpen` says which inputs would
let more rules speak.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tuneadvisor.advisor.allocation import Measured, allocation_facts
from tuneadvisor.advisor.evidence import Gathered, usage_facts
from tuneadvisor.advisor.facts import FACTS
from tuneadvisor.errors import InputError
from tuneadvisor.files import (
    MAX_CONFIG_INPUT,
    MAX_JOB_SCRIPT,
    is_regular_file,
    path_exists,
    read_text_input,
)
from tuneadvisor.profile.analysis import ProfileAnalysis
from tuneadvisor.profile.facts import profile_facts
from tuneadvisor.session.inputs import Inputs

# Each input's parser is imported where that input is read: `report PROFILE` alone stays as
# quick to start as line_profiler's own viewer (bench target 2).
if TYPE_CHECKING:
    from tuneadvisor.advisor.site import Site
    from tuneadvisor.metrics.model import MetricsSeries
    from tuneadvisor.session.live_job import LiveJob
    from tuneadvisor.slurm.client import SlurmClient
    from tuneadvisor.slurm.jobscript.model import JobScript
    from tuneadvisor.slurm.launch_line.model import LaunchLine
    from tuneadvisor.slurm.launch_line.search import Unfollowed
    from tuneadvisor.slurm.sacct.gpu import AccountingGpu
    from tuneadvisor.slurm.sacct.records import SacctJob
    from tuneadvisor.slurm.seff import SeffReport
    from tuneadvisor.trainscript.local_imports import LoaderModule
    from tuneadvisor.trainscript.parsed import ParsedScript
    from tuneadvisor.trainscript.scan import ScriptScan

SITE_ENV = "TUNEADVISOR_SITE"


def read_job(path: str) -> JobScript:
    from tuneadvisor.slurm.jobscript.model import JobScript

    text = read_text_input(path, "job script", MAX_JOB_SCRIPT)
    job = JobScript.parse(text, path)
    if job.not_a_script is not None:  # a Python file, an empty one: nothing to advise on
        raise InputError(path, job.not_a_script)
    return job


def _cannot_follow(command: str, reason: str | None = None) -> str:
    why = f": {reason};" if reason else ":"
    return (
        f"the job runs `{command}`; tuneadvisor could not find the training script in "
        f"it{why} give --script"
    )


def _script(
    inputs: Inputs,
    launch: LaunchLine | None,
    notes: list[str],
    unfollowed: Unfollowed | None = None,
) -> tuple[str | None, str | None]:
    """The training script: --script, else the one the job's launch line runs.
    ``unfollowed``: the job's launch-like command that led to no script, to say so."""
    if inputs.script is not None:
        return inputs.script, read_text_input(inputs.script, "training script")
    if launch is None:
        if unfollowed is not None:
            notes.append(_cannot_follow(unfollowed.command, unfollowed.reason))
        return None, None
    if launch.script_path is not None and is_regular_file(launch.script_path):
        path = str(launch.script_path)
        return path, read_text_input(path, "training script")
    if launch.script and inputs.job is not None:
        # A job copied from the cluster names a path that is not here: look beside it.
        beside = Path(inputs.job).parent / Path(launch.script).name
        if is_regular_file(beside):
            return str(beside), read_text_input(beside, "training script")
    name = Path(launch.script).name if launch.script else ""
    if "$" in name or "`" in name:  # `python $SCRIPT` set from outside, `$(pick_script)`
        notes.append(_cannot_follow(launch.text.strip()))
    elif launch.script:
        notes.append(f"the job runs {launch.script}, which is not here: give --script to read it")
    return None, None


def _script_parse(
    path: str | None, text: str, analysis: ProfileAnalysis | None
) -> ParsedScript | str:
    """The profile analysis's parse of the training script when it read that very file (one
    parse for line kinds and the scan), else the text, for the scan to parse."""
    if analysis is None or path is None or not analysis.parsed_sources:
        return text
    try:
        wanted = Path(path).resolve()
        for found, parsed in analysis.parsed_sources.items():
            if (
                parsed.tree is not None
                and parsed.same_source(text)
                and Path(found).resolve() == wanted
            ):
                return parsed
    except (OSError, RuntimeError, ValueError):  # an unresolvable path: parse it again
        pass
    return text


def _metrics(
    inputs: Sequence[str], columns: str | None = None, measured: list[Measured] | None = None
) -> MetricsSeries | None:
    """Each file a watch recording or an nvidia-smi CSV log; ``columns``: the --query-gpu
    list for logs written without a header. ``measured`` gets what each recording's header
    says the watched job was given."""
    if not inputs:
        return None
    from tuneadvisor.metrics.model import merge_series
    from tuneadvisor.metrics.nvidia_smi_csv import NvidiaSmiCsvError, parse_nvidia_smi_csv
    from tuneadvisor.metrics.recording import RecordingError, parse_recording
    from tuneadvisor.metrics.recording import sniff as sniff_recording

    series = []
    for path in inputs:
        text = read_text_input(path, "metrics file")
        if sniff_recording(text):
            try:
                recording = parse_recording(text)
            except RecordingError as exc:
                raise InputError(path, f"broken tuneadvisor watch recording: {exc}") from None
            series.append(recording.series())
            header = recording.header
            if measured is not None and header is not None and header.job:
                measured.append(_from_header(header.job))
            continue
        _refuse_other_formats(path, text)
        try:
            series.append(parse_nvidia_smi_csv(text, columns))
        except NvidiaSmiCsvError as exc:
            raise InputError(path, f"not an nvidia-smi --query-gpu CSV log: {exc}") from None
    if not series:
        return None
    return series[0] if len(series) == 1 else merge_series(series)


def _from_header(job: Mapping[str, object]) -> Measured:
    cpus, mem = job.get("job.cpus_per_task"), job.get("job.mem_mib")
    return Measured(
        "this recording",
        cpus if isinstance(cpus, int) and not isinstance(cpus, bool) else None,
        float(mem) if isinstance(mem, int | float) and not isinstance(mem, bool) else None,
    )


def _run_record(profile: str) -> Measured | None:
    """The settings of the ``tuneadvisor run`` that wrote this profile (its run.json is
    beside it); None for a profile of anything else. Read as every input is (bounded, a
    regular file only: a FIFO there would block): what is not a readable run record is no
    run record."""
    from tuneadvisor.runrecord.record import RECORD_NAME, read_record

    path = Path(profile).parent / RECORD_NAME
    if not is_regular_file(path):
        return None
    try:
        settings = read_record(path).settings
    except InputError:
        return None
    cpus = settings.cpus_per_task
    workers = settings.knobs.get("num_workers")
    return Measured(
        "this profile",
        cpus if isinstance(cpus, int) and not isinstance(cpus, bool) and cpus > 0 else None,
        None,
        workers if isinstance(workers, int) and not isinstance(workers, bool) else None,
    )


_HOW_TO_LOG = (
    "log with nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv -l 1"
)


def _refuse_other_formats(path: str, text: str) -> None:
    """A JSON or XML file given as --metrics: say what it is, not a CSV hint."""
    head = text.lstrip("\ufeff \t\r\n")[:64]
    if head.startswith(("{", "[")):
        raise InputError(
            path, f"is JSON, not an nvidia-smi CSV log or a watch recording: {_HOW_TO_LOG}"
        )
    if head.startswith("<"):
        raise InputError(
            path,
            f"is XML (nvidia-smi -q -x?), not an nvidia-smi CSV log or a watch recording: "
            f"{_HOW_TO_LOG}",
        )


def _site_path(inputs: Inputs, env: Mapping[str, str]) -> str | None:
    if inputs.site:
        return inputs.site
    if env.get(SITE_ENV):
        return env[SITE_ENV]
    config = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    default = config / "tuneadvisor" / "site.toml"
    return str(default) if path_exists(default, "site file") and default.is_file() else None


def _known(facts: Mapping[str, object]) -> dict[str, object]:
    """Only registered facts reach the rules (a producer's extra detail stays with it)."""
    return {name: value for name, value in facts.items() if name in FACTS}


@dataclass
class _Found:
    """What the inputs said so far. Later inputs override earlier ones' facts: the order of
    the steps of ``gather`` is the order of precedence."""

    facts: dict[str, object] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    sharpen: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _JobRead:
    job: JobScript | None = None
    launch: LaunchLine | None = None
    unfollowed: Unfollowed | None = None  # a launch-like command that led to no script


@dataclass(frozen=True)
class _ScriptRead:
    path: str | None = None
    text: str | None = None
    scan: ScriptScan | None = None
    loader_module: LoaderModule | None = None


def gather(
    inputs: Inputs,
    analysis: ProfileAnalysis | None,
    env: Mapping[str, str] | None = None,
    job: JobScript | None = None,
) -> Gathered:
    """``job``: the job script of ``inputs.job``, when the caller has read it already."""
    env = os.environ if env is None else env
    found = _Found()
    _profile(found, analysis)
    client = _client(inputs, env)
    live = _live_job(found, inputs, client)
    read = _job_script(found, inputs, job, live)
    if live is not None:  # sbatch's command line wins over the script's #SBATCH lines
        _as_run(found, live)
    script = _training_script(found, inputs, read, analysis)
    gpu_read = _accounting(found, inputs, live)
    usage_facts(found.facts, found.notes)
    metrics, measured = _gpu_metrics(found, inputs, gpu_read)
    _allocation(found, inputs.profiles, measured)
    _site(found, inputs, env, client)
    return Gathered(
        facts=_known(found.facts),
        job=read.job,
        launch=read.launch,
        script_path=script.path,
        script_text=script.text,
        scan=script.scan,
        loader_module=script.loader_module,
        metrics=metrics,
        sharpen=tuple(found.sharpen),
        notes=tuple(found.notes),
    )


def _profile(found: _Found, analysis: ProfileAnalysis | None) -> None:
    if analysis is not None:
        found.facts.update(profile_facts(analysis))
    else:
        found.sharpen.append("a line_profiler profile (kernprof -l -o $SLURM_JOBID.lprof)")


def _client(inputs: Inputs, env: Mapping[str, str]) -> SlurmClient | None:
    if not (inputs.live or inputs.cluster):
        return None
    from tuneadvisor.slurm.client import SlurmClient

    return SlurmClient(env=env)


def _live_job(found: _Found, inputs: Inputs, client: SlurmClient | None) -> LiveJob | None:
    """The job as Slurm tells it now (--jobid without a saved accounting file)."""
    if client is None or inputs.jobid is None or not inputs.live:
        return None
    from tuneadvisor.session.live_job import fetch_job

    live = fetch_job(client, inputs.jobid, want_script=inputs.job is None)
    found.notes += live.notes
    return live


def _job_script(
    found: _Found, inputs: Inputs, job: JobScript | None, live: LiveJob | None
) -> _JobRead:
    """The job script (--job, else the one Slurm gave) and the launch line read as the
    training."""
    if job is None and inputs.job is not None:
        job = read_job(inputs.job)
    elif job is None and live is not None and live.script is not None:
        if live.script.not_a_script is None:
            job = live.script
        else:  # as a missing script: the live facts still stand
            found.notes.append(
                f"job {live.job_id}: the script Slurm gave is {live.script.not_a_script}"
            )
    if job is None:
        found.sharpen.append("the job script (--job)")
        return _JobRead()
    from tuneadvisor.slurm.jobscript.facts import job_facts, job_notes
    from tuneadvisor.slurm.launch_line.choose import choose_launch
    from tuneadvisor.slurm.launch_line.search import find_launches, unfollowed_launch

    launches = find_launches(job)
    launch = choose_launch(launches)
    unfollowed = unfollowed_launch(job) if launch is None and inputs.script is None else None
    found.facts.update(job_facts(job, launch))
    found.notes += job_notes(job, launches, launch)
    return _JobRead(job, launch, unfollowed)


def _as_run(found: _Found, live: LiveJob) -> None:
    """sacct.* and seff.* of the live job, then job.* as it ran over the script's."""
    from tuneadvisor.advisor.allocation import ran_differently

    as_run = live.as_run()
    found.notes += ran_differently(found.facts, as_run)
    found.facts.update(live.facts())
    found.facts.update(as_run)


def _training_script(
    found: _Found, inputs: Inputs, read: _JobRead, analysis: ProfileAnalysis | None
) -> _ScriptRead:
    """The training script scanned, and the local module that builds its DataLoader."""
    path, text = _script(inputs, read.launch, found.notes, read.unfollowed)
    if text is None:
        found.sharpen.append("the training script (--script, or a job script that runs it)")
        return _ScriptRead(path, text)
    from tuneadvisor.trainscript.scan import scan_script

    launch_args = read.launch.options if read.launch is not None else None
    scan = scan_script(_script_parse(path, text, analysis), launch_args)
    if scan.parse_error:
        found.notes.append(f"{path}: does not parse ({scan.parse_error}); not scanned")
    found.facts.update(scan.facts())
    if path is None:
        return _ScriptRead(path, text, scan)
    from tuneadvisor.session.loader_module import follow_loader

    followed = follow_loader(path, text, scan)
    if followed.module is not None:
        found.facts.update(followed.module.facts)
    if followed.note is not None:
        found.notes.append(followed.note)
    return _ScriptRead(path, text, scan, followed.module)


def _accounting(found: _Found, inputs: Inputs, live: LiveJob | None) -> AccountingGpu | None:
    """seff, then sacct (a file, else the live job's); the GPU figures of the accounting,
    for ``_gpu_metrics`` to weigh against the metrics."""
    if inputs.seff is not None:
        _seff(found, inputs.seff)
    accounting: SacctJob | None = None
    if inputs.sacct is not None:
        accounting = _sacct(found, inputs.sacct, inputs.jobid)
    elif live is not None:
        accounting = live.accounting
    if inputs.seff is None and inputs.sacct is None and live is None:
        found.sharpen.append("Slurm accounting of the finished job (--seff or --sacct)")
    gpu_read = _accounting_gpu(accounting, found.notes)
    if gpu_read is not None:  # jobstats' per-node figures feed usage.*
        found.facts.update({k: v for k, v in gpu_read.facts.items() if not k.startswith("gpu.")})
    return gpu_read


def _seff(found: _Found, path: str) -> None:
    from tuneadvisor.slurm.seff import SeffError, parse_seff

    try:
        seff = parse_seff(read_text_input(path, "seff output"))
    except SeffError as exc:
        raise InputError(path, f"not seff output: {exc}") from None
    found.facts.update(seff.facts())
    if seff.unread:  # a site's seff adds lines: say what was left out, not half silently
        found.notes.append(f"{path}: {_unread(seff.unread)}")
    if seff.gpu_util_pct is not None or seff.gpu_mem_used_mib is not None:
        found.notes.append(f"{path}: {_seff_gpu(seff)}")


def _sacct(found: _Found, path: str, jobid: str | None) -> SacctJob:
    from tuneadvisor.slurm.sacct import parse_sacct
    from tuneadvisor.slurm.sacct.records import SacctError, select_job

    try:
        jobs = parse_sacct(read_text_input(path, "sacct output"))
    except SacctError as exc:
        raise InputError(path, f"not sacct output: {exc}") from None
    try:  # sacct output, but which job of it is meant is not clear
        accounting = select_job(jobs, jobid)
    except SacctError as exc:
        raise InputError(path, str(exc)) from None
    found.facts.update(accounting.facts())
    return accounting


def _gpu_metrics(
    found: _Found, inputs: Inputs, gpu_read: AccountingGpu | None
) -> tuple[MetricsSeries | None, list[Measured]]:
    """The metrics files' facts, and gpu.* from them or the accounting; what each recording
    says its job was given."""
    measured: list[Measured] = []
    metrics = _metrics(inputs.metrics, inputs.metrics_columns, measured)
    if metrics is not None:
        found.facts.update(metrics.facts())
    _gpu_source(found.facts, metrics, gpu_read, found.notes)
    if metrics is None and "gpu.util.mean" not in found.facts:
        found.sharpen.append("GPU metrics (--metrics: an nvidia-smi CSV log or a watch recording)")
    return metrics, measured


def _allocation(found: _Found, profiles: Sequence[str], measured: list[Measured]) -> None:
    """alloc.*: what the measured run was given (recordings, then run records, then
    accounting), derived by the advisor from every input before."""
    measured = measured + [m for m in map(_run_record, profiles) if m is not None]
    alloc, notes = allocation_facts(found.facts, measured)
    found.facts.update(alloc)
    found.notes += notes


def _site(
    found: _Found, inputs: Inputs, env: Mapping[str, str], client: SlurmClient | None
) -> None:
    """node.* of the job's partition: the site file, else the cluster asked live."""
    site_path = _site_path(inputs, env)
    partition = found.facts.get("job.partition")
    node = None
    if site_path is not None:
        node = load_site(site_path).node_for(partition)  # type: ignore[arg-type]
    elif client is not None:
        from tuneadvisor.session.live_job import cluster_node

        node = cluster_node(client, partition if isinstance(partition, str) else None, found.notes)
    if node is not None:
        found.facts.update(node.facts())


def _accounting_gpu(job: SacctJob | None, notes: list[str]) -> AccountingGpu | None:
    """GPU figures in an ended job's accounting (jobstats' AdminComment, Slurm's GPU TRES);
    a running job has neither yet (its sstat figures are a note of live_job)."""
    from tuneadvisor.slurm.states import UNFINISHED

    if job is None or job.state is None or job.state in UNFINISHED:
        return None
    from tuneadvisor.slurm.sacct.gpu import accounting_gpu

    found, problems = accounting_gpu(job)
    notes += problems
    return found


def _gpu_source(
    facts: dict[str, object],
    metrics: MetricsSeries | None,
    accounting: AccountingGpu | None,
    notes: list[str],
) -> None:
    """gpu.* from the metrics when they have GPUs (samples), else from the accounting; the
    report says which."""
    if metrics is not None and metrics.gpus:
        facts["gpu.source"] = metrics.source or "metrics"
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
        notes.append(f"GPU: from {accounting.label}: {accounting.summary}")
    else:  # a CPU job's jobstats summary: its cores and memory
        notes.append(f"CPU and memory: from {accounting.label}: {accounting.summary}")


def _seff_gpu(seff: SeffReport) -> str:
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


def _unread(lines: Sequence[str], shown: int = 3) -> str:
    more = f" and {len(lines) - shown} more" if len(lines) > shown else ""
    return f"lines not understood, left out: {'; '.join(lines[:shown])}{more}"


def load_site(path: str) -> Site:
    from tuneadvisor.advisor.site import parse_site

    return parse_site(read_text_input(path, "site file", MAX_CONFIG_INPUT), path)
