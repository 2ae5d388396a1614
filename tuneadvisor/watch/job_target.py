"""``watch --job ID``: ask Slurm where the job runs and which processes are its own.

The plan (``plan_job``): slurmctld says whether the job runs and on which nodes
(``scontrol show job``). A job running on this node alone is sampled here, its processes
from this node's slurmstepds (``scontrol listpids``); a job on other nodes too (or any job
with ``--all-nodes``; from a login node, every job) gets one sampler per node started
through Slurm (``srun --overlap``, ``watch.remote``). Without Slurm (no ``scontrol`` on
PATH, or slurmctld not answering) the processes are matched as before: the job's cgroup or
``SLURM_JOB_ID`` in their environment. The label says which way was taken.

New steps start while a job runs (each ``srun`` in the batch script), so ``SlurmPids``
asks listpids again every ``REQUERY_S`` seconds: listpids only talks to the slurmstepds of
this node (no slurmctld call, ~10 ms), and a new step's processes show within two seconds.
The known processes are sampled every round in between, as any ``--pid`` tree.
"""

from __future__ import annotations

import math
import os
import socket
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from tuneadvisor.errors import InputError
from tuneadvisor.metrics.host import HostReading, HostSampler
from tuneadvisor.metrics.proc_roles import tree_totals
from tuneadvisor.metrics.snapshot import ProcSample
from tuneadvisor.numbers import is_ascii_digits
from tuneadvisor.slurm.accounting.as_run import as_run_facts
from tuneadvisor.slurm.client import SlurmClient
from tuneadvisor.slurm.client.listpids import StepPid
from tuneadvisor.slurm.client.placement import JobArrayError
from tuneadvisor.slurm.client.scontrol import JobInfo

REQUERY_S = 2.0
LISTPIDS = "processes from Slurm: scontrol listpids"

Where = Literal["auto", "here", "all"]


@dataclass(frozen=True)
class JobPlan:
    job_id: str  # numeric, as Slurm's commands take it
    how: Literal["slurm", "srun", "environment"]
    label: str  # the summary's and the screen's title
    nodes: tuple[str, ...] = ()
    facts: Mapping[str, object] = field(default_factory=dict)  # what the job asked for
    std_out: str | None = None  # the job's output file, as slurmctld says (the screen tails it)
    without_slurm: str | None = None  # how == "environment": why Slurm could not be asked


def this_node() -> str:
    """Slurm's name of this node (slurmd sets it in a step), else the short host name."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def _script_of(info: JobInfo) -> str:
    """The job's script for the title (the screen shows what runs next to its numbers)."""
    return f" · {info.command}" if info.command else " · --wrap job"


def job_facts(info: JobInfo) -> dict[str, object]:
    """What the job asked for, as slurmctld says (requests, not use): the advisor's reading
    of ``scontrol show job``, plus the node count a merged watch spreads over."""
    facts = as_run_facts(info, None)
    if info.num_nodes is not None:
        facts["job.nodes"] = info.num_nodes
    return facts


def plan_job(job_id: str, client: SlurmClient, where: Where = "auto") -> JobPlan:
    """How to watch the job; ``InputError`` (one line, exit 2) when it is not running."""
    fallback = f"job {job_id} on this node (processes matched by their cgroup or SLURM_JOB_ID"
    if client.which("scontrol") is None:
        why = "Slurm's scontrol is not on PATH"
        return JobPlan(job_id, "environment", f"{fallback}: {why})", without_slurm=why)
    try:
        placed = client.placement(job_id)
    except JobArrayError as exc:
        raise InputError(None, f"--job {job_id}: {exc}") from None
    except InputError as exc:  # slurmctld down or unreachable: the environment still works
        why = f"Slurm did not answer: {exc}"
        return JobPlan(job_id, "environment", f"{fallback}: {why})", without_slurm=why)
    if placed is None:
        raise InputError(
            None,
            f"--job {job_id}: Slurm does not know this job (a wrong id, or it ended a while "
            f"ago: tuneadvisor report --jobid {job_id} reads an ended job)",
        )
    info = placed.info
    if info.state != "RUNNING":
        why = f" ({info.reason})" if info.reason and info.reason != "None" else ""
        after = (
            f"; tuneadvisor report --jobid {job_id} reads an ended job" if not info.active else ""
        )
        raise InputError(None, f"--job {job_id}: the job is {info.state}{why}, not running{after}")
    nodes = client.hostnames(placed.node_list) if placed.node_list else ()
    here = this_node()
    if where == "auto" and len(nodes) == 1 and nodes != (here,) and client.job_pids(placed.job_id):
        here = nodes[0]  # Slurm's node name is not the host name, but the job is here
    facts = job_facts(info)
    if where == "here" or (where == "auto" and nodes == (here,)):
        if nodes and here not in nodes and not client.job_pids(placed.job_id):
            raise InputError(
                None,
                f"--job {job_id}: the job runs on {', '.join(nodes)}, not on this node "
                f"({here}); without --this-node it is watched there through srun",
            )
        label = f"job {job_id} on {here} ({LISTPIDS}){_script_of(info)}"
        return JobPlan(placed.job_id, "slurm", label, (here,), facts, info.std_out)
    count = f"{len(nodes)} node{'s' if len(nodes) != 1 else ''}"
    label = (
        f"job {job_id} on {count} ({', '.join(nodes)}; a sampler on each through srun --overlap)"
        f"{_script_of(info)}"
    )
    return JobPlan(placed.job_id, "srun", label, nodes, facts, info.std_out)


