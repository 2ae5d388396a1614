"""``tuneadvisor watch``: targets, the headless run, and the live screen (imported lazily)."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from types import FrameType
from typing import TypedDict

from tuneadvisor.advisor.rules import Rule
from tuneadvisor.errors import InputError
from tuneadvisor.metrics.host import HostSampler
from tuneadvisor.metrics.nvml import NvmlSampler, visible_filter
from tuneadvisor.metrics.recording import RecordingHeader, RecordingWriter
from tuneadvisor.slurm.client import SlurmClient, SlurmError
from tuneadvisor.watch.deferred_signals import signals_deferred
from tuneadvisor.watch.job_target import (
    JobPlan,
    SlurmPids,
    plan_job,
    require_processes_here,
    slurm_lister,
    still_running,
    this_node,
    watcher_pids,
)
from tuneadvisor.watch.live_run import LiveRun
from tuneadvisor.watch.merge import MergedSession
from tuneadvisor.watch.output import FileTail, open_tail
from tuneadvisor.watch.program import Program, default_log, start_program
from tuneadvisor.watch.remote import RemoteSamplers
from tuneadvisor.watch.request import WatchRequest
from tuneadvisor.watch.session import Sampler, WatchSession, job_facts_from_env
from tuneadvisor.workspace.rule_files import load_rules, rule_dirs

PCIE_MIN_INTERVAL_S = 0.5  # NVML measures PCIe throughput over ~20 ms per call and device
SLURM_TIMEOUT_S = 20.0  # a Slurm command asked mid-watch must not stall the rounds for long
DRAIN_S = 2.0  # after the program's end, its output may still be in the pipe
TAIL_LINES = 10  # of the program's output, printed when the screen closes
# read this many times as many lines where some are hidden: the bundled scripts write a
# progress record after each line of their own
HIDDEN_SHARE = 4


@dataclass
class _Target:
    label: str
    roots: list[int] | None
    job_id: str | None
    program: Program | None = None
    plan: JobPlan | None = None


def _columns() -> int | None:
    """The program's terminal is as wide as the output pane (about the screen's width)."""
    try:
        return max(20, os.get_terminal_size(sys.stdout.fileno()).columns - 4)
    except OSError:
        return None


def _target(request: WatchRequest, screen: bool) -> _Target:
    """The target of a checked request (tuneadvisor.commands.watch); a command starts here."""
    if request.command:
        log = request.log or (None if request.stream else default_log(request.record))
        program = start_program(list(request.command), screen=screen, log_path=log,
                                columns=_columns())  # fmt: skip
        label = f"pid {program.pid} ({' '.join(request.command)})"
        return _Target(label, [program.pid], None, program)
    if request.pids:
        return _Target(f"pid {', '.join(map(str, request.pids))}", list(request.pids), None)
    if request.job:
        plan = plan_job(request.job, SlurmClient(timeout_s=SLURM_TIMEOUT_S), request.where)
        require_processes_here(plan)
        return _Target(plan.label, None, request.job, plan=plan)
    return _Target("the whole node", None, None)


class _Schedule(TypedDict):
    interval_s: float
    window_s: float
    duration_s: float | None


def _schedule(request: WatchRequest) -> _Schedule:
    return {
        "interval_s": request.interval_s,
        "window_s": request.window_s,
        "duration_s": request.duration_s,
    }


def _recorder(
    request: WatchRequest, header: RecordingHeader, close: Callable[[], None]
) -> RecordingWriter | None:
    """--record FILE, or the --stream on stdout of a node's sampler."""
    if request.stream:
        return RecordingWriter(None, replace(header, node=this_node()), stream=sys.stdout)
    if not request.record:
        return None
    try:
        return RecordingWriter(request.record, header)
    except OSError as exc:
        close()
        raise InputError(request.record, f"cannot write: {exc.strerror or exc}") from None


def _host_sampler(target: _Target, watcher: str | None) -> HostSampler:
    plan = target.plan
    if plan is not None and plan.how == "slurm":
        client = SlurmClient(timeout_s=SLURM_TIMEOUT_S)
        return SlurmPids(
            slurm_lister(client, plan.job_id),
            still_running(client, plan.job_id),
            watchers=watcher_pids(watcher),
        )
    return HostSampler(target.roots, job_id=target.job_id)


