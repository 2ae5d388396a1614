"""The host sampler (psutil): per-core CPU, memory, and the watched process tree.

Targets: one or more root PIDs and all their descendants (``--pid``, ``-- COMMAND``); the
processes of a Slurm job on this node (``--job``: the job's cgroup ``/job_ID/`` or, failing
that, ``SLURM_JOB_ID`` in the process environment); or nothing (the whole node: the busiest
processes are listed, the tree totals are left absent).

Processes come and go: one that exits between listing and reading is dropped for that round
(``NoSuchProcess``), a zombie is shown as such with no values, and a value the OS will not give
(``AccessDenied``: another user's ``/proc/PID/io`` or environment) is None with the field named
in ``denied``. None of these is an error.

CPU percentages are computed here from ``cpu_times`` differences between rounds (100 = one
core busy), so no psutil module state is shared and the first round of a process is None
rather than psutil's meaningless 0.0.

Roles: ``worker`` is a child of a Python process that is a ``multiprocessing`` child of it
(fork keeps the parent's command line; spawn and forkserver run ``spawn_main``), which is how
PyTorch starts DataLoader workers; ``main`` is a Python process that is not a worker, with its
DDP ``rank`` from ``RANK`` (torchrun) or ``SLURM_PROCID`` (srun with several tasks);
``launcher`` is torchrun, srun, mpirun or a shell; ``helper`` is multiprocessing's resource
tracker or forkserver, or slurmstepd.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

import psutil

from tuneadvisor.metrics.model import HostSample
from tuneadvisor.metrics.snapshot import (
    ROLE_CHILD,
    ROLE_HELPER,
    ROLE_LAUNCHER,
    ROLE_MAIN,
    ROLE_WORKER,
    ProcSample,
)

MIB = 1024 * 1024
NODE_TOP = 15  # processes listed when watching the whole node
_LAUNCHERS = frozenset({"torchrun", "srun", "mpirun", "mpiexec", "accelerate", "deepspeed"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "tcsh", "csh", "slurm_script"})
_ENV_KEYS = (
    "RANK",
    "LOCAL_RANK",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_JOB_ID",
    "SLURM_CPUS_PER_TASK",
    "SLURM_MEM_PER_NODE",
    "SLURM_JOB_GPUS",
    "CUDA_VISIBLE_DEVICES",
)


def _base(arg: str) -> str:
    return os.path.basename(arg)


def _is_python(cmdline: Sequence[str], name: str) -> bool:
    first = _base(cmdline[0]) if cmdline else name
    return first.startswith("python") or name.startswith("python")


@dataclass
class _Tracked:
    proc: psutil.Process
    create_time: float
    name: str
    cmdline: tuple[str, ...]
    user: str | None
    env: dict[str, str] | None  # None: not readable
    comm: str | None  # /proc/PID/comm when first seen: it changes on exec
    denied: list[str] = field(default_factory=list)
    last_t: float | None = None
    last_cpu_s: float | None = None
    last_io: tuple[int, int] | None = None


@dataclass(frozen=True)
class HostReading:
    host: HostSample
    procs: tuple[ProcSample, ...]
    problems: tuple[str, ...] = ()
    roots_alive: bool = True


class HostSampler:
    """Sample the node and the target's processes; one instance per watch."""

    def __init__(
        self,
        roots: Sequence[int] | None = None,
        *,
        job_id: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._roots = None if roots is None else tuple(roots)
        self._job_id = job_id
        self._clock = clock
        self._tracked: dict[int, _Tracked] = {}
        self._last_cores: list[tuple[float, float]] | None = None  # (busy, total) per core
        self._job_cache: dict[int, tuple[float, bool]] = {}  # pid -> (start time, member)
        self.whole_node = roots is None and job_id is None

    # ------------------------------------------------------------------ public

    def check_roots(self) -> list[int]:
        """The root PIDs that do not exist (the CLI says so and exits 2)."""
        return [pid for pid in self._roots or () if not psutil.pid_exists(pid)]

    def target_env(self) -> dict[str, str] | None:
        """The Slurm and CUDA variables of the watched process (the first root, else the
        first process of the job that lets us read them); None when none could be read."""
        order = list(self._roots or ()) + sorted(self._tracked)
        for pid in order:
            tracked = self._tracked.get(pid)
            if tracked is not None and tracked.env is not None:
                return dict(tracked.env)
        return None

    def sample(self) -> HostReading:
        t = self._clock()
        problems: list[str] = []
        cores = self._per_core()
        vm = psutil.virtual_memory()
        members, roots_alive = self._members(problems)
        procs: list[ProcSample] = []
        seen: set[int] = set()
        for proc in members:
            sample = self._read(proc, t, problems)
            if sample is not None:
                procs.append(sample)
                seen.add(sample.pid)
        for pid in set(self._tracked) - seen:
            del self._tracked[pid]  # exited (or left the tree)
        procs = self._with_roles(procs)
        if self.whole_node:
            procs.sort(key=lambda p: -(p.cpu_pct or 0.0))
            procs = procs[:NODE_TOP]
        host = HostSample(
            t=t,
            cpu_pct_per_core=cores,
            mem_used_mib=(vm.total - vm.available) / MIB,
            mem_total_mib=vm.total / MIB,
        )
        if not self.whole_node:
            host = tree_totals(host, procs)
        return HostReading(host, tuple(procs), tuple(problems), roots_alive)

    # ------------------------------------------------------------------ node

    def _per_core(self) -> tuple[float, ...]:
        times = psutil.cpu_times(percpu=True)
        now = []
        for ct in times:
            total = sum(ct)
            idle = ct.idle + getattr(ct, "iowait", 0.0)
            now.append((total - idle, total))
        last, self._last_cores = self._last_cores, now
        if last is None or len(last) != len(now):
            return ()
        pct = []
        for (busy0, total0), (busy1, total1) in zip(last, now, strict=True):
            span = total1 - total0
            pct.append(0.0 if span <= 0 else max(0.0, min(100.0, 100.0 * (busy1 - busy0) / span)))
        return tuple(pct)

    # ------------------------------------------------------------------ membership

    def _members(self, problems: list[str]) -> tuple[list[psutil.Process], bool]:
        if self._roots is not None:
            out: list[psutil.Process] = []
            alive = False
            for pid in self._roots:
                try:
                    root = psutil.Process(pid)
                    if root.status() == psutil.STATUS_ZOMBIE:
                        out.append(root)
                        continue
                    alive = True
                    out.append(root)
                    out.extend(root.children(recursive=True))
                except psutil.NoSuchProcess:
                    continue
                except psutil.AccessDenied:
                    problems.append(f"pid {pid}: access denied listing its children")
                    alive = True
            return out, alive
        everyone = list(psutil.process_iter())
        if self._job_id is None:
            return everyone, True
        members = [p for p in everyone if self._in_job(p)]
        live = {p.pid for p in everyone}
        self._job_cache = {pid: v for pid, v in self._job_cache.items() if pid in live}
        return members, bool(members)

    def _in_job(self, proc: psutil.Process) -> bool:
        """Decided once per process (pid and start time): the job of a process never changes."""
        try:
            key = (proc.pid, float(proc.create_time()))
        except psutil.Error:
            return False
        known = self._job_cache.get(key[0])
        if known is not None and known[0] == key[1]:
            return known[1]
        member = self._cgroup_has_job(proc.pid)
        if not member:
            try:
                member = proc.environ().get("SLURM_JOB_ID") == self._job_id
            except (psutil.Error, OSError):
                member = False
        self._job_cache[key[0]] = (key[1], bool(member))
        return bool(member)

    def _cgroup_has_job(self, pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            return False
        return f"/job_{self._job_id}/" in text or text.rstrip().endswith(f"/job_{self._job_id}")

    # ------------------------------------------------------------------ one process

    def _track(self, proc: psutil.Process, comm: str | None) -> _Tracked:
        """First sight: what does not change (name, command line, user, environment)."""
        denied: list[str] = []
        name = ""
        cmdline: tuple[str, ...] = ()
        user: str | None = None
        env: dict[str, str] | None = None
        try:
            name = proc.name()
        except psutil.AccessDenied:
            denied.append("name")
        try:
            cmdline = tuple(proc.cmdline())
        except psutil.AccessDenied:
            denied.append("cmdline")
        try:
            user = proc.username()
        except (psutil.AccessDenied, KeyError):
            user = None
        try:
            full = proc.environ()
            env = {k: full[k] for k in _ENV_KEYS if k in full}
        except psutil.AccessDenied:
            denied.append("environ")
        if comm is not None and not name.startswith(comm):  # psutil cached the old name
            proc = psutil.Process(proc.pid)
            name = proc.name()
            cmdline = tuple(proc.cmdline()) if "cmdline" not in denied else ()
        return _Tracked(proc, proc.create_time(), name, cmdline, user, env, comm, denied)

    def _read(self, proc: psutil.Process, t: float, problems: list[str]) -> ProcSample | None:
        try:
            tracked = self._tracked.get(proc.pid)
            comm = _comm(proc.pid)
            if (
                tracked is None
                or tracked.create_time != proc.create_time()
                or (comm is not None and comm != tracked.comm)  # exec'd: a new program
            ):
                tracked = self._tracked[proc.pid] = self._track(proc, comm)
            return self._measure(tracked, t)
        except psutil.ZombieProcess:
            return ProcSample(pid=proc.pid, state=psutil.STATUS_ZOMBIE)
        except psutil.NoSuchProcess:
            self._tracked.pop(proc.pid, None)
            return None  # exited between listing and reading: normal
        except psutil.AccessDenied:
            problems.append(f"pid {proc.pid}: access denied")
            return ProcSample(pid=proc.pid, denied=("all",))

    def _measure(self, tr: _Tracked, t: float) -> ProcSample:
        proc = tr.proc
        denied = list(tr.denied)
        with proc.oneshot():
            cpu = proc.cpu_times()
            state = proc.status()
            mem = proc.memory_info()
            threads = proc.num_threads()
            ppid = proc.ppid()
            io: tuple[int, int] | None
            try:
                counters = proc.io_counters()
                io = (counters.read_bytes, counters.write_bytes)
            except (psutil.AccessDenied, AttributeError):
                io = None
                denied.append("io")
        cpu_s = cpu.user + cpu.system
        cpu_pct = read_rate = write_rate = None
        if tr.last_t is not None and t > tr.last_t and tr.last_cpu_s is not None:
            span = t - tr.last_t
            cpu_pct = max(0.0, 100.0 * (cpu_s - tr.last_cpu_s) / span)
            if io is not None and tr.last_io is not None:
                read_rate = max(0, io[0] - tr.last_io[0]) / MIB / span
                write_rate = max(0, io[1] - tr.last_io[1]) / MIB / span
        tr.last_t, tr.last_cpu_s, tr.last_io = t, cpu_s, io
        return ProcSample(
            pid=proc.pid,
            ppid=ppid,
            name=tr.name,
            cmdline=" ".join(tr.cmdline),
            user=tr.user,
            state=state,
            cpu_pct=cpu_pct,
            rss_mib=mem.rss / MIB,
            threads=threads,
            read_mib_s=read_rate,
            write_mib_s=write_rate,
            denied=tuple(denied),
        )

    # ------------------------------------------------------------------ roles

    def _with_roles(self, procs: list[ProcSample]) -> list[ProcSample]:
        by_pid = {p.pid: p for p in procs}
        out = []
        for p in procs:
            role, rank = self._role(p, by_pid)
            out.append(_replace_role(p, role, rank))
        return out

    def _role(self, p: ProcSample, by_pid: dict[int, ProcSample]) -> tuple[str, int | None]:
        tr = self._tracked.get(p.pid)
        if tr is None:
            return ROLE_CHILD, None
        cmd = tr.cmdline
        text = " ".join(cmd)
        parent = by_pid.get(p.ppid) if p.ppid is not None else None
        parent_tr = self._tracked.get(parent.pid) if parent is not None else None
        python = _is_python(cmd, tr.name)
        if python and parent_tr is not None and _is_python(parent_tr.cmdline, parent_tr.name):
            forked = cmd == parent_tr.cmdline and bool(cmd)
            if forked or "spawn_main" in text:  # forkserver children: forked from it
                return ROLE_WORKER, None
        if "multiprocessing.resource_tracker" in text or "multiprocessing.forkserver" in text:
            return ROLE_HELPER, None
        if tr.name == "slurmstepd":
            return ROLE_HELPER, None
        words = {_base(a) for a in cmd[:3]} | {tr.name}
        if words & _LAUNCHERS or "torch.distributed." in text:
            return ROLE_LAUNCHER, None
        if python:
            return ROLE_MAIN, _rank(tr.env)
        if tr.name in _SHELLS:
            return ROLE_LAUNCHER, None
        return ROLE_CHILD, None


def _comm(pid: int) -> str | None:
    """The kernel's name of the program (15 characters); None when unreadable or not Linux."""
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().rstrip("\n")
    except OSError:
        return None


def _rank(env: dict[str, str] | None) -> int | None:
    if not env:
        return None
    value = env.get("RANK")
    if value is None and int(env.get("SLURM_NTASKS", "1") or 1) > 1:
        value = env.get("SLURM_PROCID")
    try:
        return None if value is None else int(value)
    except ValueError:
        return None


def _replace_role(p: ProcSample, role: str, rank: int | None) -> ProcSample:
    return replace(p, role=role, rank=rank)


def tree_totals(host: HostSample, procs: Iterable[ProcSample]) -> HostSample:
    """The host sample with the watched tree's totals filled in."""
    procs = list(procs)
    cpu = [p.cpu_pct for p in procs if p.cpu_pct is not None]
    rss = [p.rss_mib for p in procs if p.rss_mib is not None]
    mains = [p.cpu_pct for p in procs if p.role == ROLE_MAIN and p.cpu_pct is not None]
    return replace(
        host,
        proc_cpu_pct=sum(cpu) if cpu else None,
        proc_rss_mib=sum(rss) if rss else None,
        proc_count=len(procs),
        main_cpu_pct=max(mains) if mains else None,
        workers=sum(1 for p in procs if p.role == ROLE_WORKER),
    )
