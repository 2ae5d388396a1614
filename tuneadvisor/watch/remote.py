"""The samplers of a multi-node watch: one ``watch --this-node --stream`` per node, all
started by one ``srun --overlap --label`` (``SlurmClient.overlap_step``), read here.

The protocol is the recording format (``metrics.recording``): each node writes its header
line (with its ``node`` name), then one line per round, flushed. srun joins the nodes'
output on one pipe, every line labelled with its task (``0: {...}``); a line longer than
1024 bytes comes in several labelled pieces (tests/fixtures/slurm-local/
srun-label-long-lines.txt), which ``LabelledLines`` puts back together per task: a JSON
line is whole once it parses. Two threads read srun's stdout and stderr; ``sample()``
waits (at most one interval) until every node has sent a round since the last one, and
merges the newest round of each (``watch.merge``). A node silent for ``STALE_INTERVALS``
intervals is left out of the rounds, and said so.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tuneadvisor.errors import InputError
from tuneadvisor.metrics.recording import RecordingError, RecordingHeader, RowReader
from tuneadvisor.metrics.snapshot import Snapshot
from tuneadvisor.watch.merge import machines, merge_nodes, same_machine_note
from tuneadvisor.watch.program import send_to_group

PIECE = 1024  # srun's largest piece of a line (Slurm's MAX_MSG_LEN)
STARTUP_S = 60.0  # srun, the step, and Python starting on every node
STALE_INTERVALS = 5.0
_LABEL = re.compile(r" *([0-9]+): ")
_MESSAGES = 200


class LabelledLines:
    """srun ``--label`` output back into each task's JSON lines."""

    def __init__(self) -> None:
        self._pending: dict[int, str] = {}

    def feed(self, line: str) -> tuple[int | None, dict[str, Any] | str | None]:
        """One line of srun's stdout (without its newline) -> (task, a whole JSON object),
        (task, None) while a long line is still arriving, or (task or None, text) for a
        line that is not JSON (said as is)."""
        match = _LABEL.match(line)
        if match is None:
            return None, line
        task, piece = int(match.group(1)), line[match.end() :]
        text = self._pending.pop(task, "") + piece
        if text.startswith("{"):
            try:
                obj = json.loads(text)
            except (ValueError, RecursionError):
                if len(piece) >= PIECE:  # cut by srun: the rest follows
                    self._pending[task] = text
                    return task, None
            else:
                if isinstance(obj, dict):
                    return task, obj
        return task, text


@dataclass
class _Node:
    task: int
    name: str
    header: RecordingHeader
    reader: RowReader
    latest: Snapshot | None = None
    received: int = 0  # rounds received
    taken: int = 0  # rounds received when the last merge took this node's
    last_at: float = 0.0


@dataclass
class _Said:
    """What the samplers and srun said on stderr (bounded), drained into the rounds."""

    new: list[str] = field(default_factory=list)
    all: deque[str] = field(default_factory=lambda: deque(maxlen=_MESSAGES))

    def add(self, text: str) -> None:
        self.new.append(text)
        self.all.append(text)


