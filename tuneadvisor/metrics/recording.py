"""``watch --record FILE``: JSON Lines, append-only, one line per sampling round.

Line 1 is the header (``RecordingHeader``): ``{"format": "tuneadvisor-watch", "version": 1,
...}`` with the start time, host, interval, target and why GPU data is missing if it is.
Every other line is one round: ``{"t": seconds since start, "gpus": [...], "host": {...},
"procs": [...], ...}``, with absent values left out (absent means "no data", as everywhere
in ``model``). A process's name, command line and user are written on the first line it
appears in, not repeated.

Each line is written whole, flushed and fsync'ed before the next round starts, so a crash of
the sampler loses nothing and a crash of the node loses at most the round being written: a
last line cut short (no newline, not JSON) is dropped with a note when reading. A broken line
anywhere else is an error naming the line. Several recordings appended to one file (a header
line again) read as one, their clocks kept apart.

A multi-node watch (``watch --job`` across nodes) records its merged rounds: each process and
GPU process carries its ``node``, and GPU ids are prefixed with it (``node1:GPU-...``).
Files without nodes read as before, and older readers skip the field.

A GPU's SM activity, SM occupancy, tensor-pipe and DRAM activity and NVLink traffic (NVML's GPM,
issue 25) are more optional fields of its sample; older recordings have none and read as
before, older readers skip them (a reader keeps the fields it knows). Why a GPU has none is
said once, in the header's ``activity_no_data``.
"""

from __future__ import annotations

import json
import os
import socket
import time
import types
import typing
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import IO, Any

from tuneadvisor.files import open_append
from tuneadvisor.metrics.affinity import affinity_facts
from tuneadvisor.metrics.loader_waits import loader_facts
from tuneadvisor.metrics.model import GpuSample, HostSample, MetricsSeries
from tuneadvisor.metrics.snapshot import GpuProcess, ProcSample, Snapshot
from tuneadvisor.numbers import finite_float, finite_int, is_finite_number

FORMAT = "tuneadvisor-watch"
VERSION = 1

_GPU_FIELDS = tuple(f.name for f in fields(GpuSample) if f.name != "t")
_HOST_FIELDS = tuple(f.name for f in fields(HostSample) if f.name != "t")
_PROC_STATIC = ("name", "cmdline", "user")
_PROC_FIELDS = tuple(f.name for f in fields(ProcSample) if f.name not in _PROC_STATIC)
_GPU_PROC_FIELDS = tuple(f.name for f in fields(GpuProcess))


class RecordingError(ValueError):
    """Not a watch recording, or a broken line inside one (the message names the line)."""


# What one round may hold, per node: more than any node has (the largest hold 8 or 16 GPUs;
# a job's processes with their DataLoader workers are hundreds), and nodes in a merged round.
# A round of three million GPUs (9 MB) took over 600 MB and hung the readers.
MAX_GPUS_PER_NODE = 64
MAX_PROCS_PER_NODE = 8192
MAX_NODES_PER_ROUND = 256


class RoundTooLarge(ValueError):
    """A round holds more GPUs, processes or nodes than any node or job has."""


def sniff(text: str) -> bool:
    """True when ``text`` starts like a watch recording (for ``--metrics`` auto-detection)."""
    first = text.lstrip()[:200]
    return first.startswith("{") and f'"{FORMAT}"' in first


