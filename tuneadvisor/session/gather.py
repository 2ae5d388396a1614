"""Evidence files in, facts out. Every file is read once; a bad one is one InputError line.

An input that was not given leaves its facts absent, and `sharpen` says which inputs would
let more rules speak.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tuneadvisor.advisor.allocation import Measured, allocation_facts, recorded_allocation
from tuneadvisor.advisor.evidence import EvidenceStamp, Gathered, usage_facts
from tuneadvisor.advisor.facts import FACTS
from tuneadvisor.errors import InputError
from tuneadvisor.files import (
    read_text_input,
)
from tuneadvisor.profile.analysis import ProfileAnalysis
from tuneadvisor.profile.facts import profile_facts
from tuneadvisor.session.gpu_source import accounting_gpu_of, choose_gpu_source, seff_gpu_note
from tuneadvisor.session.inputs import Inputs
from tuneadvisor.session.read_files import read_job, read_training_script, script_parse
from tuneadvisor.session.read_measured import read_metrics, run_record_beside
from tuneadvisor.session.site_file import load_site, site_path

# Each input's parser is imported where that input is read: `report PROFILE` alone stays as
# quick to start as line_profiler's own viewer (bench target 2).
if TYPE_CHECKING:
    from tuneadvisor.metrics.model import MetricsSeries
    from tuneadvisor.profile.trace.model import TraceSet
    from tuneadvisor.session.live_job import LiveJob
    from tuneadvisor.slurm.client import SlurmClient
    from tuneadvisor.slurm.jobscript.model import JobScript
    from tuneadvisor.slurm.launch_line.model import LaunchLine
    from tuneadvisor.slurm.launch_line.search import Unfollowed
    from tuneadvisor.slurm.sacct.gpu import AccountingGpu
    from tuneadvisor.slurm.sacct.records import SacctJob
    from tuneadvisor.trainscript.local_imports import LoaderModule
    from tuneadvisor.trainscript.scan import ScriptScan


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
    programs: int = 0  # Python programs the job runs (one is read as the training)


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
    traces: TraceSet | None = None,
) -> Gathered:
    """``job``: the job script of ``inputs.job``, when the caller has read it already;
    ``traces``: the torch.profiler traces of ``inputs.traces``, read."""
    env = os.environ if env is None else env
    found = _Found()
    _profile(found, analysis, traces)
    _traces(found, traces)
    client = _client(inputs, env)
    live = _live_job(found, inputs, client)
    read = _job_script(found, inputs, job, live)
    if live is not None:  # sbatch's command line wins over the script's #SBATCH lines
        _as_run(found, live)
    script = _training_script(found, inputs, read, analysis)
    gpu_read = _accounting(found, inputs, live)
    _job_log(found, inputs, live)
    usage_facts(found.facts, found.notes)
    metrics, measured = _gpu_metrics(found, inputs, gpu_read)
    _probe(found, inputs)
    stamp = _stamp(inputs, read.job)
    beside = (*inputs.profiles, *_beside_traces(inputs.traces), *inputs.metrics, *_probe_at(inputs))
    _allocation(found, beside, measured, stamp)
    _site(found, inputs, env, client)
    _slurm_release(found, client)
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
        stamp=stamp,
    )


def _profile(found: _Found, analysis: ProfileAnalysis | None, traces: TraceSet | None) -> None:
    if analysis is not None:
        found.facts.update(profile_facts(analysis))
    elif traces is None:
        found.sharpen.append("a line_profiler profile (kernprof -l -o $SLURM_JOBID.lprof)")


def _traces(found: _Found, traces: TraceSet | None) -> None:
    """trace.*: the torch.profiler traces' breakdown, and what they could not show."""
    if traces is None:
        return
    from tuneadvisor.profile.trace.facts import trace_facts

    found.facts.update(trace_facts(traces))
    found.notes += traces.notes
    for rank in traces.ranks:
        found.notes += [f"{rank.path}: {note}" for note in rank.notes]


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
    found.facts.update(job_facts(job, launch, launches))
    found.notes += job_notes(job, launches, launch)
    gpus = found.facts.get("job.gpus")
    if launch is not None and "job.ranks_per_task" not in found.facts and isinstance(gpus, int):
        from tuneadvisor.slurm.launch_line.visible_gpus import visible_gpu_ranks

        said = visible_gpu_ranks(launch, [line.text for line in job.lines], gpus)
        if said is not None:  # torchrun's count from CUDA_VISIBLE_DEVICES: the GPUs per node
            found.facts["job.ranks_per_task"] = gpus
            found.notes.append(said)
    return _JobRead(job, launch, unfollowed, len(launches))


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
    path, text = read_training_script(inputs, read.launch, found.notes, read.unfollowed)
    if text is None:
        found.sharpen.append("the training script (--script, or a job script that runs it)")
        return _ScriptRead(path, text)
    from tuneadvisor.trainscript.parsed import parse_script
    from tuneadvisor.trainscript.scan import scan_script

    launch_args = read.launch.options if read.launch is not None else None
    source = script_parse(path, text, analysis)
    parsed = parse_script(source) if isinstance(source, str) else source
    if path is None:  # read_training_script gives a text with its path: kept for safety
        scan = scan_script(parsed, launch_args)
        found.facts.update(scan.facts())
        return _ScriptRead(path, text, scan)
    from tuneadvisor.session.loader_module import follow_loader
    from tuneadvisor.session.script_modules import program_evidence, read_program
    from tuneadvisor.trainscript.program_facts import unresolved_workers

    # The script with the local modules it imports: what they define is the script's too.
    program = read_program(path, parsed)
    scan = scan_script(parsed, launch_args, program.elsewhere(program.names[0]))
    if scan.parse_error:
        found.notes.append(f"{path}: does not parse ({scan.parse_error}); not scanned")
    found.facts.update(scan.facts())
    facts, notes = program_evidence(program, read.launch, analysis, read.programs)
    found.facts.update(facts)
    found.notes += notes
    followed = follow_loader(path, text, scan, program.elsewhere)
    if followed.module is not None:
        found.facts.update(followed.module.facts)
    if followed.note is not None:
        found.notes.append(followed.note)
    unresolved = unresolved_workers(found.facts, program.names[0])
    if unresolved is not None:
        found.notes.append(unresolved)
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
    gpu_read = accounting_gpu_of(accounting, found.notes, inputs.sacct)
    if gpu_read is not None:  # jobstats' per-node figures feed usage.*
        found.facts.update({k: v for k, v in gpu_read.facts.items() if not k.startswith("gpu.")})
    return gpu_read