def _merged_session(
    request: WatchRequest, plan: JobPlan, rules: Sequence[Rule]
) -> tuple[WatchSession, RemoteSamplers]:
    """One sampler per node of the job (srun --overlap), their rounds merged."""
    command = [sys.executable, "-m", "tuneadvisor", "watch", "--job", plan.job_id, "--this-node",
               "--headless", "--stream", "--interval", repr(request.interval_s),
               "--watcher", f"{this_node()}:{os.getpid()}"]  # fmt: skip
    if request.gpus is not None:
        command += ["--gpus", request.gpus]
    client = SlurmClient(timeout_s=SLURM_TIMEOUT_S)
    step_name = f"tuneadvisor-watch-{this_node()}-{os.getpid()}"  # this watch's own step

    def cancel_leftovers() -> None:
        try:
            client.cancel_steps_named(plan.job_id, step_name)
        except SlurmError as exc:  # said, not raised: the watch is ending anyway
            print(f"tuneadvisor: {exc}", file=sys.stderr)

    remote: RemoteSamplers | None = None
    try:
        with signals_deferred():  # a Ctrl-C as srun starts comes once `remote` holds it
            proc = client.overlap_step(plan.job_id, len(plan.nodes), command, step_name)
            remote = RemoteSamplers(proc, plan.nodes, request.interval_s,
                                    leftovers=cancel_leftovers)  # fmt: skip
        remote.wait_started()
    except BaseException:  # Ctrl-C or a failed start: no srun step may outlive the watch
        if remote is not None:
            remote.close()
        raise
    header = RecordingHeader(
        interval_s=request.interval_s,
        window_s=request.window_s,
        target=plan.label,
        nodes=tuple(remote.nodes),
        gpu_no_data=remote.gpu_reason,
        job=dict(plan.facts),  # what a replay compares use with
    )
    recorder = _recorder(request, header, remote.close)
    session = MergedSession(remote, rules, **_schedule(request), recorder=recorder, job=plan.facts)
    return session, remote


def build_session(
    request: WatchRequest, target: _Target
) -> tuple[WatchSession, Sampler | RemoteSamplers]:
    # A node's sampler of a multi-node watch sends rounds; the rules run where they merge.
    rules = () if request.stream else load_rules(rule_dirs(request.rules))
    if target.plan is not None and target.plan.how == "srun":
        return _merged_session(request, target.plan, rules)
    host = _host_sampler(target, request.watcher)
    # A program of ours is reaped as soon as it exits: gone already is an end, not an error.
    missing = host.check_roots() if target.program is None else []
    if missing:
        raise InputError(None, f"--pid {missing[0]}: no such process")
    host.sample()  # primes CPU counters and reads the target's environment
    env = host.target_env()
    spec = request.gpus
    if spec is None and env is not None:
        spec = env.get("CUDA_VISIBLE_DEVICES")
    gpu = NvmlSampler(visible_filter(spec), pcie=request.interval_s >= PCIE_MIN_INTERVAL_S)
    sampler = Sampler(host, gpu)
    job = job_facts_from_env(env)
    plan = target.plan
    if plan is not None:
        job.update(plan.facts)  # slurmctld's word over the environment's
    header = RecordingHeader(
        interval_s=request.interval_s,
        window_s=request.window_s,
        target=target.label,
        gpu_no_data=sampler.gpu_reason,
        activity_no_data=None if sampler.gpu_reason else sampler.activity_reason,
        driver=gpu.driver,
        job=job,  # what a replay compares use with
    )
    recorder = _recorder(request, header, sampler.close)
    session = WatchSession(
        sampler,
        rules,
        **_schedule(request),
        recorder=recorder,
        job=job,
        # --job through Slurm ends with the job; matched by environment, it never did
        follow_roots=target.roots is not None or (plan is not None and plan.how == "slurm"),
    )
    return session, sampler


def _exit_status(program: Program | None, default: int) -> int:
    if program is None:
        return default
    program.wait()
    return program.returncode or 0


def _job_output(target: _Target) -> tuple[LiveRun, FileTail | None]:
    """``--job``: its output file (StdOut) in the pane, when this node can read it."""
    plan = target.plan
    if plan is None:
        return LiveRun(), None
    tail = open_tail(plan.std_out)
    if tail is None:
        why = f"{plan.std_out} is not readable here" if plan.std_out else "Slurm did not say"
        return LiveRun(output_missing=f"the job's output: {why}"), None
    return LiveRun(output=tail.output, output_title=f"The job's output: {plan.std_out}"), tail


Show = Callable[[WatchSession, str, LiveRun], int]
# The headless run's closing text: (session, target label, recording path) -> text.
Summary = Callable[[WatchSession, str, str | None], str]