def _compact(obj: object, names: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names:
        value = getattr(obj, name)
        if value is None or value == ():
            continue
        if isinstance(value, float):
            value = round(value, 3)
        elif isinstance(value, tuple):
            value = [round(v, 1) if isinstance(v, float) else v for v in value]
        out[name] = value
    return out


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def read_boot_id(path: str = "/proc/sys/kernel/random/boot_id") -> str | None:
    """The kernel's id of this boot (Linux), None elsewhere."""
    try:
        with open(path, encoding="ascii") as f:
            return f.read().strip() or None
    except OSError:
        return None


@dataclass(frozen=True)
class RecordingHeader:
    """Line 1 of a recording (and of each recording appended after it): what was watched,
    how often, and what could not be sampled. ``started`` and ``host`` are this moment and
    this machine unless given.

    A watch of one machine's processes writes ``driver`` (its NVML driver, null when
    unknown); a merged multi-node watch writes ``nodes`` instead, and a node's sampler of
    one (``--stream``) adds its ``node``."""

    interval_s: float | None = None
    window_s: float | None = None
    target: str | None = None
    gpu_no_data: str | None = None  # why there are no GPU samples, when there are none
    # why some GPU has no SM activity figures (no NVML GPM there); written only when so
    activity_no_data: str | None = None
    job: Mapping[str, object] | None = None  # the job's requests (job.* facts)
    nodes: tuple[str, ...] | None = None  # a merged multi-node watch
    driver: str | None = None  # a one-machine watch (written only when ``nodes`` is None)
    node: str | None = None  # a node's sampler of a multi-node watch
    # this machine's boot id (written by a node's sampler only): two "nodes" with the same one
    # are one machine, whose cores and memory a merged watch counts once
    boot_id: str | None = field(default_factory=lambda: read_boot_id())
    started: str = field(default_factory=_now)
    host: str = field(default_factory=socket.gethostname)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "format": FORMAT, "version": VERSION, "started": self.started, "host": self.host,
            "interval_s": self.interval_s, "window_s": self.window_s, "target": self.target,
        }  # fmt: skip
        if self.nodes is not None:
            out["nodes"] = list(self.nodes)
        out["gpu_no_data"] = self.gpu_no_data
        if self.activity_no_data is not None:
            out["activity_no_data"] = self.activity_no_data
        if self.nodes is None:
            out["driver"] = self.driver
        out["job"] = None if self.job is None else dict(self.job)
        if self.node is not None:
            out["node"] = self.node
            out["boot_id"] = self.boot_id
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> RecordingHeader:
        """A header line as read (missing keys are None: older writers had fewer).
        ``RecordingError`` for another format's version or a value of the wrong type."""
        if obj.get("version") != VERSION:
            raise RecordingError(f"version {obj.get('version')!r} unknown")

        def get(key: str, kind: type | tuple[type, ...], want: str) -> Any:
            value = obj.get(key)
            if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
                raise RecordingError(f"header {key} is {value!r}, not {want}")
            if isinstance(value, int | float) and not is_finite_number(value):
                raise RecordingError(f"header {key} is {value!r}, not a finite number")
            return value

        nodes = get("nodes", list, "a list of node names")
        if nodes is not None and not all(isinstance(n, str) for n in nodes):
            raise RecordingError(f"header nodes is {nodes!r}, not a list of node names")
        return cls(
            interval_s=get("interval_s", (int, float), "a number"),
            window_s=get("window_s", (int, float), "a number"),
            target=get("target", str, "a string"),
            gpu_no_data=get("gpu_no_data", str, "a string"),
            activity_no_data=get("activity_no_data", str, "a string"),
            job=get("job", dict, "an object"),
            nodes=None if nodes is None else tuple(nodes),
            driver=get("driver", str, "a string"),
            node=get("node", str, "a string"),
            boot_id=get("boot_id", str, "a string"),
            started=get("started", str, "a string") or "",
            host=get("host", str, "a string") or "",
        )