def _job_log(found: _Found, inputs: Inputs, live: LiveJob | None) -> None:
    """log.*: why the job died, from --log and the live job's StdOut and StdErr."""
    if not inputs.logs and live is None:
        return
    from tuneadvisor.session.job_log import live_log_paths, read_job_logs

    from_slurm = live_log_paths(live, inputs.logs, found.notes) if live is not None else []
    log = read_job_logs(inputs.logs, from_slurm, found.notes)
    if log is not None:
        found.facts.update(log.facts())


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
        found.notes.append(f"{path}: {seff_gpu_note(seff)}")


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
    metrics = read_metrics(inputs.metrics, inputs.metrics_columns, measured)
    if metrics is not None:
        found.facts.update(metrics.facts())
    choose_gpu_source(found.facts, metrics, gpu_read, found.notes)
    if metrics is None and "gpu.util.mean" not in found.facts:
        found.sharpen.append(
            "GPU metrics (--metrics: an nvidia-smi CSV log, a watch recording or DCGM output)"
        )
    return metrics, measured


def _probe(found: _Found, inputs: Inputs) -> None:
    """probe.*: the bundled scripts' probe file, timed step, pipeline and loop."""
    if inputs.probe is None:
        return
    from tuneadvisor.runrecord.probe import read_probe

    probe = read_probe(inputs.probe)
    found.facts.update(probe.facts())
    found.notes.append(f"{inputs.probe}: {probe.note()}")


def _stamp(inputs: Inputs, job: JobScript | None) -> EvidenceStamp | None:
    """What the evidence is, for the tuned script's `# tuneadvisor: tuned from` line and to
    recognise that line's evidence; none without a job script (nothing to tune or to read)."""
    if job is None:
        return None
    from tuneadvisor.session.evidence_stamp import evidence_stamp

    return evidence_stamp(inputs)


def _probe_at(inputs: Inputs) -> tuple[str, ...]:
    return (inputs.probe,) if inputs.probe is not None else ()


def _beside_traces(traces: Sequence[str]) -> list[str]:
    """Where a trace's run record would be, as a path beside it: a trace file's folder, or
    the folder of traces given (`run --profile torch` writes both into its run folder)."""
    return [os.path.join(t, "trace") if os.path.isdir(t) else t for t in traces]


def _allocation(
    found: _Found, profiles: Sequence[str], measured: list[Measured], stamp: EvidenceStamp | None
) -> None:
    """alloc.*: what the measured run was given (recordings, then run records, then
    accounting, then what the script says this same evidence had), derived by the advisor
    from every input before."""
    records = [run_record_beside(p) for p in profiles]
    measured = measured + [m for m, _ in records if m is not None]
    if records:  # the first profiled run's batch size and rate (the step-time model's)
        found.facts.update(records[0][1])
    recorded = recorded_allocation(found.facts, stamp.digest if stamp else None)
    alloc, notes = allocation_facts(found.facts, measured, [recorded] if recorded else [])
    found.facts.update(alloc)
    found.notes += notes


def _site(
    found: _Found, inputs: Inputs, env: Mapping[str, str], client: SlurmClient | None
) -> None:
    """node.* of the job's partition: the site file, else the cluster asked live."""
    site = site_path(inputs, env)
    partition = found.facts.get("job.partition")
    node = None
    if site is not None:
        node = load_site(site).node_for(partition)  # type: ignore[arg-type]
    elif client is not None:
        from tuneadvisor.session.live_job import cluster_node

        node = cluster_node(client, partition if isinstance(partition, str) else None, found.notes)
    if node is None and "job.nodes" in found.facts:
        # the size unknown: a stated ceiling, so that no request of the script grows unbounded
        from tuneadvisor.advisor.site import assumed_node

        node = assumed_node(found.facts)
    if node is not None:
        found.facts.update(node.facts())


def _slurm_release(found: _Found, client: SlurmClient | None) -> None:
    """Where srun starts the tasks without its cores: the Slurm release (srun's own, asked
    when a cluster is) and what it means for them (advisor/slurm_release.py)."""
    if "job.srun_cpus_unset" not in found.facts:
        return
    from tuneadvisor.advisor.slurm_release import release_facts

    if client is not None:
        from tuneadvisor.slurm.client import SlurmError
        from tuneadvisor.slurm.version import version_facts

        try:
            found.facts.update(version_facts(client.version("srun")))
        except SlurmError as exc:
            found.notes.append(f"Slurm version unknown: {exc.one_line()}")
    found.facts.update(release_facts(found.facts))


def _unread(lines: Sequence[str], shown: int = 3) -> str:
    more = f" and {len(lines) - shown} more" if len(lines) > shown else ""
    return f"lines not understood, left out: {'; '.join(lines[:shown])}{more}"
