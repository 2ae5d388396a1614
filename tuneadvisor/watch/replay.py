"""``tuneadvisor open REC.jsonl``: a ``watch --record`` file played back on the watch screen.

``ReplaySession`` feeds the recorded rounds, at the recorded pace times ``speed``, through
the same bounded store and live findings as the live watch (``SnapshotSession.add``): what
the screen shows at a moment of the replay is what the live screen showed then, and the
findings at the end are those of the headless summary. Pausing stops the playback (live,
it only freezes the screen); the end of the recording stays on screen until quit.

Several recordings appended to one file play one after the other, each on its own: a fresh
store and fresh findings at each header, so two runs never share an evidence window.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from tuneadvisor.advisor.facts import FACTS
from tuneadvisor.advisor.rules import Rule
from tuneadvisor.errors import InputError
from tuneadvisor.files import read_text_input
from tuneadvisor.metrics.recording import (
    Recording,
    RecordingError,
    RecordingHeader,
    parse_recording,
)
from tuneadvisor.metrics.snapshot import Snapshot
from tuneadvisor.watch.session import SnapshotSession

SPEEDS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0)
DEFAULT_SPEED = 10.0  # an hour of training replays in six minutes
DEFAULT_WINDOW_S = 60.0  # watch's default --window (older headers do not say theirs)
_TICK_S = 0.2  # longest sleep of the playback thread: stop and commands are seen this fast


@dataclass(frozen=True)
class Part:
    """One recording of the file: its header and its rounds (clock as the reader set it)."""

    header: RecordingHeader
    snapshots: tuple[Snapshot, ...]

    @property
    def interval_s(self) -> float:
        value = self.header.interval_s
        if value is not None and value > 0:
            return float(value)
        steps = [b.t - a.t for a, b in pairwise(self.snapshots)]
        return statistics.median(steps) if steps else 1.0

    @property
    def window_s(self) -> float:
        value = self.header.window_s
        return float(value) if value is not None and value > 0 else DEFAULT_WINDOW_S

    @property
    def job(self) -> dict[str, object]:
        """The job's requests the watch knew (``job.*`` facts); older headers have none."""
        value = self.header.job
        if value is None:
            return {}
        return {k: v for k, v in value.items() if k.startswith("job.") and k in FACTS}

    @property
    def duration_s(self) -> float:
        return self.snapshots[-1].t - self.snapshots[0].t


@dataclass(frozen=True)
class Playback:
    """Where the replay is, for the status line."""

    t: float  # seconds into the current recording (its newest round played)
    duration: float
    speed: float
    paused: bool
    ended: bool  # the last round of the last recording has been played
    part: int  # which recording of the file, from 1
    parts: int
    target: str


def split_parts(recording: Recording) -> tuple[Part, ...]:
    """The file's recordings that hold at least one round (a header alone is skipped)."""
    starts = recording.starts or (0,)
    ends = [*starts[1:], len(recording.snapshots)]
    headers = recording.headers or (RecordingHeader(started="", host=""),)
    return tuple(
        Part(header, recording.snapshots[start:end])
        for header, start, end in zip(headers, starts, ends, strict=False)
        if end > start
    )


