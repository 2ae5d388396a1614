"""Run a bundled script here, inside an emulated allocation, with ``tuneadvisor watch``
sampling it and a progress bar, and leave a record (``submit`` has the sbatch way)."""

from __future__ import annotations

import json
import math
import os
import platform
import resource
import secrets
import shlex
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from tuneadvisor import __version__
from tuneadvisor.advisor.prediction import Prediction
from tuneadvisor.numbers import is_finite_number
from tuneadvisor.relaunch.bundled import Bundled, script_path
from tuneadvisor.relaunch.cpu_meter import CpuMeter
from tuneadvisor.relaunch.io_meter import IoMeter
from tuneadvisor.relaunch.local_allocation import (
    Allocation,
    available_cores,
    clean_environ,
    emulate,
    gpus_here,
    pin,
)
from tuneadvisor.relaunch.measurements import Measured, Measurements, parse_event
from tuneadvisor.relaunch.records import (
    CpuUse,
    Host,
    Paths,
    Resources,
    RunRecord,
    write_record,
)
from tuneadvisor.relaunch.settings import Settings
from tuneadvisor.relaunch.usage import recorded_usage
from tuneadvisor.relaunch.watcher import Watcher
from tuneadvisor.runrecord.io_use import IoUse
from tuneadvisor.runrecord.others_use import OthersUse
from tuneadvisor.runrecord.record import INTERRUPTED

EventSink = Callable[[Mapping[str, Any]], None]
LOG_NAME = "output.log"  # rank 0's output, in the run's folder
EVENTS_NAME = "events.jsonl"  # its progress events
# What the bundled scripts' --torch-profile writes (tensorboard_trace_handler, gzipped):
# rank{R}.{time_ns}.pt.trace.json.gz in the folder given.
TRACE_GLOB = "rank*.pt.trace.json.gz"


@dataclass(frozen=True)
class RunRequest:
    spec: Bundled
    settings: Settings
    runs_root: Path
    python: str
    data_dir: Path
    label: str | None = None
    profile: bool = False  # run under kernprof -l
    torch_profile: bool = False  # the script's torch.profiler capture: one trace per rank
    watch: bool = True  # sample the training with `tuneadvisor watch` into metrics.jsonl
    source: Mapping[str, Any] = field(default_factory=dict)  # where the settings came from
    max_restarts: int = 0  # torchrun only
    cores: Sequence[int] | None = None  # default: this process's affinity
    # what the report (or tune) predicted for this run: recorded beside its measurement
    prediction: Prediction | None = None


@dataclass(frozen=True)
class Task:
    argv: list[str]
    env: dict[str, str]
    cores: tuple[int, ...]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def new_run_dir(root: Path, name: str) -> tuple[str, Path]:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    run_id = f"{stamp}-{name}-{secrets.token_hex(2)}"
    folder = root / run_id
    folder.mkdir(parents=True, exist_ok=False)
    return run_id, folder


def trace_args(req: RunRequest, trace_dir: str) -> list[str]:
    """The script's own torch.profiler capture into ``trace_dir``, when asked."""
    return ["--torch-profile", trace_dir] if req.torch_profile else []


def traces_in(run_dir: Path) -> tuple[str, ...]:
    """The traces the ranks wrote into the run folder, by name."""
    return tuple(sorted(p.name for p in run_dir.glob(TRACE_GLOB)))


def script_command(
    req: RunRequest, run_dir: Path, rank: int | None
) -> tuple[list[str], Path | None]:
    """``python SCRIPT ARGS`` (under kernprof when profiling) and where its profile goes."""
    script = script_path(req.spec)
    args = [
        "--data-dir", str(req.data_dir), *req.settings.script_args(),
        *trace_args(req, str(run_dir.resolve())),
    ]  # fmt: skip
    if not req.profile:
        return [req.python, str(script), *args], None
    out = run_dir / ("profile.lprof" if rank is None else f"profile-rank{rank}.lprof")
    return [req.python, "-m", "kernprof", "-l", "-q", "-o", str(out), str(script), *args], out


