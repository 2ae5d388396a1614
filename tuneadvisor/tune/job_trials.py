"""The job array of a tune run to a decision: the queue polled with a progress line, each
ended task's probe file read as it ends, and the tasks no longer needed cancelled
(``job_race``): a setting outside both spreads of the fastest gets no more runs, and once
the decision is made the tasks left never start. With ``early=False`` every task runs (a
plain sweep). At the budget, the tasks left are cancelled and what ended is read."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from tuneadvisor.files import write_atomic
from tuneadvisor.slurm.client import SlurmError
from tuneadvisor.tune.job_array import ArrayPlan
from tuneadvisor.tune.job_grid import JobSetting
from tuneadvisor.tune.job_ledger import TaskResult, read_task
from tuneadvisor.tune.job_race import race


class ArrayClient(Protocol):
    def array_tasks(self, job_id: str) -> tuple[tuple[int | None, str], ...]: ...
    def cancel_tasks(self, job_id: str, tasks: Sequence[int]) -> None: ...
    def cancel(self, job_id: str) -> None: ...
    def clock(self) -> float: ...
    def sleep(self, seconds: float) -> None: ...


@dataclass(frozen=True)
class Waiting:
    min_gain: float
    budget_s: float
    poll_s: float = 2.0
    early: bool = True  # False: every trial runs (a plain sweep)


@dataclass(frozen=True)
class Outcome:
    tasks: tuple[TaskResult, ...]  # the tasks that ran to their end (measured or failed)
    cancelled: tuple[int, ...]  # tasks cancelled before they started
    stopped: tuple[int, ...]  # tasks cancelled while running (no probe file)
    decided: str | None  # why the tasks left were not needed; None: all ran (or the budget)
    not_repeated: Mapping[JobSetting, str] = field(default_factory=dict)
    wall_s: float = 0.0  # from submission to the queue empty, as this process saw it
    notes: tuple[str, ...] = ()
    early: bool = True  # tasks were cancelled once not needed (False: --sweep, or scancel failed)

    @property
    def started(self) -> int:
        """Trials that took the node: ran to their end, or were stopped while running."""
        return len(self.tasks) + len(self.stopped)


@dataclass
class _Seen:
    """What this process has seen of the array so far."""

    plan: ArrayPlan
    folder: Path
    ended: dict[int, TaskResult] = field(default_factory=dict)
    cancelled: set[int] = field(default_factory=set)
    stopped: set[int] = field(default_factory=set)  # cancelled while running
    out: dict[JobSetting, str] = field(default_factory=dict)
    decided: str | None = None
    opened: set[int] = field(default_factory=set)  # tasks given their go (gated arrays)

    def open_gate(self, queued: Sequence[tuple[int, str]]) -> None:
        """The next task left may run once every task before it was read or cancelled."""
        left = sorted(t for t, _ in queued if t not in self.cancelled)
        if not self.plan.gate or not left or left[0] in self.opened:
            return
        if all(i in self.ended or i in self.cancelled for i in range(left[0])):
            write_atomic(self.folder / f"go-{left[0]}", b"")
            self.opened.add(left[0])

    def ran(self, task: int) -> bool:
        """Whether a running task had begun the trial (not waiting at the gate)."""
        return not self.plan.gate or task in self.opened

    def setting(self, task: int) -> JobSetting:
        return self.plan.settings[self.plan.setting_of(task)]

    def read_ended(self, in_queue: set[int]) -> None:
        """A task not in the queue has ended: its probe file (or its log) is there."""
        for i in range(self.plan.tasks):
            if i not in in_queue and i not in self.ended and i not in self.cancelled:
                self.ended[i] = read_task(self.folder, i, self.setting(i))

    def to_drop(self, queued: Sequence[tuple[int, str]], min_gain: float) -> list[int]:
        """The queued tasks no longer needed: all once decided; a setting's that is out,
        running or not; a pending one of this round whose setting the decision waits not on
        (a later round's stays: it may be needed again)."""
        state = race(tuple(self.ended.values()), self.plan.settings, self.plan.repeats,
                     min_gain, self.out)  # fmt: skip
        self.out = dict(state.out)
        if state.decided and self.decided is None:
            self.decided = state.decided
        width = len(self.plan.settings)
        left = [(t, s) for t, s in queued if t not in self.cancelled]
        current = min((t // width for t, _ in left), default=0)
        return [
            task for task, status in left
            if state.decided or self.setting(task) in self.out
            or (self.setting(task) not in state.wanted and status == "PENDING"
                and task // width <= current)
        ]  # fmt: skip

    def line(self, job_id: str, queued: Sequence[tuple[int | None, str]]) -> tuple[str, bool]:
        """The progress line, and whether every task still waits."""
        left = [s for t, s in queued if t not in self.cancelled]
        pending = sum(1 for s in left if s == "PENDING")
        cancelled = f", {len(self.cancelled)} cancelled" if self.cancelled else ""
        return (
            f"array {job_id}: {pending} pending, {len(left) - pending} running, "
            f"{len(self.ended)} done{cancelled} of {self.plan.tasks}",
            pending == self.plan.tasks,
        )

    def outcome(self, wall_s: float, notes: Sequence[str], early: bool) -> Outcome:
        """Every task read again at the end: one cancelled as it ended wrote its probe file."""
        tasks: list[TaskResult] = []
        for i in range(self.plan.tasks):
            if i in self.cancelled and not (self.folder / f"probe-{i}.json").is_file():
                continue
            self.cancelled.discard(i)
            self.stopped.discard(i)
            tasks.append(read_task(self.folder, i, self.setting(i)))
        return Outcome(
            tuple(tasks), tuple(sorted(self.cancelled - self.stopped)),
            tuple(sorted(self.stopped)), self.decided, dict(self.out), wall_s, tuple(notes),
            early,
        )  # fmt: skip


def run_array(
    client: ArrayClient,
    job_id: str,
    plan: ArrayPlan,
    folder: Path,
    waiting: Waiting,
    progress: Callable[[str], None],
    estimate: str = "",
) -> Outcome:
    """Until no task of the array is in the queue."""
    begun = client.clock()
    seen = _Seen(plan, folder)
    early = waiting.early
    notes: list[str] = []
    said, told = "", False
    while True:
        queued = client.array_tasks(job_id)
        known = [(t, s) for t, s in queued if t is not None]
        if len(known) == len(queued):  # else: which task ended is not known this time
            seen.read_ended({t for t, _ in known})
            drop = seen.to_drop(known, waiting.min_gain) if early and known else []
            if seen.decided and not told:
                progress(f"array {job_id}: decided after {len(seen.ended)} trials: "
                         f"{seen.decided}")  # fmt: skip
                told = True
            if drop:
                try:
                    client.cancel_tasks(job_id, drop)
                except SlurmError as exc:  # they run to their end, as a plain sweep's
                    notes.append(f"tasks not cancelled ({exc.problem}): every trial ran")
                    early = False
                else:
                    running = {t for t, s in known if s != "PENDING" and seen.ran(t)}
                    seen.stopped |= running & set(drop)
                    seen.cancelled |= set(drop)
            seen.open_gate(known)
        line, waits = seen.line(job_id, queued)
        if line != said:
            progress(line + (f" ({estimate})" if waits and estimate else ""))
            said = line
        if not queued:
            break
        if client.clock() > begun + waiting.budget_s:
            client.cancel(job_id)
            fresh = {t for t, _ in known} - seen.cancelled
            seen.stopped |= {t for t, s in known if t in fresh and s != "PENDING" and seen.ran(t)}
            seen.cancelled |= fresh
            progress(f"array {job_id}: the budget ({waiting.budget_s / 60:g} min) is spent: "
                     "the tasks left were cancelled")  # fmt: skip
            break
        client.sleep(waiting.poll_s)
    return seen.outcome(client.clock() - begun, notes, early)