class RecordingWriter:
    """Append rounds to a file; every line is on disk before ``write`` returns.

    ``stream``: write to this open text stream instead (``watch --stream``: stdout, read by
    the ``srun`` of a multi-node watch), flushed each line; a pipe is not fsync'ed."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        header: RecordingHeader,
        *,
        stream: IO[str] | None = None,
    ) -> None:
        self.path = None if path is None else Path(path)
        self._owned = stream is None
        if stream is None:
            if self.path is None:
                raise ValueError("a path or a stream")
            stream = open_append(self.path, "recording")
        self._file: IO[str] = stream
        self._t0: float | None = None
        self._seen: set[tuple[str | None, int, str]] = set()
        self._line(header.to_json())

    def _line(self, obj: Mapping[str, object]) -> None:
        self._file.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self._file.flush()
        if self._owned:
            os.fsync(self._file.fileno())

    def write(self, snap: Snapshot) -> None:
        if self._t0 is None:
            self._t0 = snap.t
        row: dict[str, object] = {"t": round(snap.t - self._t0, 3)}
        if snap.gpus:
            row["gpus"] = [_compact(g, _GPU_FIELDS) for g in snap.gpus]
        if snap.gpu_procs:
            row["gpu_procs"] = [_compact(p, _GPU_PROC_FIELDS) for p in snap.gpu_procs]
        if snap.host is not None:
            row["host"] = _compact(snap.host, _HOST_FIELDS)
        if snap.procs:
            procs = []
            for p in snap.procs:
                entry = _compact(p, _PROC_FIELDS)
                key = (p.node, p.pid, p.cmdline)  # pids of two nodes may be equal
                if key not in self._seen:
                    self._seen.add(key)
                    entry.update(_compact(p, _PROC_STATIC))
                procs.append(entry)
            row["procs"] = procs
        if snap.no_data:
            row["no_data"] = list(snap.no_data)
        if snap.sampler_cpu_pct is not None:
            row["sampler_cpu_pct"] = round(snap.sampler_cpu_pct, 2)
        if snap.mark:
            row["mark"] = snap.mark
        self._line(row)

    def close(self) -> None:
        if self._owned and not self._file.closed:
            self._file.close()


@dataclass(frozen=True)
class Recording:
    headers: tuple[RecordingHeader, ...]
    snapshots: tuple[Snapshot, ...]
    notes: tuple[str, ...] = ()
    starts: tuple[int, ...] = ()  # where each header's rounds begin in ``snapshots``

    @property
    def header(self) -> RecordingHeader | None:
        return self.headers[0] if self.headers else None

    def series(self) -> MetricsSeries:
        """The samples, and what the rounds' process trees say over the whole recording (the
        facts a replay's rules read over its window), so a report from the recording reads
        what the replay does."""
        series = MetricsSeries.from_samples(
            (g for s in self.snapshots for g in s.gpus),
            (s.host for s in self.snapshots if s.host is not None),
            source="recording",
            notes=self.notes,
        )
        proc = {**affinity_facts(self.snapshots), **loader_facts(self.snapshots)}
        kept = tuple((k, v) for k, v in proc.items() if isinstance(v, bool | int | float | str))
        return replace(series, proc_facts=kept)


def _build(cls: type[Any], data: Mapping[str, Any], **extra: Any) -> Any:
    """A sample from its JSON object, each field checked against its type: a recording is
    a file (edited, damaged, crafted), and a wrong type would fail far from here."""
    if not isinstance(data, Mapping):
        raise TypeError(f"{cls.__name__}: not an object")
    hints = _hints(cls)
    args = {}
    for key, value in data.items():
        if key in hints:
            value = tuple(value) if isinstance(value, list) else value
            if not _fits(value, hints[key]):
                raise TypeError(f"{key}: {type(value).__name__} where {hints[key]} belongs")
            if not all(
                is_finite_number(v) for v in _numbers(value)
            ):  # arithmetic must not overflow
                raise ValueError(f"{key}: {str(value)[:40]} is not a finite number below 1e30")
            args[key] = value
    return cls(**args, **extra)


_HINTS: dict[type[Any], dict[str, Any]] = {}


def _hints(cls: type[Any]) -> dict[str, Any]:
    """The dataclass's field types, resolved once."""
    if cls not in _HINTS:
        names = {f.name for f in fields(cls)}
        _HINTS[cls] = {k: v for k, v in typing.get_type_hints(cls).items() if k in names}
    return _HINTS[cls]