class RemoteSamplers:
    """Rounds merged from the nodes' samplers; the ``Sampler`` of a ``MergedSession``."""

    def __init__(
        self,
        proc: subprocess.Popen[str],
        nodes: Sequence[str],
        interval_s: float,
        clock: Callable[[], float] = time.monotonic,
        leftovers: Callable[[], object] | None = None,
    ) -> None:
        self._proc = proc
        self._leftovers = leftovers
        self.expected = tuple(nodes)
        self.interval_s = interval_s
        self._clock = clock
        self._cond = threading.Condition()
        self._nodes: dict[int, _Node] = {}
        self._readers: dict[int, RowReader] = {}
        self._lines = LabelledLines()
        self._said = _Said()
        self._eof = False
        self.roots_alive = True
        self.gpu_reason: str | None = None
        self._threads = [
            threading.Thread(target=self._read_out, name="srun-stdout", daemon=True),
            threading.Thread(target=self._read_err, name="srun-stderr", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    # ------------------------------------------------------------------ reading threads

    def _node_name(self, task: int | None) -> str:
        node = self._nodes.get(task) if task is not None else None
        if node is not None:
            return node.name
        if task is not None and task < len(self.expected):
            return self.expected[task]  # one task a node, in the allocation's order
        return f"task {task}"

    def _read_out(self) -> None:
        assert self._proc.stdout is not None
        with self._proc.stdout:
            for raw in self._proc.stdout:
                task, item = self._lines.feed(raw.rstrip("\n"))
                if item is None:
                    continue
                with self._cond:
                    if isinstance(item, str) or task is None:
                        self._said.add(f"{self._node_name(task)}: {item}")
                    else:
                        self._take(task, item)
                    self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def _take(self, task: int, obj: dict[str, Any]) -> None:
        reader = self._readers.setdefault(task, RowReader())
        try:
            snap = reader.feed(obj)
        except RecordingError as exc:
            self._said.add(f"{self._node_name(task)}: {exc}")
            return
        if snap is None:  # the header: the node's name and what it could not sample
            header = reader.header
            assert header is not None  # feed keeps the header line it was given
            name = header.node or header.host or f"task {task}"
            # silent "since" counts from the header, not from the clock's zero
            self._nodes[task] = _Node(task, name, header, reader, last_at=self._clock())
            return
        node = self._nodes.get(task)
        if node is not None:
            node.latest = snap
            node.received += 1
            node.last_at = self._clock()

    def _read_err(self) -> None:
        assert self._proc.stderr is not None
        with self._proc.stderr:
            for raw in self._proc.stderr:
                line = raw.rstrip("\n")
                if not line.strip():
                    continue
                match = _LABEL.match(line)
                with self._cond:
                    if match is not None:
                        line = f"{self._node_name(int(match.group(1)))}: {line[match.end() :]}"
                    self._said.add(line)

    # ------------------------------------------------------------------ start, rounds, end

    @property
    def nodes(self) -> tuple[str, ...]:
        with self._cond:
            return tuple(n.name for _, n in sorted(self._nodes.items()))

    @property
    def messages(self) -> tuple[str, ...]:
        """Everything srun and the samplers said on stderr (the last ``_MESSAGES``)."""
        with self._cond:
            return tuple(self._said.all)

    def wait_started(self, timeout_s: float = STARTUP_S) -> None:
        """Until every node's sampler has sent its first round (or srun ended, or the
        timeout). ``InputError`` with what srun said when no node started."""
        deadline = self._clock() + timeout_s
        with self._cond:
            while not self._eof and self._clock() < deadline:
                started = [n for n in self._nodes.values() if n.received]
                if len(started) >= len(self.expected):
                    break
                self._cond.wait(min(0.2, max(0.0, deadline - self._clock())))
            started = [n for n in self._nodes.values() if n.received]
            ended = self._eof
        if not started:
            self.close()  # and the stderr thread has read everything srun said
            said = " | ".join(self.messages) or "nothing"
            when = "" if ended else f" within {timeout_s:g} s"
            raise InputError(
                None, f"watch: no sampler started on the job's nodes{when} (srun said: {said})"
            )
        reasons = [n.header.gpu_no_data for n in started]
        if all(reasons):
            self.gpu_reason = str(reasons[0])
        if (note := self.same_machine) is not None:
            with self._cond:
                self._said.add(note)  # into the next round's notes (recorded) and the summary

    def _boot_ids(self) -> dict[str, str | None]:
        return {n.name: n.header.boot_id for _, n in sorted(self._nodes.items())}

    @property
    def same_machine(self) -> str | None:
        """Which nodes are one machine, said once (None when every node is its own)."""
        with self._cond:
            boots = self._boot_ids()
        return same_machine_note(list(boots), boots)

    def sample(self) -> Snapshot:
        deadline = self._clock() + self.interval_s
        with self._cond:
            while not self._eof:
                stale_at = self._clock() - STALE_INTERVALS * self.interval_s
                waiting = [
                    n
                    for n in self._nodes.values()
                    if n.received == n.taken and n.last_at > stale_at
                ]
                left = deadline - self._clock()
                if not waiting or left <= 0:
                    break
                self._cond.wait(left)
            now = self._clock()
            parts = []
            notes = []
            for _, node in sorted(self._nodes.items()):
                silent = now - node.last_at
                if node.latest is None or silent > STALE_INTERVALS * self.interval_s:
                    notes.append(f"{node.name}: no round for {silent:.0f} s")
                    continue
                parts.append((node.name, node.latest))
                node.taken = node.received
            missing = set(self.expected) - {n.name for n in self._nodes.values()}
            notes += [f"{name}: its sampler did not start" for name in sorted(missing)]
            notes += self._said.new
            self._said.new = []
            ended = self._eof
            boots = self._boot_ids()
        if ended and self._proc.poll() is not None:
            self.roots_alive = False  # every node's sampler ended: the job's processes did
        return merge_nodes(parts, now, notes, machines(list(boots), boots))

    def close(self) -> None:
        """End srun (SIGTERM: it cancels the step on every node), then read its pipes to
        their end. srun runs in a session of its own: the whole group gets the signal."""
        if self._proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self._proc.wait(15)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self._proc.wait()
        for thread in self._threads:
            thread.join(5)
        if self._leftovers is not None:
            self._leftovers()  # the step's tasks, if srun ended before they had started
            self._leftovers = None

    def _signal(self, signum: int) -> None:
        send_to_group(self._proc.pid, signum)  # False when it ended meanwhile