def torchrun_command(req: RunRequest, profile_name: str | None, trace_dir: str = ".") -> list[str]:
    """``torchrun`` (as ``python -m torch.distributed.run``) on this node and the script,
    with the knobs as its arguments. Profiled, every rank runs kernprof itself: torchrun
    starts ``sh`` per rank (``--no-python``), which names the profile after the rank's
    ``$RANK`` (each rank its own file; kernprof around torchrun would only see the agent)."""
    py = req.python
    script = str(script_path(req.spec))
    args = [
        "--data-dir", str(req.data_dir.resolve()), *req.settings.script_args(),
        *trace_args(req, trace_dir),
    ]  # fmt: skip
    head = [
        py, "-m", "torch.distributed.run", "--standalone",
        "--nproc-per-node", str(req.settings.ntasks), "--max-restarts", str(req.max_restarts),
    ]  # fmt: skip
    if profile_name is None:
        return [*head, script, *args]
    kernprof = f"exec {shlex.quote(py)} -m kernprof -l -q -o {profile_name}"
    inner = f'{kernprof} {shlex.quote(script)} "$@"'
    return [*head, "--no-python", "sh", "-c", inner, "sh", *args]


def rank_profile_name(run_dir: Path) -> str:
    """The kernprof output for each torchrun rank, as ``sh`` expands it."""
    return f'{shlex.quote(str(run_dir.resolve()))}/profile-rank"$RANK".lprof'