class ReplaySession(SnapshotSession):
    """The ``Source`` of the watch screen for a recording: ``run`` plays it in a thread; the
    screen calls the controls (``set_paused``, ``faster``, ``slower``, ``to_end``,
    ``restart``) from its own thread, and the playback thread carries them out."""

    live = False

    def __init__(
        self,
        recording: Recording,
        rules: Sequence[Rule],
        *,
        speed: float = DEFAULT_SPEED,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.parts = split_parts(recording)
        if not self.parts:
            raise ValueError("the recording has no rounds")
        first = self.parts[0]
        super().__init__(rules, interval_s=first.interval_s, window_s=first.window_s, job=first.job)
        self.notes = recording.notes
        self.speed = speed
        self.paused = False
        self.ended = False
        self._clock = clock
        self._control = threading.Lock()  # playback state shared with the screen's thread
        self._wake = threading.Event()
        self._restart = False
        self._rush = False  # to_end: play without pacing
        self._part = 0
        self._next = 0  # index of the next round of the current part
        self._anchor = (clock(), first.snapshots[0].t)  # (wall clock, recorded t) kept in step
        self._begin(0)

    # ------------------------------------------------------------------ controls

    def mark(self, label: str) -> None:
        """A recording's marks are in the file; a replay adds none."""

    def set_paused(self, paused: bool) -> None:
        with self._control:
            self._reanchor()
            self.paused = paused
        self._wake.set()

    def set_speed(self, speed: float) -> None:
        with self._control:
            self._reanchor()
            self.speed = speed
        self._wake.set()

    def faster(self) -> None:
        self.set_speed(next((s for s in SPEEDS if s > self.speed), self.speed))

    def slower(self) -> None:
        self.set_speed(next((s for s in reversed(SPEEDS) if s < self.speed), self.speed))

    def to_end(self) -> None:
        """Play the rest at once (every round still goes through the findings, as live)."""
        with self._control:
            self._rush = True
        self._wake.set()

    def restart(self) -> None:
        with self._control:
            self._restart, self._rush = True, False
        self._wake.set()

    def playback(self) -> Playback:
        """Where the playback is: a frozen copy, safe from any thread."""
        with self._control, self.lock:
            part = self.parts[self._part]
            latest = self.store.recent[-1] if self.store.recent else None
            return Playback(
                t=0.0 if latest is None else latest.t - self.started,
                duration=part.duration_s,
                speed=self.speed,
                paused=self.paused,
                ended=self.ended,
                part=self._part + 1,
                parts=len(self.parts),
                target=part.header.target or "",
            )

    # ------------------------------------------------------------------ playback thread

    def run(self, on_change: Callable[[], None] | None = None) -> None:
        """Play until stopped; ``on_change`` is called in this thread after every round
        played and when the end is reached (the screen follows the playback with it)."""
        self._on_change = on_change
        while not self.stop.is_set():
            wait = self.step()
            if wait > 0 and self._wake.wait(min(wait, _TICK_S)):
                self._wake.clear()

    def step(self) -> float:
        """Play what is due; how long to sleep before the next round (0: go on at once)."""
        with self._control:
            restart, self._restart = self._restart, False
            rush, paused = self._rush, self.paused
            recorded_now = self._recorded_now()
        if restart:
            self._begin(0)
            return 0.0
        if rush and self._part < len(self.parts) - 1:
            self._begin(len(self.parts) - 1)  # the end of the file is the last recording's
        part = self.parts[self._part]
        if self._next >= len(part.snapshots):
            if self._part < len(self.parts) - 1:
                self._begin(self._part + 1)
                return 0.0
            ending = not self.ended
            if ending:
                self._evaluate()  # as the live watch does when it stops
            with self._control:
                self.ended, self._rush = True, False
            if ending:
                self.changed()  # the screen shows the end (and the last findings)
            return _TICK_S
        if paused and not rush and self.store.count:  # (after a restart, the first round shows)
            return _TICK_S
        snap = part.snapshots[self._next]
        if not rush and snap.t > recorded_now:
            return (snap.t - recorded_now) / self.speed
        self.add(snap)
        self._next += 1
        return 0.0

    def _begin(self, index: int) -> None:
        """Start recording ``index`` of the file afresh (its own store and findings)."""
        part = self.parts[index]
        with self._control:
            with self.lock:
                self.interval_s, self.window_s = part.interval_s, part.window_s
                self.job = part.job
                self.store = self.new_store()
                self.started = part.snapshots[0].t
            self.clear_findings()
            self._part, self._next = index, 0
            self.ended = False
            self._anchor = (self._clock(), part.snapshots[0].t)

    def _recorded_now(self) -> float:
        """The recording's clock as the replay plays it (call with ``_control`` held)."""
        wall, recorded = self._anchor
        if self.paused:
            return recorded
        return recorded + (self._clock() - wall) * self.speed

    def _reanchor(self) -> None:
        self._anchor = (self._clock(), self._recorded_now())


def load_replay(
    path: str | os.PathLike[str], rules: Sequence[Rule], speed: float = DEFAULT_SPEED
) -> ReplaySession:
    """Read a recording for the replay screen; a broken one is one InputError line."""
    try:
        recording = parse_recording(read_text_input(path, "recording"))
    except RecordingError as exc:
        raise InputError(path, f"broken tuneadvisor watch recording: {exc}") from None
    try:
        return ReplaySession(recording, rules, speed=speed)
    except ValueError as exc:
        raise InputError(path, f"nothing to replay: {exc}") from None
