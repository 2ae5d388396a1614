"""``tuneadvisor watch``: targets, the headless run, and the live screen (imported lazily)."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
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
from tuneadvisor.session.rule_files import load_rules, rule_dirs
from tuneadvisor.slurm.client import SlurmClient, SlurmError
from tuneadvisor.watch.job_target import (
    JobPlan,
    SlurmPids,
    Where,
    plan_job,
    slurm_lister,
    still_running,
    this_node,
    watcher_pids,
)
from tuneadvisor.watch.merge import MergedSession
from tuneadvisor.watch.remote import RemoteSamplers
from tuneadvisor.watch.session import Sampler, WatchSession, job_facts_from_env

MIN_INTERVAL_S = 0.1
PCIE_MIN_INTERVAL_S = 0.5  # NVML measures PCIe throughput over ~20 ms per call and device
SLURM_TIMEOUT_S = 20.0  # a Slurm command asked mid-watch must not stall the rounds for long


@dataclass
class _Target:
    label: str
    roots: list[int] | None
    job_id: str | None
    child: subprocess.Popen[bytes] | None = None
    plan: JobPlan | None = None


def _target(args: argparse.Namespace) -> _Target:
    if args.watch_command and (args.pid or args.job):
        raise InputError(None, "watch: give --pid, --job or -- COMMAND, not several")
    if (args.this_node or args.all_nodes) and not args.job:
        flag = "--this-node" if args.this_node else "--all-nodes"
        raise InputError(None, f"watch: {flag} goes with --job JOBID")
    if args.watch_command:
        try:
            child = subprocess.Popen(args.watch_command)
        except OSError as exc:
            raise InputError(
                args.watch_command[0], f"cannot start: {exc.strerror or exc}"
            ) from None
        return _Target(
            f"pid {child.pid} ({' '.join(args.watch_command)})", [child.pid], None, child
        )
    if args.pid:
        return _Target(f"pid {', '.join(map(str, args.pid))}", list(args.pid), None)
    if args.job:
        if not args.job.replace("_", "").isdigit():
            raise InputError(None, f"--job {args.job}: not a Slurm job id")
        where: Where = "here" if args.this_node else "all" if args.all_nodes else "auto"
        plan = plan_job(args.job, SlurmClient(timeout_s=SLURM_TIMEOUT_S), where)
        return _Target(plan.label, None, args.job, plan=plan)
    return _Target("the whole node", None, None)


def _validate(args: argparse.Namespace, screen: bool) -> None:
    if args.interval < MIN_INTERVAL_S:
        raise InputError(None, f"--interval {args.interval:g}: at least {MIN_INTERVAL_S} s")
    if args.duration is not None and args.duration <= 0:
        raise InputError(None, f"--duration {args.duration:g}: must be positive")
    if args.window <= 0:
        raise InputError(None, f"--window {args.window:g}: must be positive")
    if args.stream and args.record:
        raise InputError(None, "watch: --stream writes the rounds to stdout; not with --record")
    if screen and not (args.headless or args.stream) and not sys.stdout.isatty():
        raise InputError(None, "watch: stdout is not a terminal; use --headless")


class _Schedule(TypedDict):
    interval_s: float
    window_s: float
    duration_s: float | None


def _schedule(args: argparse.Namespace) -> _Schedule:
    return {"interval_s": args.interval, "window_s": args.window, "duration_s": args.duration}


def _recorder(
    args: argparse.Namespace, header: RecordingHeader, close: Callable[[], None]
) -> RecordingWriter | None:
    """--record FILE, or the --stream on stdout of a node's sampler."""
    if args.stream:
        return RecordingWriter(None, replace(header, node=this_node()), stream=sys.stdout)
    if not args.record:
        return None
    try:
        return RecordingWriter(args.record, header)
    except OSError as exc:
        close()
        raise InputError(args.record, f"cannot write: {exc.strerror or exc}") from None


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
    args: argparse.Namespace, plan: JobPlan, rules: Sequence[Rule]
) -> tuple[WatchSession, RemoteSamplers]:
    """One sampler per node of the job (srun --overlap), their rounds merged."""
    command = [sys.executable, "-m", "tuneadvisor", "watch", "--job", plan.job_id, "--this-node",
               "--headless", "--stream", "--interval", repr(args.interval),
               "--watcher", f"{this_node()}:{os.getpid()}"]  # fmt: skip
    if args.gpus is not None:
        command += ["--gpus", args.gpus]
    client = SlurmClient(timeout_s=SLURM_TIMEOUT_S)
    step_name = f"tuneadvisor-watch-{this_node()}-{os.getpid()}"  # this watch's own step

    def cancel_leftovers() -> None:
        try:
            client.cancel_steps_named(plan.job_id, step_name)
        except SlurmError as exc:  # said, not raised: the watch is ending anyway
            print(f"tuneadvisor: {exc}", file=sys.stderr)

    remote = RemoteSamplers(client.overlap_step(plan.job_id, len(plan.nodes), command, step_name),
                            plan.nodes, args.interval, leftovers=cancel_leftovers)  # fmt: skip
    try:
        remote.wait_started()
    except BaseException:  # Ctrl-C or a failed start: no srun step may outlive the watch
        remote.close()
        raise
    header = RecordingHeader(
        interval_s=args.interval,
        window_s=args.window,
        target=plan.label,
        nodes=tuple(remote.nodes),
        gpu_no_data=remote.gpu_reason,
        job=dict(plan.facts),  # what a replay compares use with
    )
    recorder = _recorder(args, header, remote.close)
    session = MergedSession(remote, rules, **_schedule(args), recorder=recorder, job=plan.facts)
    return session, remote


