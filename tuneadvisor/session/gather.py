"""Evidence files in, facts out. Every file is read once; a bad one is one InputError line.

An input that was not given leaves its facts absent, and `sharpen` says which inputs would
let more rules speak.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tuneadvisor.advisor.allocation import Measured, allocation_facts
from tuneadvisor.advisor.evidence import Gathered, usage_facts
from tuneadvisor.advisor.facts import FACTS
from tuneadvisor.advisor.profile_facts import profile_facts
from tuneadvisor.errors import InputError
from tuneadvisor.files import (
    MAX_CONFIG_INPUT,
    MAX_JOB_SCRIPT,
    is_regular_file,
    load_json_input,
    path_exists,
    read_text_input,
)
from tuneadvisor.profile.analysis import ProfileAnalysis
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
    from tuneadvisor.trainscript.parsed import ParsedScript

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
    paths: Sequence[str], columns: str | None = None, measured: list[Measured] | None = None
) -> MetricsSeries | None:
    """Each file a watch recording or an nvidia-smi CSV log; ``columns``: the --query-gpu
    list for logs written without a header. ``measured`` gets what each recording's header
    says the watched job was given."""
    if not paths:
        return None
    from tuneadvisor.metrics.model import merge_series
    from tuneadvisor.metrics.nvidia_smi_csv import NvidiaSmiCsvError, parse_nvidia_smi_csv
    from tuneadvisor.metrics.recording import RecordingError, parse_recording
    from tuneadvisor.metrics.recording import sniff as sniff_recording

    series = []
    for path in paths:
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
    beside it); None for a profile of anything else. Read as plain JSON: the run records
    belong to a layer above this one. Read as every input is (bounded, a regular file only):
    what is not a readable run record is no run record."""
    path = Path(profile).parent / "run.json"
    if not is_regular_file(path):
        return None
    try:
        data = load_json_input(path, "run record")
    except InputError:
        return None
    if not isinstance(data, dict) or data.get("kind") != "tuneadvisor-run":
        return None
    settings = data.get("settings")
    if not isinstance(settings, dict):
        return None
    cpus = settings.get("cpus_per_task")
    knobs = settings.get("knobs")
    workers = knobs.get("num_workers") if isinstance(knobs, dict) else None
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