def plan_tasks(req: RunRequest, alloc: Allocation, run_dir: Path) -> tuple[list[Task], list[Path]]:
    base = {**clean_environ(os.environ), **alloc.env, "PYTHONUNBUFFERED": "1"}
    settings = req.settings
    profiles: list[Path] = []
    if req.spec.launcher == "torchrun":  # one agent; it starts the ranks and restarts them
        name = rank_profile_name(run_dir) if req.profile else None
        argv = torchrun_command(req, name, str(run_dir.resolve()))
        if req.profile:
            profiles = [run_dir / f"profile-rank{r}.lprof" for r in range(settings.ntasks)]
        return [Task(argv, base, alloc.all_cores())], profiles
    if req.spec.launcher == "srun" and settings.ntasks > 1:
        port = str(_free_port())
        tasks = []
        for rank in range(settings.ntasks):
            argv, prof = script_command(req, run_dir, rank)
            env = {**base, **alloc.task_env(rank), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
            tasks.append(Task(argv, env, alloc.cores[rank]))
            if prof:
                profiles.append(prof)
        return tasks, profiles
    argv, prof = script_command(req, run_dir, None)
    env = {**base, **alloc.task_env(0)}
    return [Task(argv, env, alloc.cores[0])], [prof] if prof else []


class _Reaper:
    """Watches the tasks: when one fails, the others are stopped (``srun --kill-on-bad-exit``),
    since the rest of a DDP job would wait for it forever."""

    def __init__(self, procs: list[subprocess.Popen[str]]) -> None:
        self.procs = procs
        self.failed: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            codes = [p.poll() for p in self.procs]
            if all(c is not None for c in codes):
                return
            bad = [i for i, c in enumerate(codes) if c not in (None, 0)]
            if bad:
                self.failed = bad[0]
                for p in self.procs:
                    if p.poll() is None:
                        p.terminate()
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _children_cpu() -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0


def _host(alloc: Allocation) -> Host:
    return Host(socket.gethostname(), platform.platform(), os.cpu_count(), alloc.all_cores())


def expected_steps(start: Mapping[str, Any], settings: Settings) -> int | None:
    """How many steps the run will take, from its start event: the progress bar's length."""
    if start.get("max_steps"):  # the training program's line: "x" or 1e308 is no count
        steps = start["max_steps"]
        return int(steps) if is_finite_number(steps) and steps > 0 else None
    try:
        per_rank = int(start["batch_size"]) * int(start.get("world_size") or 1)
        epochs = int(str(start.get("epochs") or settings.knobs.get("epochs") or 1))
        return epochs * math.ceil(int(start["train_samples"]) / per_rank)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


class _Launched:
    """The tasks' processes as they start, and the files their output goes to (rank 0's
    stdout is read through a pipe: the progress events)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.procs: list[subprocess.Popen[str]] = []
        self.files: list[IO[str]] = []
        self.pinned = True  # every task got its cores

    def start(self, tasks: Sequence[Task]) -> None:
        for rank, task in enumerate(tasks):
            err = open(self.run_dir / f"stderr-rank{rank}.log", "w")  # noqa: SIM115
            out: IO[str] | int = subprocess.PIPE
            if rank > 0:
                out = open(self.run_dir / f"stdout-rank{rank}.log", "w")  # noqa: SIM115
                self.files.append(out)
            self.files.append(err)
            proc = subprocess.Popen(
                task.argv, stdout=out, stderr=err, env=task.env, text=True, cwd=self.run_dir,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
            self.pinned = pin(proc.pid, task.cores) and self.pinned
            self.procs.append(proc)

    def follow(
        self,
        log_path: Path,
        events_path: Path,
        measurements: Measurements,
        on_event: EventSink | None,
    ) -> None:
        """Rank 0's output into the log until it ends; its progress events into the events
        file, the measurements and ``on_event``."""
        stdout = self.procs[0].stdout
        assert stdout is not None
        with open(log_path, "w") as log, open(events_path, "w") as events:
            for line in stdout:
                log.write(line)
                event = parse_event(line.rstrip("\n"))
                if event is not None:
                    events.write(json.dumps(event) + "\n")
                    measurements.add(event)
                    if on_event is not None:
                        on_event(event)

    def wait(self, reaper: _Reaper, notes: list[str]) -> str:
        """Every task's end: completed when all exited 0."""
        for proc in self.procs:
            proc.wait()
        reaper.stop()
        status = "completed" if all(p.returncode == 0 for p in self.procs) else "failed"
        if reaper.failed is not None:
            notes.append(f"task {reaper.failed} failed; the other tasks were stopped")
        return status

    def stop(self) -> None:
        """Ctrl-C: terminate every task still running, kill one that does not end in 10 s."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()

    def close_files(self) -> None:
        for f in self.files:
            f.close()


@dataclass
class _Ran:
    """How a local run went, for its record."""

    status: str
    wall_s: float
    cpu_s: float  # of the tasks (the children of this process, the watcher left out)
    max_rss_mib: float
    started: datetime
    measurements: Measurements  # from rank 0's progress events
    exit_codes: tuple[int | None, ...] = ()
    task_pids: tuple[int, ...] = ()
    sampled: dict[str, float] = field(default_factory=dict)  # by watch
    metrics: tuple[str, ...] = ()  # the recording's file name, when watch recorded
    io: IoUse | None = None  # storage evidence (relaunch/io_meter.py)
    others: OthersUse | None = None  # other load on its CPUs (relaunch/cpu_meter.py)


def run_local(req: RunRequest, on_event: EventSink | None = None) -> RunRecord:
    """Run to the end (or a failure) and write the record; ``on_event`` sees each progress
    event as it comes (the progress bar)."""
    spec, settings = req.spec, req.settings
    run_id, run_dir = new_run_dir(req.runs_root, spec.name)
    alloc = emulate(
        settings, name=spec.name, submit_dir=str(Path.cwd()), cores=req.cores, gpus=gpus_here()
    )
    tasks, profiles = plan_tasks(req, alloc, run_dir)
    notes = [*settings.notes, *alloc.notes]
    if req.profile and spec.launcher == "torchrun" and req.max_restarts:
        notes.append("profiles: a restarted rank rewrites its profile (the last attempt's)")
    ran = _run_tasks(req, tasks, run_dir, notes, on_event)
    if req.torch_profile:
        notes += trace_notes(traces_in(run_dir), settings.ntasks)
    record = _local_record(req, run_id, run_dir, alloc, tasks, profiles, ran, notes)
    return write_record(run_dir, record)


def trace_notes(traces: Sequence[str], ranks: int) -> list[str]:
    """Why a profiled run has fewer traces than ranks: the capture writes a rank's trace
    only once its schedule reached the active steps."""
    if len(traces) >= ranks:
        return []
    return [
        f"torch.profiler wrote {len(traces)} traces for {ranks} ranks: a rank that stopped "
        "within its first two steps (wait 1, warmup 1) records none"
    ]


def _run_tasks(
    req: RunRequest,
    tasks: Sequence[Task],
    run_dir: Path,
    notes: list[str],
    on_event: EventSink | None,
) -> _Ran:
    """Start the tasks (and watch beside them), follow them to their end or Ctrl-C, and say
    how it went; the files are closed and the watcher stopped whatever happens."""
    launched = _Launched(run_dir)
    measurements = Measurements()
    started = datetime.now(UTC)
    cpu0, _ = _children_cpu()
    io = IoMeter(req.data_dir)
    # the CPUs the tasks could be given (the allocation's pool): others' load on them
    others = CpuMeter(req.cores if req.cores is not None else available_cores())
    t0 = time.perf_counter()
    watcher: Watcher | None = None
    status = "failed"

    def sink(event: Mapping[str, Any]) -> None:
        if event.get("event") == "step":  # what start-up read, apart from training's reads
            io.first_step([p.pid for p in launched.procs])
        if on_event is not None:
            on_event(event)

    try:
        launched.start(tasks)
        if req.watch:
            pids = [p.pid for p in launched.procs]
            watcher = Watcher(run_dir, pids, clean_environ(os.environ))
        reaper = _Reaper(launched.procs)
        launched.follow(run_dir / LOG_NAME, run_dir / EVENTS_NAME, measurements, sink)
        status = launched.wait(reaper, notes)
    except KeyboardInterrupt:
        # a complete record of an incomplete run: the caller exits 130 (tune stops there)
        status = INTERRUPTED
        launched.stop()
    finally:
        wall = time.perf_counter() - t0
        cpu1, maxrss = _children_cpu()  # before the watcher is reaped: its CPU is not ours
        io_use = io.finish()  # likewise its reads
        launched.close_files()
        if watcher is not None:
            watcher.stop()
        others_use = others.finish()  # the watcher reaped: its CPU is the run's, not others'
    if not launched.pinned:
        notes.append("could not set CPU affinity here: the run used every core")
    ran = _Ran(
        status, wall, cpu1 - cpu0, maxrss, started, measurements,
        exit_codes=tuple(p.returncode for p in launched.procs),
        task_pids=tuple(p.pid for p in launched.procs), io=io_use, others=others_use,
    )  # fmt: skip
    if watcher is not None:
        ran.sampled = recorded_usage([watcher.record])
        if ran.sampled:
            ran.metrics = (watcher.record.name,)
        else:
            why = watcher.error or watcher.last_words() or "no output"
            notes.append(f"tuneadvisor watch recorded nothing ({why})")
    return ran


def _local_record(
    req: RunRequest,
    run_id: str,
    run_dir: Path,
    alloc: Allocation,
    tasks: Sequence[Task],
    profiles: Sequence[Path],
    ran: _Ran,
    notes: Sequence[str],
) -> RunRecord:
    spec, settings = req.spec, req.settings
    start = ran.measurements.start
    wall, cpu = ran.wall_s, ran.cpu_s
    return RunRecord(
        id=run_id,
        name=spec.name,
        label=req.label,
        status=ran.status,
        exit_codes=ran.exit_codes,
        task_pids=ran.task_pids,  # what watch followed (its watch.log names them)
        where="local",
        script=str(script_path(spec)),
        launcher=spec.launcher,
        settings=settings,
        source=dict(req.source),
        prediction=req.prediction.as_json() if req.prediction is not None else None,
        commands=tuple(tuple(t.argv) for t in tasks),
        allocation=alloc,
        host=_host(alloc),
        versions={
            "tuneadvisor": __version__,
            "python": start.get("python"),
            "torch": start.get("torch"),
            "torchvision": start.get("torchvision"),
            "cuda": start.get("cuda"),
        },
        started=ran.started.isoformat(timespec="seconds"),
        ended=datetime.now(UTC).isoformat(timespec="seconds"),
        wall_s=round(wall, 3),
        measured=Measured.of(ran.measurements),
        resources=Resources(
            CpuUse(
                requested_cores=settings.ntasks * settings.cpus_per_task,
                cores_allowed=len(alloc.all_cores()),
                cpu_s=round(cpu, 3),
                cores_used=round(cpu / wall, 3) if wall > 0 else None,
                max_rss_mib=round(ran.max_rss_mib, 1),
            ),
            sampled=ran.sampled,  # by watch: the training tree, see relaunch/usage.py
            io=ran.io,
            cpu_others=ran.others,
        ),
        paths=Paths(
            dir=str(run_dir),
            log=LOG_NAME,
            events=EVENTS_NAME,
            profiles=tuple(p.name for p in profiles if p.exists()),
            metrics=ran.metrics,
            traces=traces_in(run_dir) if req.torch_profile else (),
        ),
        notes=tuple(notes),
    )


def stderr_tail(record: RunRecord, lines: int = 15) -> str:
    """The end of the failing task's stderr, for the error message."""
    base = Path(record.paths.dir)
    codes = record.exit_codes or ()
    rank = next((i for i, c in enumerate(codes) if c not in (0, None)), 0)
    try:
        text = (base / f"stderr-rank{rank}.log").read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])
