"""Everything one `report`, `open` or `apply` looks at, loaded from the command line's inputs.

The CLI and the TUI both show a Workspace, so they never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from tuneadvisor.errors import InputError
from tuneadvisor.profile.analysis import analyze
from tuneadvisor.profile.lprof import load_profiles
from tuneadvisor.profile.source import SourceFinder
from tuneadvisor.records import record
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.tuned_files import TunedFiles

# The advisor, gathering and the rule files load in load_workspace, when used: the quick
# stage of `open` does without them.
if TYPE_CHECKING:
    from tuneadvisor.advisor.advice import Advice
    from tuneadvisor.advisor.findings import Finding
    from tuneadvisor.metrics.model import MetricsSeries
    from tuneadvisor.profile.analysis import ProfileAnalysis
    from tuneadvisor.profile.trace.model import TraceSet
    from tuneadvisor.profile.trace.stream import Progress
    from tuneadvisor.slurm.jobscript.model import JobScript
    from tuneadvisor.workspace.time_to_result import TimeToResult


@record
class JobScriptText:
    """The job script's path and text, as read."""

    path: str
    text: str


@record
class Workspace:
    """Everything one report shows: the inputs read, the advice and the tuned files."""

    analysis: ProfileAnalysis | None
    job: JobScriptText | None
    advice: Advice | None = field(default=None)
    # True for the first, quick stage of `open`: numbers only, before source, kinds and
    # advice are read. Not "source not found": the source has not been looked for yet.
    partial: bool = False
    inputs: Inputs = field(default_factory=Inputs)  # what it was loaded from (apply protects them)
    metrics: MetricsSeries | None = None  # what --metrics held, as read
    tuned: TunedFiles = field(default_factory=TunedFiles)  # the plan, written
    traces: TraceSet | None = None  # the torch.profiler traces, as read (one per rank)
    # --queue: when the job would start and end, as written and tuned (time_to_result.py)
    time_to_result: TimeToResult | None = None

    @property
    def notes(self) -> tuple[str, ...]:
        """The advice's notes, then what writing the plan had to say."""
        advice = self.advice.notes if self.advice is not None else ()
        return (*advice, *self.tuned.notes)

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.advice.findings if self.advice is not None else ()


class _NoSource(SourceFinder):
    def read_lines(self, filename: str) -> tuple[Path, list[str]] | None:
        return None


def load_quick_workspace(request: Inputs, job_script: JobScript | None = None) -> Workspace:
    """The profile's numbers alone, fast, for a first screen while the rest loads.
    ``job_script``: the job script already read (each command reads the file once)."""
    if job_script is None and request.job is not None:
        from tuneadvisor.workspace.read_files import read_job

        job_script = read_job(request.job)
    job = _job_text(request, job_script)
    if not request.profiles:
        return Workspace(analysis=None, job=job, partial=True, inputs=request)
    analysis = analyze(load_profiles(request.profiles), _NoSource())
    quiet = replace(analysis, notes=(), missing_sources=())
    return Workspace(analysis=quiet, job=job, partial=True, inputs=request)


def _job_text(request: Inputs, job: JobScript | None) -> JobScriptText | None:
    if job is None:
        return None
    # --jobid: the script Slurm kept for the job
    return JobScriptText(str(request.job or job.path or f"job {request.jobid}"), job.render_text())


def analyze_profiles(request: Inputs, cwd: Path | None = None) -> ProfileAnalysis:
    profiles = load_profiles(request.profiles)
    finder = SourceFinder(
        profile_dirs=_dirs_of(request.profiles),
        source_roots=tuple(Path(r) for r in request.source_roots),
        cwd=cwd,
    )
    return analyze(profiles, finder)


def load_workspace(
    request: Inputs,
    cwd: Path | None = None,
    job_script: JobScript | None = None,
    progress: Progress | None = None,
    traces: TraceSet | None = None,
) -> Workspace:
    """Everything the inputs say, with the advice. ``job_script``: the job script already
    read (each command reads the file once); ``progress``: told the bytes of the traces read
    so far and their total, while they are read; ``traces``: the traces already read."""
    if request.is_empty():
        raise InputError(None, "nothing to read: give a profile (.lprof), --job or other inputs")
    from tuneadvisor.trainscript.parsed import gc_paused

    # The advisor's modules and the rule pack live as long as the process: no collector
    # passes while they load (a report of a small profile spent 1 % of its start-up in them)
    with gc_paused():
        from tuneadvisor.advisor.advice import advise
        from tuneadvisor.workspace.gather import gather
        from tuneadvisor.workspace.read_files import read_job
        from tuneadvisor.workspace.rule_files import load_rules, rule_dirs
        from tuneadvisor.workspace.tuned_files import tuned_files

        # a bad rule file fails before any work; an unchanged pack is read from the cache
        rules = load_rules(rule_dirs(request.rules), cached=True)
    if job_script is None and request.job is not None:
        job_script = read_job(request.job)
    analysis = analyze_profiles(request, cwd) if request.profiles else None
    if traces is None:
        traces = read_traces(request, progress)
    gathered = gather(request, analysis, job=job_script, traces=traces)
    advice = advise(gathered, rules)
    tuned = tuned_files(gathered, advice.plan)
    when = None
    if request.queue:  # asked of Slurm only with --queue: a report stays the same elsewhere
        from tuneadvisor.slurm.client import SlurmClient
        from tuneadvisor.workspace.time_to_result import time_to_result

        when = time_to_result(advice, tuned, SlurmClient())
        advice = replace(advice, not_read=(*advice.not_read, *when.not_read))
    return Workspace(
        analysis=analysis,
        job=_job_text(request, gathered.job),
        advice=advice,
        inputs=request,
        metrics=gathered.metrics,
        tuned=tuned,
        traces=traces,
        time_to_result=when,
    )


def read_traces(request: Inputs, progress: Progress | None = None) -> TraceSet | None:
    """The torch.profiler traces of PROFILE, read once as a stream; None without any."""
    if not request.traces:
        return None
    from tuneadvisor.profile.trace.reader import read_trace_set

    return read_trace_set(request.traces, progress)


def _dirs_of(paths: Sequence[str]) -> tuple[Path, ...]:
    dirs: list[Path] = []
    for p in paths:
        parent = Path(p).resolve().parent
        if parent not in dirs:
            dirs.append(parent)
    return tuple(dirs)