def build_session(
    args: argparse.Namespace, target: _Target
) -> tuple[WatchSession, Sampler | RemoteSamplers]:
    # A node's sampler of a multi-node watch sends rounds; the rules run where they merge.
    rules = () if args.stream else load_rules(rule_dirs(args.rules))
    if target.plan is not None and target.plan.how == "srun":
        return _merged_session(args, target.plan, rules)
    host = _host_sampler(target, args.watcher)
    missing = host.check_roots()
    if missing:
        raise InputError(None, f"--pid {missing[0]}: no such process")
    host.sample()  # primes CPU counters and reads the target's environment
    env = host.target_env()
    spec = args.gpus
    if spec is None and env is not None:
        spec = env.get("CUDA_VISIBLE_DEVICES")
    gpu = NvmlSampler(visible_filter(spec), pcie=args.interval >= PCIE_MIN_INTERVAL_S)
    sampler = Sampler(host, gpu)
    job = job_facts_from_env(env)
    plan = target.plan
    if plan is not None:
        job.update(plan.facts)  # slurmctld's word over the environment's
    header = RecordingHeader(
        interval_s=args.interval,
        window_s=args.window,
        target=target.label,
        gpu_no_data=sampler.gpu_reason,
        driver=gpu.driver,
        job=job,  # what a replay compares use with
    )
    recorder = _recorder(args, header, sampler.close)
    session = WatchSession(
        sampler,
        rules,
        **_schedule(args),
        recorder=recorder,
        job=job,
        # --job through Slurm ends with the job; matched by environment, it never did
        follow_roots=target.roots is not None or (plan is not None and plan.how == "slurm"),
    )
    return session, sampler


def _exit_status(child: subprocess.Popen[bytes] | None, default: int) -> int:
    if child is None:
        return default
    code = child.wait()
    return 128 - code if code < 0 else code  # killed by signal N: 128 + N, as a shell says


Show = Callable[[WatchSession, str], int]
# The headless run's closing text: (session, target label, recording path) -> text.
Summary = Callable[[WatchSession, str, str | None], str]


def run_watch(args: argparse.Namespace, summary: Summary, show: Show | None = None) -> int:
    """Headless: sample and print ``summary``. Otherwise ``show(session, title)`` runs the
    live screen (the command passes both; this layer imports neither the TUI nor how the
    summary reads)."""
    _validate(args, screen=show is not None)
    target = _target(args)
    built: list[WatchSession] = []
    screen = show is not None and not (args.headless or args.stream)

    def stop(signum: int, frame: FrameType | None) -> None:
        # Before the session exists (srun steps starting) and for a hang-up of the screen's
        # terminal, unwind at once: the finally clauses end the steps and close the files.
        if not built or (screen and signum == signal.SIGHUP):
            raise KeyboardInterrupt
        built[0].stop.set()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        try:
            session, sampler = build_session(args, target)
        except BaseException:
            if target.child is not None:
                target.child.kill()
                target.child.wait()
            raise
        built.append(session)
        try:
            return _watch(args, target, session, summary, show)
        finally:
            sampler.close()
            if session.recorder is not None:
                session.recorder.close()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _watch(
    args: argparse.Namespace,
    target: _Target,
    session: WatchSession,
    summary: Summary,
    show: Show | None,
) -> int:
    if args.stream:
        return _stream(session)
    if args.headless or show is None:
        try:
            session.run()
        except KeyboardInterrupt:
            session.ended_because = "interrupted"
        sys.stdout.write(summary(session, target.label, args.record))
        sys.stdout.flush()
        return _exit_status(target.child, 0)
    code = show(session, f"tuneadvisor watch: {target.label}")
    return _exit_status(target.child, code)


def _stream(session: WatchSession) -> int:
    """A node's sampler: rounds on stdout until the job's processes here end, or srun
    ends the step (SIGTERM), or the reader is gone (a closed pipe)."""
    try:
        session.run()
    except (BrokenPipeError, KeyboardInterrupt):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes at exit
    return 0