def _fits(value: object, hint: Any) -> bool:
    """Whether a JSON value fits a field's type (None, bool, int, float, str, tuples of
    them and unions); types beyond those are not checked here."""
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        return any(_fits(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint in (int, float):
        return isinstance(value, hint | int) and not isinstance(value, bool)
    if hint in (str, bool):
        return isinstance(value, hint)
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_fits(item, args[0]) for item in value)
        return len(args) == len(value) and all(map(_fits, value, args))
    return True


def _numbers(value: object) -> Iterator[int | float]:
    """The numbers of a field's value (a number, or a tuple of them)."""
    for item in value if isinstance(value, tuple) else (value,):
        if isinstance(item, int | float) and not isinstance(item, bool):
            yield item


def _optional_number(value: object, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{what}: {type(value).__name__} where a number belongs")
    return finite_float(value, what)


def _rows(text: str) -> Iterator[tuple[int, str, bool]]:
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield number, line, number == len(lines)  # the last piece has no newline after it


def parse_recording(text: str) -> Recording:
    if not sniff(text):
        raise RecordingError(f"line 1: not a {FORMAT} recording")
    headers: list[RecordingHeader] = []
    starts: list[int] = []
    snaps: list[Snapshot] = []
    notes: list[str] = []
    offset = 0.0  # later recordings appended to the file start after the earlier ones
    last_t = 0.0
    static: _Static = {}
    for number, line, unterminated in _rows(text):
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
            if unterminated:
                notes.append(f"line {number}: cut short (the run was killed?); dropped")
                break
            raise RecordingError(f"line {number}: not JSON ({exc})") from None
        if obj.get("format") == FORMAT:
            try:
                headers.append(RecordingHeader.from_json(obj))
            except RecordingError as exc:
                raise RecordingError(f"line {number}: {exc}") from None
            starts.append(len(snaps))
            offset = last_t + (1.0 if snaps else 0.0)
            static = {}
            continue
        try:
            t = finite_float(obj["t"], "t") + offset
            snaps.append(_snapshot(obj, t, static))
        except RoundTooLarge as exc:  # crafted, not cut short: refused wherever it is
            raise RecordingError(f"line {number}: {exc}") from None
        except (KeyError, TypeError, ValueError) as exc:
            if unterminated:
                notes.append(f"line {number}: cut short; dropped")
                break
            raise RecordingError(f"line {number}: not a sample ({exc!r})") from None
        last_t = t
    return Recording(tuple(headers), tuple(snaps), tuple(notes), tuple(starts))


_Static = dict[tuple[str | None, int], dict[str, Any]]  # (node, pid) -> name, cmdline, user


class RowReader:
    """One recording read line by line as it is written (a ``watch --stream`` of another
    node): ``feed`` each parsed line; the header is kept, each round comes back."""

    def __init__(self) -> None:
        self.header: RecordingHeader | None = None
        self._static: _Static = {}

    def feed(self, obj: Mapping[str, Any]) -> Snapshot | None:
        """The round of this line (its ``t`` as written), or None for a header line.
        Raises ``RecordingError`` for a line that is neither."""
        if obj.get("format") == FORMAT:
            self.header, self._static = RecordingHeader.from_json(obj), {}
            return None
        try:
            return _snapshot(obj, finite_float(obj["t"], "t"), self._static)
        except RoundTooLarge as exc:
            raise RecordingError(str(exc)) from None
        except (KeyError, TypeError, ValueError) as exc:
            raise RecordingError(f"not a sample ({exc!r})") from None


def _node_of(item: object, key: str) -> object:
    """The node a round's entry belongs to: a process's ``node``; a merged GPU's id prefix
    (``node1:GPU-...``); None on a single node."""
    if not isinstance(item, Mapping):
        return None
    if key != "gpus":
        return item.get("node")
    uuid = item.get("uuid")
    return uuid.partition(":")[0] if isinstance(uuid, str) and ":" in uuid else None


def check_round(obj: Mapping[str, Any]) -> None:
    """``RoundTooLarge`` when a round holds more GPUs or processes on one node than any node
    has, or more nodes than ``MAX_NODES_PER_ROUND``: refused before anything is built."""
    for key, most in (
        ("gpus", MAX_GPUS_PER_NODE),
        ("procs", MAX_PROCS_PER_NODE),
        ("gpu_procs", MAX_PROCS_PER_NODE),
    ):
        items = obj.get(key)
        if not isinstance(items, list) or len(items) <= most:
            continue
        per_node = Counter(_node_of(item, key) for item in items)
        if len(per_node) > MAX_NODES_PER_ROUND:
            raise RoundTooLarge(
                f"{key} of {len(per_node)} nodes in one round (at most {MAX_NODES_PER_ROUND})"
            )
        node, count = per_node.most_common(1)[0]
        if count > most:
            where = f"on node {node}" if node is not None else "on one node"
            raise RoundTooLarge(
                f"{count} {key} {where} in one round: more than any node has "
                f"(at most {most} per node)"
            )


def _snapshot(obj: Mapping[str, Any], t: float, static: _Static) -> Snapshot:
    check_round(obj)
    gpus = tuple(_build(GpuSample, g, t=t) for g in obj.get("gpus", ()))
    host = _build(HostSample, obj["host"], t=t) if "host" in obj else None
    procs = []
    for entry in obj.get("procs", ()):
        if not isinstance(entry, Mapping):
            raise TypeError(f"procs: {type(entry).__name__} where an object belongs")
        key = (entry.get("node"), finite_int(entry["pid"], "pid"))
        if any(k in entry for k in _PROC_STATIC):
            static[key] = {k: entry[k] for k in _PROC_STATIC if k in entry}
        procs.append(_build(ProcSample, {**static.get(key, {}), **entry}))
    return Snapshot(
        t=t,
        gpus=gpus,
        gpu_procs=tuple(_build(GpuProcess, p) for p in obj.get("gpu_procs", ())),
        host=host,
        procs=tuple(procs),
        no_data=tuple(obj.get("no_data", ())),
        sampler_cpu_pct=_optional_number(obj.get("sampler_cpu_pct"), "sampler_cpu_pct"),
        mark=obj.get("mark"),
    )