def run_watch(
    request: WatchRequest,
    summary: Summary,
    show: Show | None = None,
    hidden: Callable[[str], bool] | None = None,
) -> int:
    """Headless: sample and print ``summary``. Otherwise ``show(session, title, run)`` runs
    the live screen (the command passes both; this layer imports neither the TUI nor how the
    summary reads); ``hidden``: the output lines the screen's pane leaves out (the training's
    progress records), left out of the last lines printed after it too."""
    screen = show is not None and request.wants_screen
    if screen and not sys.stdout.isatty():
        raise InputError(None, "watch: stdout is not a terminal; use --headless")
    target = _target(request, screen)
    built: list[WatchSession] = []
    program = target.program

    def stop(signum: int, frame: FrameType | None) -> None:
        # Before the session exists (srun steps starting) and for a hang-up of the screen's
        # terminal, unwind at once: the finally clauses end the steps and close the files.
        if not built or (screen and signum == signal.SIGHUP):
            raise KeyboardInterrupt
        built[0].stop.set()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        try:
            session, sampler = build_session(request, target)
        except BaseException:
            if program is not None:
                program.kill()
                program.wait()
                program.close()
            raise
        built.append(session)
        try:
            return _watch(request, target, session, summary, show, hidden)
        except BaseException:
            if program is not None and screen:  # the screen's terminal hung up: as a
                program.signal(signal.SIGHUP)  # terminal would, tell the program
            raise
        finally:
            sampler.close()
            if session.recorder is not None:
                session.recorder.close()
            if program is not None and not program.left_running:
                program.drained(DRAIN_S)
                program.close()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _watch(
    request: WatchRequest,
    target: _Target,
    session: WatchSession,
    summary: Summary,
    show: Show | None,
    hidden: Callable[[str], bool] | None = None,
) -> int:
    if request.stream:
        return _stream(session)
    program = target.program
    if request.headless or show is None:
        try:
            session.run()
        except KeyboardInterrupt:
            session.ended_because = "interrupted"
        if program is not None:
            program.drained(DRAIN_S)  # its last lines before the summary, not amid it
        sys.stdout.write(summary(session, target.label, request.record))
        sys.stdout.flush()
        return _exit_status(program, 0)
    tail = None
    if program is not None:
        run = LiveRun.of_program(program)
    else:
        run, tail = _job_output(target)
    run.summary = lambda: summary(session, target.label, request.record)
    try:
        if tail is not None:
            tail.start()
        code = show(session, f"tuneadvisor watch: {target.label}", run)
    finally:
        if tail is not None:
            tail.close()
    if program is not None and program.left_running:
        program.detach()
        where = f"goes on to {program.log_path}" if program.log_path else "is not kept"
        print(f"tuneadvisor: pid {program.pid} left running; its output {where}")
        return code
    code = _exit_status(program, code)
    _print_end(session, target, run, summary, request.record, hidden)
    return code


def _print_end(
    session: WatchSession,
    target: _Target,
    run: LiveRun,
    summary: Summary,
    record: str | None,
    hidden: Callable[[str], bool] | None = None,
) -> None:
    """After the screen: the program's last lines (less the ``hidden`` ones, as the pane
    showed them) and how it ended, then the summary."""
    out = []
    program = run.program
    if program is not None:
        program.drained(DRAIN_S)
    if run.output is not None:
        lines = run.output.tail(TAIL_LINES * (1 if hidden is None else HIDDEN_SHARE))
        lines = [line for line in lines if hidden is None or not hidden(line)][-TAIL_LINES:]
        if lines:
            whose = f"pid {program.pid}'s output" if program is not None else "the job's output"
            where = f" (all of it in {program.log_path})" if program and program.log_path else ""
            out.append(f"── the last {len(lines)} lines of {whose}{where} ──")
            out += lines
    if program is not None:
        out.append(f"The program (pid {program.pid}) ended: {program.describe_end()} "
                   f"after {program.wall_s:.1f} s")  # fmt: skip
    out.append(summary(session, target.label, record).rstrip("\n"))
    sys.stdout.write("\n".join(out) + "\n")
    sys.stdout.flush()


def _stream(session: WatchSession) -> int:
    """A node's sampler: rounds on stdout until the job's processes here end, or srun
    ends the step (SIGTERM), or the reader is gone (a closed pipe)."""
    try:
        session.run()
    except (BrokenPipeError, KeyboardInterrupt):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes at exit
    return 0