def require_processes_here(plan: JobPlan, sampler: HostSampler | None = None) -> None:
    """A job matched by its environment (Slurm not asked) must have a process on this node
    now: else the watch would sample nothing until stopped and then say "Findings: none"
    (issue 24, point 7). InputError: one line, exit 2, at once."""
    if plan.how != "environment":
        return
    if (sampler or HostSampler(job_id=plan.job_id)).sample().roots_alive:
        return
    raise InputError(
        None,
        f"--job {plan.job_id}: no process of this job runs on this node (none has its cgroup "
        f"or SLURM_JOB_ID={plan.job_id}), and {plan.without_slurm}: run the watch on the "
        "job's node, or check the job id",
    )


def slurm_lister(client: SlurmClient, job_id: str) -> Callable[[], tuple[StepPid, ...]]:
    """listpids without this watch's own step (``srun --overlap ... watch --this-node``
    runs as a step of the job it watches)."""
    own_step = os.environ.get("SLURM_STEP_ID", "")
    own_job = os.environ.get("SLURM_JOB_ID")
    me = os.getpid()

    def listed() -> tuple[StepPid, ...]:
        rows = client.job_pids(job_id)
        return tuple(
            r
            for r in rows
            if r.pid != me
            and not (is_ascii_digits(own_step) and r.job_id == own_job and r.step == own_step)
        )

    return listed


def watcher_pids(watcher: str | None) -> tuple[int, ...]:
    """``--watcher NODE:PID``: that pid when it is on this node."""
    node, _, pid = (watcher or "").rpartition(":")
    return (int(pid),) if is_ascii_digits(pid) and node == this_node() else ()


def without_subtrees(procs: dict[int, ProcSample], roots: Collection[int]) -> dict[int, ProcSample]:
    """``procs`` less ``roots`` and every process below them."""
    dropped: dict[int, bool] = {}

    def below(pid: int) -> bool:
        chain = []
        while pid in procs and pid not in dropped and pid not in roots:
            chain.append(pid)
            pid = procs[pid].ppid or 0
        hit = pid in roots or dropped.get(pid, False)
        for member in chain:
            dropped[member] = hit
        return hit

    return {pid: p for pid, p in procs.items() if pid not in roots and not below(pid)}


def still_running(client: SlurmClient, job_id: str) -> Callable[[], bool]:
    def running() -> bool:
        shown = client.show_job(job_id)
        return shown is not None and shown.active

    return running


class SlurmPids(HostSampler):
    """The host sampler for a job on this node: the node itself (cores, memory) and one
    process tree per task Slurm lists (each a ``HostSampler`` with those roots, so a
    process keeps its CPU counters between rounds); trees whose processes all ended are
    dropped, new tasks get a tree at the next listpids."""

    def __init__(
        self,
        list_pids: Callable[[], Sequence[StepPid]],
        still_running: Callable[[], bool],
        *,
        requery_s: float = REQUERY_S,
        clock: Callable[[], float] = time.monotonic,
        watchers: Collection[int] = (),
    ) -> None:
        super().__init__(roots=[], clock=clock)  # no roots: the node's cores and memory only
        # This watch and the one that started it (inside the job's batch script): they and
        # their children (srun, scontrol) are in the job's process tree but are no training.
        self._watchers = {os.getpid(), *watchers}
        self._list_pids = list_pids
        self._still_running = still_running
        self._requery_s = requery_s
        self._now = clock
        self._trees: list[HostSampler] = []
        self._listed_at = -math.inf
        self._covered: set[int] = set()  # pids the trees held last round
        self._uncovered: set[int] = set()  # listed, in no tree, at the last listpids
        self._job_alive = True
        self.listpids_calls = 0

    def sample(self) -> HostReading:
        node = super().sample()
        problems = list(node.problems)
        if not self._trees or self._now() - self._listed_at >= self._requery_s:
            self._relist(problems)
        procs: dict[int, ProcSample] = {}
        alive = []
        for tree in self._trees:
            reading = tree.sample()
            problems += reading.problems
            for p in reading.procs:
                procs.setdefault(p.pid, p)
            if reading.roots_alive:
                alive.append(tree)
        self._trees = alive
        procs = without_subtrees(procs, self._watchers)
        self._covered = set(procs)
        host = tree_totals(node.host, procs.values())
        return HostReading(
            host, tuple(procs.values()), tuple(problems), bool(alive) or self._job_alive
        )

    def _relist(self, problems: list[str]) -> None:
        self._listed_at = self._now()
        self.listpids_calls += 1
        try:
            rows = self._list_pids()
            if not rows:
                self._job_alive = self._still_running()  # between steps, or ended
                return
        except InputError as exc:  # Slurm hiccup mid-watch: keep the trees we have
            problems.append(f"Slurm: {exc}")
            return
        self._job_alive = True
        fresh = [r for r in rows if r.pid not in self._covered]
        roots = [r.pid for r in fresh if r.task]
        # A listed process no tree holds: a task's child that has not been sampled yet
        # (held next round), or one that left its task's tree (re-parented); the latter is
        # still uncovered at the next listpids and becomes a root of its own.
        others = {r.pid for r in fresh if not r.task}
        roots += sorted(others & self._uncovered)
        self._uncovered = others
        if roots:
            self._trees.append(HostSampler(roots, clock=self._now))

    def target_env(self) -> dict[str, str] | None:
        for tree in self._trees:
            env = tree.target_env()
            if env is not None:
                return env
        return None
