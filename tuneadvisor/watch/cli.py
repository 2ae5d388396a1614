"""``tuneadvisor watch``: targets, the headless run, and the live screen (imported lazily)."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType

from tuneadvisor.advisor.rules import load_rules, rule_dirs
from tuneadvisor.errors import InputError
from tuneadvisor.metrics.host import HostSampler
from tuneadvisor.metrics.nvml import NvmlSampler, visible_filter
from tuneadvisor.metrics.recording import RecordingWriter
from tuneadvisor.watch.session import Sampler, WatchSession, job_facts_from_env

MIN_INTERVAL_S = 0.1
PCIE_MIN_INTERVAL_S = 0.5  # NVML measures PCIe throughput over ~20 ms per call and device


@dataclass
class _Target:
    label: str
    roots: list[int] | None
    job_id: str | None
    child: subprocess.Popen[bytes] | None = None


def _target(args: argparse.Namespace) -> _Target:
    if args.watch_command and (args.pid or args.job):
        raise InputError(None, "watch: give --pid, --job or -- COMMAND, not several")
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
        return _Target(f"job {args.job} on this node", None, args.job)
    return _Target("the whole node", None, None)


def _validate(args: argparse.Namespace, screen: bool) -> None:
    if args.interval < MIN_INTERVAL_S:
        raise InputError(None, f"--interval {args.interval:g}: at least {MIN_INTERVAL_S} s")
    if args.duration is not None and args.duration <= 0:
        raise InputError(None, f"--duration {args.duration:g}: must be positive")
    if args.window <= 0:
        raise InputError(None, f"--window {args.window:g}: must be positive")
    if screen and not args.headless and not sys.stdout.isatty():
        raise InputError(None, "watch: stdout is not a terminal; use --headless")


def build_session(args: argparse.Namespace, target: _Target) -> tuple[WatchSession, Sampler]:
    rules = load_rules(rule_dirs(args.rules))
    host = HostSampler(target.roots, job_id=target.job_id)
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
    recorder = None
    if args.record:
        try:
            recorder = RecordingWriter(
                args.record,
                {
                    "interval_s": args.interval,
                    "target": target.label,
                    "gpu_no_data": sampler.gpu_reason,
                    "driver": gpu.driver,
                },
            )
        except OSError as exc:
            sampler.close()
            raise InputError(args.record, f"cannot write: {exc.strerror or exc}") from None
    session = WatchSession(
        sampler,
        rules,
        interval_s=args.interval,
        window_s=args.window,
        duration_s=args.duration,
        recorder=recorder,
        job=job_facts_from_env(env),
        follow_roots=target.roots is not None,
    )
    return session, sampler


def _exit_status(child: subprocess.Popen[bytes] | None, default: int) -> int:
    if child is None:
        return default
    code = child.wait()
    return 128 - code if code < 0 else code  # killed by signal N: 128 + N, as a shell says


Show = Callable[[WatchSession, str], int]


def run_watch(args: argparse.Namespace, show: Show | None = None) -> int:
    """Headless: sample and print the summary. Otherwise ``show(session, title)`` runs the
    live screen (the CLI passes the Textual app; this layer does not import the TUI)."""
    _validate(args, screen=show is not None)
    target = _target(args)
    try:
        session, sampler = build_session(args, target)
    except BaseException:
        if target.child is not None:
            target.child.kill()
            target.child.wait()
        raise

    def stop(signum: int, frame: FrameType | None) -> None:
        session.stop.set()

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        if args.headless or show is None:
            from tuneadvisor.watch.summary import render_summary

            try:
                session.run()
            except KeyboardInterrupt:
                session.ended_because = "interrupted"
            sys.stdout.write(render_summary(session, target.label, args.record))
            sys.stdout.flush()
            return _exit_status(target.child, 0)
        code = show(session, f"tuneadvisor watch: {target.label}")
        return _exit_status(target.child, code)
    finally:
        signal.signal(signal.SIGTERM, previous)
        sampler.close()
        if session.recorder is not None:
            session.recorder.close()