def gather(
    inputs: Inputs,
    analysis: ProfileAnalysis | None,
    env: Mapping[str, str] | None = None,
    job: JobScript | None = None,
) -> Gathered:
    """``job``: the job script of ``inputs.job``, when the caller has read it already."""
    env = os.environ if env is None else env
    facts: dict[str, object] = {}
    notes: list[str] = []
    sharpen: list[str] = []
    if analysis is not None:
        facts.update(profile_facts(analysis))
    else:
        sharpen.append("a line_profiler profile (kernprof -l -o $SLURM_JOBID.lprof)")
    client: SlurmClient | None = None
    if inputs.live or inputs.cluster:
        from tuneadvisor.slurm.client import SlurmClient

        client = SlurmClient(env=env)
    live: LiveJob | None = None
    if client is not None and inputs.jobid is not None and inputs.live:
        from tuneadvisor.session.live_job import fetch_job

        live = fetch_job(client, inputs.jobid, want_script=inputs.job is None)
        notes += live.notes
    launch = None
    unfollowed = None
    if job is None and inputs.job is not None:
        job = read_job(inputs.job)
    elif job is None and live is not None and live.script is not None:
        if live.script.not_a_script is None:
            job = live.script
        else:  # as a missing script: the live facts still stand
            notes.append(f"job {live.job_id}: the script Slurm gave is {live.script.not_a_script}")
    if job is not None:
        from tuneadvisor.advisor.job_facts import job_facts, job_notes
        from tuneadvisor.slurm.launch_line.choose import choose_launch
        from tuneadvisor.slurm.launch_line.search import find_launches, unfollowed_launch

        launches = find_launches(job)
        launch = choose_launch(launches)
        if launch is None and inputs.script is None:
            unfollowed = unfollowed_launch(job)
        facts.update(job_facts(job, launch))
        notes += job_notes(job, launches, launch)
    else:
        sharpen.append("the job script (--job)")
    if live is not None:
        from tuneadvisor.advisor.job_facts import ran_differently

        as_run = live.as_run()
        notes += ran_differently(facts, as_run)
        facts.update(live.facts())
        facts.update(as_run)
    script_path, script_text = _script(inputs, launch, notes, unfollowed)
    scan = None
    loader_module = None
    if script_text is not None:
        from tuneadvisor.trainscript.scan import scan_script

        launch_args = launch.options if launch is not None else None
        scan = scan_script(_script_parse(script_path, script_text, analysis), launch_args)
        if scan.parse_error:
            notes.append(f"{script_path}: does not parse ({scan.parse_error}); not scanned")
        facts.update(scan.facts())
        if script_path is not None:
            from tuneadvisor.session.loader_module import follow_loader

            followed = follow_loader(script_path, script_text, scan)
            loader_module = followed.module
            if loader_module is not None:
                facts.update(loader_module.facts)
            if followed.note is not None:
                notes.append(followed.note)
    else:
        sharpen.append("the training script (--script, or a job script that runs it)")
    if inputs.seff is not None:
        from tuneadvisor.slurm.seff import SeffError, parse_seff

        try:
            seff = parse_seff(read_text_input(inputs.seff, "seff output"))
        except SeffError as exc:
            raise InputError(inputs.seff, f"not seff output: {exc}") from None
        facts.update(seff.facts())
        if seff.unread:  # a site's seff adds lines: say what was left out, not half silently
            notes.append(f"{inputs.seff}: {_unread(seff.unread)}")
        if seff.gpu_util_pct is not None or seff.gpu_mem_used_mib is not None:
            notes.append(f"{inputs.seff}: {_seff_gpu(seff)}")
    accounting: SacctJob | None = None
    if inputs.sacct is not None:
        from tuneadvisor.slurm.sacct import parse_sacct
        from tuneadvisor.slurm.sacct.records import SacctError, select_job

        try:
            jobs = parse_sacct(read_text_input(inputs.sacct, "sacct output"))
        except SacctError as exc:
            raise InputError(inputs.sacct, f"not sacct output: {exc}") from None
        try:  # sacct output, but which job of it is meant is not clear
            accounting = select_job(jobs, inputs.jobid)
        except SacctError as exc:
            raise InputError(inputs.sacct, str(exc)) from None
        facts.update(accounting.facts())
    elif live is not None:
        accounting = live.accounting
    if inputs.seff is None and inputs.sacct is None and live is None:
        sharpen.append("Slurm accounting of the finished job (--seff or --sacct)")
    gpu_read = _accounting_gpu(accounting, notes)
    if gpu_read is not None:  # jobstats' per-node figures feed usage.* below
        facts.update({k: v for k, v in gpu_read.facts.items() if not k.startswith("gpu.")})
    usage_facts(facts, notes)
    measured: list[Measured] = []
    metrics = _metrics(inputs.metrics, inputs.metrics_columns, measured)
    if metrics is not None:
        facts.update(metrics.facts())
    _gpu_source(facts, metrics, gpu_read, notes)
    if metrics is None and "gpu.util.mean" not in facts:
        sharpen.append("GPU metrics (--metrics: an nvidia-smi CSV log or a watch recording)")
    measured += [m for m in map(_run_record, inputs.profiles) if m is not None]
    alloc, alloc_notes = allocation_facts(facts, measured)
    facts.update(alloc)
    notes += alloc_notes
    site_path = _site_path(inputs, env)
    partition = facts.get("job.partition")
    node = None
    if site_path is not None:
        node = load_site(site_path).node_for(partition)  # type: ignore[arg-type]
    elif client is not None:
        from tuneadvisor.session.live_job import cluster_node

        node = cluster_node(client, partition if isinstance(partition, str) else None, notes)
    if node is not None:
        facts.update(node.facts())
    return Gathered(
        facts=_known(facts),
        job=job,
        launch=launch,
        script_path=script_path,
        script_text=script_text,
        scan=scan,
        loader_module=loader_module,
        metrics=metrics,
        sharpen=tuple(sharpen),
        notes=tuple(notes),
    )


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
