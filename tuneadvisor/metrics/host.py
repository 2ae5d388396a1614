"""The host sampler: per-core CPU, memory, and the watched process tree.

Targets: one or more root PIDs and all their descendants (``--pid``, ``-- COMMAND``); the
processes of a Slurm job on this node (``--job``: the job's cgroup ``/job_ID/`` or, failing
that, ``SLURM_JOB_ID`` in the process environment); or nothing (the whole node: the busiest
processes are listed, the tree totals are left absent).

Processes come and go: one that exits between listing and reading is dropped for that round,
a zombie is shown as such with no values, and a value the OS will not give (another user's
``/proc/PID/io`` or environment) is None with the field named in ``denied``. None of these
is an error.

Cost (issue 5: at most 5 % of one core at a 0.1 s interval). On Linux a round reads
``/proc`` directly (``proc_readers``): per process ``/proc/PID/stat`` (state, parent, CPU
times, threads, start time), ``/proc/PID/statm`` (RSS, exactly as psutil gives it) and
``/proc/PID/io``; for the node ``/proc/stat``, ``/proc/meminfo``, ``/proc/loadavg`` and the
``/proc`` listing. What does not change while a process runs one program (name, command
line, user, the Slurm/CUDA environment) is read once, with psutil, and kept with the
process's identity: its pid *and* start time, so a pid the kernel reuses for a new process
never inherits the old one's command line, role or CPU time; an ``exec`` (a new program
image in ``stat``) reads them again. The tree is not walked every round (psutil's
``children(recursive=True)`` reads every ``/proc/PID/stat`` on the node): only pids that are
new in the listing, or that the kernel handed out since the last round (the last pid in
``/proc/loadavg``: a pid reused between two rounds is among them), are looked at; the
process table is walked again only when a member ended (its children move to another parent)
or its pid names another process. Elsewhere (no ``/proc``) the same values come from psutil.

Each watched process's CPU affinity (one ``sched_getaffinity`` call a round: a rank may pin
itself after it starts) is kept as the kernel's list text (``metrics.affinity``); not for the
whole node, where other jobs' pinning says nothing of this one's binding.

CPU percentages are computed here from CPU-time differences between rounds (100 = one core
busy), so no psutil module state is shared and the first round of a process is None rather
than psutil's meaningless 0.0.

Process identity, roles (worker, main, launcher, helper), tree totals: ``metrics.proc_roles``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import psutil

from tuneadvisor.metrics.affinity import read_affinity
from tuneadvisor.metrics.model import HostSample
from tuneadvisor.metrics.proc_readers import DEFAULT, ZOMBIE, Gone, Readers, Stat
from tuneadvisor.metrics.proc_roles import ProcStatic, Tracked, role_of, tree_totals
from tuneadvisor.metrics.snapshot import ROLE_CHILD, ROLE_OTHER, ProcSample

MIB = 1024 * 1024
NODE_TOP = 15  # processes listed when watching the whole node
REWALK_S = 10.0  # the whole process table is read at least this often (a safety net)
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


@dataclass(frozen=True)
class HostReading:
    host: HostSample
    procs: tuple[ProcSample, ...]
    problems: tuple[str, ...] = ()
    roots_alive: bool = True


@dataclass
class _Row:
    pid: int
    st: Stat
    tr: Tracked
    rss: int
    cpu_pct: float | None
    read_mib_s: float | None
    write_mib_s: float | None
    io_denied: bool


# Rounds a process whose command line reads empty is read again before it is shown so.
EMPTY_CMDLINE_RETRIES = 3


def _kernel_thread(pid: int, ppid: int) -> bool:
    """kthreadd (pid 2) and its children have no command line at all."""
    return pid == 2 or ppid == 2


class HostSampler:
    """Sample the node and the target's processes; one instance per watch."""

    def __init__(
        self,
        roots: Sequence[int] | None = None,
        *,
        job_id: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        readers: Readers = DEFAULT,
    ) -> None:
        self._roots = None if roots is None else tuple(dict.fromkeys(roots))
        self._read = readers
        self._job_id = job_id
        self._clock = clock
        self._tracked: dict[int, Tracked] = {}
        self._last_cores: list[tuple[float, float]] | None = None  # (busy, total) per core
        self._job_cache: dict[int, tuple[float, bool]] = {}  # pid -> (start time, member)
        self._members: dict[int, float] | None = None  # the tree: pid -> start time
        self._walk_zombies: set[int] = set()  # members that were zombies at the last walk
        self._root_start: dict[int, float] = {}  # a root's identity when first seen
        self._listing: set[int] | None = None  # the pids of the last round's /proc listing
        self._listed_last_pid: int | None = None
        self._full_at: float | None = None  # when every listed pid was last looked at
        self.walks = 0  # full walks of the process table (tests and the bench read it)
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
            static = tracked.static if tracked is not None else None
            if static is not None and static.env is not None:
                return dict(static.env)
        return None

    def sample(self) -> HostReading:
        t = self._clock()
        problems: list[str] = []
        cores = self._per_core()
        used, total = self._memory()
        stats: dict[int, Stat | None] = {}  # read this round (None: gone)
        fresh, listing = self._changed(t)
        alive = True
        denied_roots: list[int] = []
        if self._roots is not None:
            members: Collection[int] = self._tree(listing, fresh, stats, denied_roots)
        elif self._job_id is not None:
            members = self._job(listing, fresh, stats)
            alive = bool(members)
        else:
            members = sorted(listing)
        got = {pid: self._measure(pid, t, stats, problems) for pid in members}
        if self._roots is not None and self._members is None:
            # What was measured shows the tree changed (a member ended, or its pid names
            # another process): walk it now, from what this round read already.
            members = self._members = self._walk(listing, stats, denied_roots)
            got = {
                pid: got[pid] if got.get(pid) is not None else self._measure(pid, t, stats, [])
                for pid in members
            }
        rows = [r for r in got.values() if isinstance(r, _Row)]
        out = [r for r in got.values() if isinstance(r, ProcSample)]
        for pid in [pid for pid in self._tracked if not isinstance(got.get(pid), _Row)]:
            del self._tracked[pid]  # exited (or left the tree)
        shown = rows
        if self.whole_node:
            rows.sort(key=lambda r: -(r.cpu_pct or 0.0))
            shown = rows[:NODE_TOP]
        out.extend(self._finish(shown, rows))
        if self.whole_node:
            out.sort(key=lambda p: -(p.cpu_pct or 0.0))
            out = out[:NODE_TOP]
        if self._roots is not None:
            for pid in dict.fromkeys(denied_roots):
                problems.append(f"pid {pid}: access denied listing its children")
            roots = set(self._roots)
            alive = bool(denied_roots) or any(p.pid in roots and p.state != ZOMBIE for p in out)
        host = HostSample(
            t=t,
            cpu_pct_per_core=cores,
            mem_used_mib=used / MIB,
            mem_total_mib=total / MIB,
        )
        if not self.whole_node:
            host = tree_totals(host, out)
        return HostReading(host, tuple(out), tuple(problems), alive)

    # ------------------------------------------------------------------ node

    def _per_core(self) -> tuple[float, ...]:
        now = self._read.cores()
        last, self._last_cores = self._last_cores, now
        if last is None or len(last) != len(now):
            return ()
        pct = []
        for (busy0, total0), (busy1, total1) in zip(last, now, strict=True):
            span = total1 - total0
            pct.append(0.0 if span <= 0 else max(0.0, min(100.0, 100.0 * (busy1 - busy0) / span)))
        return tuple(pct)

    def _memory(self) -> tuple[float, float]:
        got = self._read.memory()
        if got is None:
            vm = psutil.virtual_memory()
            return float(vm.total - vm.available), float(vm.total)
        return got

    # ------------------------------------------------------------------ membership

    def _changed(self, t: float) -> tuple[set[int], set[int]]:
        """(fresh, listing): the pids now listed, and those among them that are new since the
        last round or may have been handed to a new process since: the kernel hands out pids
        in a cycle, so a reused pid lies between the last round's last pid and this round's.
        Everything is fresh on the first round, after the cycle wrapped around (or someone
        moved it back through ns_last_pid, as CRIU does), and every REWALK_S seconds."""
        last = (
            self._read.last_pid()
        )  # before the listing: a pid handed out in between is seen next time
        listing = self._read.pids()
        prev, prev_last = self._listing, self._listed_last_pid
        self._listing, self._listed_last_pid = listing, last
        if (
            prev is None
            or last is None
            or prev_last is None
            or last < prev_last
            or self._full_at is None
            or t - self._full_at >= REWALK_S
        ):
            self._full_at = t
            self._members = None  # the tree is walked again too
            return set(listing), listing
        fresh = listing - prev
        if last != prev_last:
            fresh.update(p for p in listing if prev_last < p <= last)
        return fresh, listing

    def _stat_of(self, pid: int, stats: dict[int, Stat | None]) -> Stat | None:
        if pid not in stats:
            stats[pid] = self._read.stat(pid)
        return stats[pid]

    def _tree(
        self,
        listing: set[int],
        fresh: set[int],
        stats: dict[int, Stat | None],
        denied_roots: list[int],
    ) -> list[int]:
        members = self._members
        roots = self._roots or ()
        if members is not None and any(p not in listing and p not in roots for p in members):
            members = None  # one ended: its children now belong to another parent
        if members is not None:
            for pid in fresh.intersection(members):
                try:
                    st = self._stat_of(pid, stats)
                except PermissionError:
                    st = None
                if st is None or st.start != members[pid]:
                    members = None  # a member's pid now names another process
                    break
        if members is None:
            members = self._walk(listing, stats, denied_roots)
        else:
            pending = [pid for pid in fresh if pid not in members]
            while pending:  # new children of members (and their children, in any order)
                rest = []
                for pid in pending:
                    try:
                        st = self._stat_of(pid, stats)
                    except PermissionError:
                        continue
                    if st is None:
                        continue
                    if st.ppid in members:
                        members[pid] = st.start
                    else:
                        rest.append(pid)
                if len(rest) == len(pending):
                    break
                pending = rest
            for pid in self._roots or ():
                if pid in listing and pid not in members:
                    try:
                        self._stat_of(pid, stats)
                    except PermissionError:
                        denied_roots.append(pid)
        self._members = members
        return list(members)

    def _walk(
        self, listing: set[int], stats: dict[int, Stat | None], denied_roots: list[int]
    ) -> dict[int, float]:
        """The whole process table once: every root and all its descendants."""
        self.walks += 1
        children: dict[int, list[int]] = {}
        for pid in listing:
            try:
                st = self._stat_of(pid, stats)
            except PermissionError:
                continue
            if st is not None:
                children.setdefault(st.ppid, []).append(pid)
        members: dict[int, float] = {}
        self._walk_zombies = set()
        for root in self._roots or ():
            try:
                st = self._stat_of(root, stats)
            except PermissionError:
                if root in listing:
                    denied_roots.append(root)
                continue
            if st is None or st.start != self._root_start.setdefault(root, st.start):
                continue  # ended (its pid may name another process by now)
            members[root] = st.start
            if st.state == ZOMBIE:
                self._walk_zombies.add(root)
                continue
            stack = [root]
            while stack:
                for child in sorted(children.get(stack.pop(), ())):
                    child_st = stats[child]
                    if child not in members and child_st is not None:
                        members[child] = child_st.start
                        stack.append(child)
                        if child_st.state == ZOMBIE:
                            self._walk_zombies.add(child)
        return members

    def _job(self, listing: set[int], fresh: set[int], stats: dict[int, Stat | None]) -> list[int]:
        """Membership is decided once per process (pid and start time): its job never
        changes."""
        cache = self._job_cache
        for pid in [pid for pid in cache if pid not in listing]:
            del cache[pid]
        for pid in listing:
            known = cache.get(pid)
            if known is not None and pid not in fresh:
                continue
            try:
                st = self._stat_of(pid, stats)
            except PermissionError:
                continue
            if st is None:
                cache.pop(pid, None)
            elif known is None or known[0] != st.start:
                cache[pid] = (st.start, self._in_job(pid))
        return [pid for pid, (_, member) in cache.items() if member]

    def _in_job(self, pid: int) -> bool:
        if self._cgroup_has_job(pid):
            return True
        try:
            env: dict[str, str] = psutil.Process(pid).environ()
        except (psutil.Error, OSError):
            return False
        return env.get("SLURM_JOB_ID") == self._job_id

    def _cgroup_has_job(self, pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            return False
        return f"/job_{self._job_id}/" in text or text.rstrip().endswith(f"/job_{self._job_id}")

    # ------------------------------------------------------------------ one process

    def _measure(
        self, pid: int, t: float, stats: dict[int, Stat | None], problems: list[str]
    ) -> _Row | ProcSample | None:
        """One process's changing values: a row, a sample without values (zombie, denied),
        or None (it ended)."""
        try:
            st = self._stat_of(pid, stats)
        except PermissionError:
            problems.append(f"pid {pid}: access denied")
            return ProcSample(pid=pid, denied=("all",))
        expected = self._members.get(pid) if self._members is not None else None
        if st is None:
            if expected is not None:
                self._members = None  # a member ended: walk the tree again
            return None
        if expected is not None and expected != st.start:
            self._members = None  # its pid names another process now: walk the tree again
            return None
        job = self._job_cache.get(pid) if self._job_id is not None else None
        if job is not None and job[0] != st.start:  # reused: is the new process the job's?
            self._job_cache[pid] = (st.start, self._in_job(pid))
            if not self._job_cache[pid][1]:
                return None
        if st.state == ZOMBIE:
            if expected is not None and pid not in self._walk_zombies:
                self._members = None  # it just ended: its children moved to another parent
            return ProcSample(pid=pid, state=ZOMBIE)
        tr = self._tracked.get(pid)
        if tr is None or tr.start != st.start:  # a new process (perhaps on a reused pid)
            tr = self._tracked[pid] = Tracked(st.start, st.image)
        elif tr.image != st.image:  # exec'd: the same CPU counters, a new command line
            tr.image, tr.static, tr.role = st.image, None, None
        io_denied = False
        io: tuple[int, int] | None
        try:
            rss = st.rss if st.rss is not None else self._read.rss(pid)
            try:
                io = self._read.io(pid)
            except PermissionError:
                io, io_denied = None, True
        except Gone:
            stats[pid] = None
            return None
        cpu_pct = read_rate = write_rate = None
        if tr.last_t is not None and t > tr.last_t and tr.last_cpu_s is not None:
            span = t - tr.last_t
            cpu_pct = max(0.0, 100.0 * (st.cpu_s - tr.last_cpu_s) / span)
            if io is not None and tr.last_io is not None:
                read_rate = max(0, io[0] - tr.last_io[0]) / MIB / span
                write_rate = max(0, io[1] - tr.last_io[1]) / MIB / span
        tr.last_t, tr.last_cpu_s, tr.last_io = t, st.cpu_s, io
        return _Row(pid, st, tr, rss, cpu_pct, read_rate, write_rate, io_denied)

    def _load_static(self, row: _Row) -> bool:
        """Name, command line, user and environment, once per process; False: it ended."""
        tr = row.tr
        if tr.static is not None:
            return True
        denied: list[str] = []
        name = ""
        cmdline: tuple[str, ...] = ()
        user: str | None = None
        env: dict[str, str] | None = None
        try:
            proc = psutil.Process(row.pid)
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
        except psutil.NoSuchProcess:  # ended, or became a zombie (cmdline)
            return False
        try:  # the same process all along? (the pid could have been reused meanwhile)
            now = self._read.stat(row.pid)
        except PermissionError:
            now = row.st
        if now is None or now.start != tr.start or now.image != tr.image:
            return False  # it exec'd (or ended) while we read: again next round
        if not cmdline and "cmdline" not in denied and not _kernel_thread(row.pid, row.st.ppid):
            # An exec names the process before it lays out its arguments: read in between,
            # the command line is empty and would stay so. Again next round (a few times:
            # a process may have emptied its own).
            tr.empty_cmdlines += 1
            if tr.empty_cmdlines <= EMPTY_CMDLINE_RETRIES:
                return False
        tr.static = ProcStatic(name, cmdline, " ".join(cmdline), user, env, tuple(denied))
        return True

    def _finish(self, shown: list[_Row], rows: list[_Row]) -> list[ProcSample]:
        """The shown rows as samples, with roles (which need the parents' command lines)."""
        by_pid = {r.pid: r for r in rows}
        need = list(shown)
        if self.whole_node:  # only the shown processes and their parents are read
            wanted = {r.pid for r in shown}
            need += [
                by_pid[r.st.ppid] for r in shown if r.st.ppid in by_pid and r.st.ppid not in wanted
            ]
        ended = {r.pid for r in need if not self._load_static(r)}
        out = []
        for r in shown:
            if r.pid in ended:
                self._tracked.pop(r.pid, None)
                continue
            static = r.tr.static
            assert static is not None
            parent = by_pid.get(r.st.ppid)
            parent_static = None if parent is None or parent.pid in ended else parent.tr.static
            tr = r.tr
            if tr.role is None or tr.role_ppid != r.st.ppid or tr.role_parent is not parent_static:
                tr.role = role_of(static, parent_static)
                if not self.whole_node and tr.role[0] == ROLE_OTHER:
                    tr.role = (ROLE_CHILD, None)  # a root of the watched tree: what it ran
                tr.role_ppid, tr.role_parent = r.st.ppid, parent_static
            role, rank = tr.role
            out.append(
                ProcSample(
                    pid=r.pid,
                    ppid=r.st.ppid,
                    name=static.name,
                    cmdline=static.text,
                    role=role,
                    rank=rank,
                    user=static.user,
                    state=r.st.state,
                    cpu_pct=r.cpu_pct,
                    rss_mib=r.rss / MIB,
                    threads=r.st.threads,
                    read_mib_s=r.read_mib_s,
                    write_mib_s=r.write_mib_s,
                    denied=(*static.denied, "io") if r.io_denied else static.denied,
                    affinity=None if self.whole_node else read_affinity(r.pid),
                )
            )
        return out
