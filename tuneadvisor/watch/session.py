"""The sampling loop of ``watch``, and live findings from the same facts and rules as ``report``.

``Sampler`` takes one round (NVML + psutil) and measures its own CPU time. ``WatchSession``
runs rounds on a fixed schedule in the calling thread (the TUI calls it from a worker thread),
keeps them in a bounded ``SnapshotStore``, writes them to the recording, and re-evaluates the
rules over the evidence window (the last ``window_s`` seconds) about once a second. Every
finding carries its window: start, end, and how many rounds it rests on.

Other threads read the session only through ``state()``, ``view()`` and ``span()``, which
copy under the session's lock; ``run(on_change=...)`` calls back (in the sampling thread)
after every change, so that a screen is pushed rounds instead of polling for them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from tuneadvisor.advisor.engine import evaluate
from tuneadvisor.advisor.facts import FACTS
from tuneadvisor.advisor.findings import Finding
from tuneadvisor.advisor.measured_allocation import allocation_facts
from tuneadvisor.advisor.rules import Rule
from tuneadvisor.advisor.sizing import model_facts
from tuneadvisor.metrics.affinity import affinity_facts
from tuneadvisor.metrics.host import HostSampler
from tuneadvisor.metrics.loader_waits import loader_facts
from tuneadvisor.metrics.model import Stats
from tuneadvisor.metrics.nvml import NvmlSampler
from tuneadvisor.metrics.recording import RecordingWriter
from tuneadvisor.metrics.ring import SnapshotStore, to_series
from tuneadvisor.metrics.snapshot import ROLE_MAIN, Snapshot
from tuneadvisor.numbers import ascii_int

MIB = 1024 * 1024


@dataclass(frozen=True)
class LiveFinding:
    finding: Finding
    window_start: float  # seconds since the watch started
    window_end: float
    rounds: int  # snapshots in the window
    since: float  # when it started firing (without a break)


@dataclass(frozen=True)
class LiveState:
    """What the screen or the summary draws, frozen (a copy taken under the session's lock)."""

    latest: Snapshot | None
    findings: tuple[LiveFinding, ...]
    rounds: int
    started: float
    facts: Mapping[str, object] = field(default_factory=dict)
    job: Mapping[str, object] = field(default_factory=dict)  # the job's requests (job.*)
    interval_s: float = 1.0
    window_s: float = 60.0
    version: int = 0  # one more at every change (a round, an evaluation, the end)


@dataclass(frozen=True)
class WatchSpan:
    """The rounds of a stretch of the run (a copy) and the statistics over them that the
    screen and the summary show."""

    rounds: tuple[Snapshot, ...]
    sampler_cpu: Stats | None  # the sampler's own CPU, % of one core
    proc_rss: Stats | None  # the process tree's RSS, MiB
    # The most main processes and DataLoader workers any round saw: the last round of a run
    # that ended has none, and a count from it contradicts the run ("0 main").
    mains: int = 0
    workers: int = 0

    @classmethod
    def of(cls, rounds: Sequence[Snapshot]) -> WatchSpan:
        return cls(
            tuple(rounds),
            Stats.of(s.sampler_cpu_pct for s in rounds),
            Stats.of(s.host.proc_rss_mib for s in rounds if s.host is not None),
            max((sum(p.role == ROLE_MAIN for p in s.procs) for s in rounds), default=0),
            max((s.host.workers or 0 for s in rounds if s.host is not None), default=0),
        )


class RoundSampler(Protocol):
    """What ``WatchSession`` samples: ``Sampler`` here, or the merged rounds of several
    nodes (``tuneadvisor.watch.remote.RemoteSamplers``)."""

    roots_alive: bool

    def sample(self) -> Snapshot: ...


class Sampler:
    """One round of every source. ``sample()`` never raises for a missing GPU or process."""

    def __init__(
        self,
        host: HostSampler,
        gpu: NvmlSampler | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.host = host
        self.gpu = gpu
        self._clock = clock
        self._last_cpu: tuple[float, float] | None = None  # (wall, thread CPU)
        self.gpu_reason: str | None = None if gpu is None else gpu.open()
        # why some GPU has no SM activity (no GPM): said once, in the header and the summary
        self.activity_reason: str | None = None if gpu is None else gpu.activity_reason
        self.roots_alive = True

    def sample(self) -> Snapshot:
        reading = self.host.sample()
        self.roots_alive = reading.roots_alive
        t = reading.host.t if reading.host.t is not None else self._clock()
        no_data = list(reading.problems)
        gpus: tuple[object, ...] = ()
        gpu_procs: tuple[object, ...] = ()
        if self.gpu is not None:
            g = self.gpu.sample(t)
            gpus, gpu_procs = g.gpus, g.procs
            no_data += list(g.problems)
        else:
            no_data.append("no GPU data: GPU sampling is off")
        wall, cpu = time.monotonic(), time.thread_time()
        own = None
        if self._last_cpu is not None and wall > self._last_cpu[0]:
            own = 100.0 * (cpu - self._last_cpu[1]) / (wall - self._last_cpu[0])
        self._last_cpu = (wall, cpu)
        return Snapshot(
            t=t,
            gpus=gpus,  # type: ignore[arg-type]
            gpu_procs=gpu_procs,  # type: ignore[arg-type]
            host=reading.host,
            procs=reading.procs,
            no_data=tuple(no_data),
            sampler_cpu_pct=own,
        )

    def close(self) -> None:
        if self.gpu is not None:
            self.gpu.close()


def live_facts(window: Sequence[Snapshot], job: Mapping[str, object]) -> dict[str, object]:
    facts: dict[str, object] = dict(to_series(window).facts())
    facts.update(affinity_facts(window))  # the ranks' CPUs: from processes, not the series
    facts.update(loader_facts(window))  # the workers' states: the loop's wait for them
    facts.update(job)
    facts.update(allocation_facts(facts)[0])  # the watched run is the measured one
    facts.update(model_facts(facts))  # the step-time model's sizing, as report's
    return {k: v for k, v in facts.items() if k in FACTS}


def job_facts_from_env(env: Mapping[str, str] | None) -> dict[str, object]:
    """What Slurm told the job's processes it was given (requests, not use)."""
    facts: dict[str, object] = {}
    if not env:
        return facts
    # The environment is whoever started the process's: a count only in ASCII digits and
    # of a real size (ascii_int), else unknown.
    cpus = ascii_int(env.get("SLURM_CPUS_PER_TASK", ""))
    if cpus is not None:
        facts["job.cpus_per_task"] = cpus
    mem = ascii_int(env.get("SLURM_MEM_PER_NODE", ""))
    if mem:  # --mem=0 is "all of the node", not 0 MiB
        facts["job.mem_mib"] = float(mem)
    return facts


class SnapshotSession:
    """A bounded store of rounds and the live findings over its evidence window: what the
    screen and the summary read. Fed by the sampler (``WatchSession``) or by a recording
    (``tuneadvisor.watch.replay.ReplaySession``), so both evaluate the rules the same way."""

    live = True

    def __init__(
        self,
        rules: Sequence[Rule],
        *,
        interval_s: float,
        window_s: float,
        store: SnapshotStore | None = None,
        job: Mapping[str, object] | None = None,
    ) -> None:
        self.rules = tuple(rules)
        self.interval_s = interval_s
        self.window_s = window_s
        self.store = store or self.new_store()
        self.job: dict[str, object] = dict(job or {})
        self.stop = threading.Event()
        # The store, the findings and the version are read by the screen's thread.
        self.lock = threading.Lock()
        self.started = time.monotonic()
        self._version = 0
        self._on_change: Callable[[], None] | None = None
        self.clear_findings()

    def new_store(self) -> SnapshotStore:
        return SnapshotStore(recent=max(60, int(2 * self.window_s / self.interval_s)))

    def clear_findings(self) -> None:
        with self.lock:
            self._firing: dict[str, float] = {}
            self._findings: tuple[LiveFinding, ...] = ()
            self._facts: Mapping[str, object] = {}
            self._last_eval = -1e9

    def changed(self) -> None:
        """Count a change and tell the follower (``run``'s ``on_change``), if any."""
        with self.lock:
            self._version += 1
        on_change = self._on_change
        if on_change is not None:
            on_change()

    def add(self, snap: Snapshot) -> None:
        """Keep a round; re-evaluate when due (about once a second of the run's clock)."""
        with self.lock:
            self.store.add(snap)
            recent = len(self.store.recent)
        # Half a round of slack: rounds come on a schedule, so "a second since" would hinge on
        # ms of jitter (and on the ms a recording keeps: a replay must evaluate the same rounds).
        due = max(1.0, self.interval_s) - self.interval_s / 2
        if snap.t - self._last_eval >= due or recent < 3:
            self._evaluate()
            self._last_eval = snap.t
        self.changed()

    def evaluate(self) -> None:
        """The rules over the evidence window now (and tell the follower)."""
        self._evaluate()
        self.changed()

    def _evaluate(self) -> None:
        with self.lock:
            window = self.store.window(self.window_s)
        if not window:
            return
        facts = live_facts(window, self.job)
        findings = evaluate(self.rules, facts).findings
        now = window[-1].t
        firing = {f.id: self._firing.get(f.id, now) for f in findings}
        live = tuple(
            LiveFinding(
                f,
                window[0].t - self.started,
                now - self.started,
                len(window),
                firing[f.id] - self.started,
            )
            for f in findings
        )
        with self.lock:
            self._firing = firing
            self._facts = facts
            self._findings = live

    def view(self, seconds: float | None) -> list[Snapshot]:
        """A copy, safe from any thread: the last ``seconds`` (None: the whole run)."""
        with self.lock:
            if seconds is None:
                return self.store.timeline()
            if self.store.recent and self.store.recent[0].t > self.store.recent[-1].t - seconds:
                # Wider than the recent ring: the downsampled history covers the rest.
                start = self.store.recent[-1].t - seconds
                return [s for s in self.store.timeline() if s.t >= start]
            return self.store.window(seconds)

    def timeline(self) -> list[Snapshot]:
        """The whole run as recorded (a copy; ``view(None)`` is the same as drawn)."""
        with self.lock:
            return self.store.timeline()

    def span(self, seconds: float | None) -> WatchSpan:
        """The rounds of ``view(seconds)`` and their statistics, safe from any thread."""
        return WatchSpan.of(self.view(seconds))

    def state(self) -> LiveState:
        """The newest round, the live findings and the settings: a frozen copy."""
        with self.lock:
            latest = self.store.recent[-1] if self.store.recent else None
            return LiveState(
                latest,
                self._findings,
                self.store.count,
                self.started,
                self._facts,
                dict(self.job),
                self.interval_s,
                self.window_s,
                self._version,
            )


class WatchSession(SnapshotSession):
    """Rounds on a schedule until stopped, the duration is up, or the watched processes end."""

    def __init__(
        self,
        sampler: RoundSampler,
        rules: Sequence[Rule],
        *,
        interval_s: float = 1.0,
        window_s: float = 60.0,
        duration_s: float | None = None,
        recorder: RecordingWriter | None = None,
        store: SnapshotStore | None = None,
        job: Mapping[str, object] | None = None,
        follow_roots: bool = True,
    ) -> None:
        super().__init__(rules, interval_s=interval_s, window_s=window_s, store=store, job=job)
        self.sampler = sampler
        self.duration_s = duration_s
        self.recorder = recorder
        self.follow_roots = follow_roots
        self._mark: str | None = None
        self.ended_because = ""

    def mark(self, label: str) -> None:
        """Marks the next round (the screen's "mark a moment", from the screen's thread)."""
        with self.lock:
            self._mark = label

    def round(self) -> Snapshot:
        snap = self.sampler.sample()
        with self.lock:
            mark, self._mark = self._mark, None
        if mark is not None:
            snap = Snapshot(**{**snap.__dict__, "mark": mark})
        if self.recorder is not None:  # on disk first: a crash in the rules loses no round
            self.recorder.write(snap)
        self.add(snap)
        return snap

    def run(self, on_change: Callable[[], None] | None = None) -> None:
        """Sample until stopped; the schedule does not drift (a late round skips ahead).

        ``on_change`` is called in this thread after every round and after the last
        evaluation: a screen follows the session with it (and reads ``state()``)."""
        self._on_change = on_change
        with self.lock:
            self.started = time.monotonic()
        n = 0
        while not self.stop.is_set():
            self.round()
            if self.follow_roots and not self.sampler.roots_alive:
                self.ended_because = "the watched processes ended"
                break
            n += 1
            next_at = self.started + n * self.interval_s
            now = time.monotonic()
            if self.duration_s is not None and next_at - self.started > self.duration_s:
                self.ended_because = f"{self.duration_s:g} s are up"
                break
            if next_at < now:  # overran: skip the missed slots
                n = int((now - self.started) / self.interval_s) + 1
                next_at = self.started + n * self.interval_s
            if self.stop.wait(max(0.0, next_at - time.monotonic())):
                break
        if self.stop.is_set() and not self.ended_because:
            self.ended_because = "stopped"
        self.evaluate()
