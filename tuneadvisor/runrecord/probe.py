"""The probe file that the bundled scripts' ``--probe OUT.json`` writes (training/probekit.py),
read as evidence: its raw timing windows checked and summed up as ``probe.*`` facts.

The file (``kind: tuneadvisor-probe``, ``schema: 1``) keeps each measure's windows; what
they mean is derived here, once: medians, the loop's spread ((max - min) / median), the
stall share and the smallest worker count whose pipeline reaches 95 % of the ceiling's rate.
Anything else is one ``InputError`` naming the file.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

from tuneadvisor.errors import InputError
from tuneadvisor.files import load_json_input
from tuneadvisor.numbers import is_finite_number

KIND = "tuneadvisor-probe"
SCHEMA = 1
FEEDS = 0.95  # a pipeline "feeds" the step when it reaches this share of the ceiling's rate
_MAX_WINDOWS = 1000  # per measure: a probe writes a handful

_Bad = Callable[[str], InputError]  # a reason in, the error naming the file out


@dataclass(frozen=True)
class Probe:
    batch_size: int
    cores: int
    test_mode: bool
    ceiling_step_s: tuple[float, ...]  # one window each: one batch on the device, repeated
    pipeline: tuple[tuple[int, tuple[float, ...]], ...]  # workers -> batches/s per window
    loop_step_s: tuple[float, ...]  # the real loop at the measured settings
    stall_share: tuple[float, ...]  # of each loop window, waiting for the next batch
    num_workers: int | None = None  # the loop's DataLoader workers (None: not written)

    @property
    def ceiling_s(self) -> float:
        return statistics.median(self.ceiling_step_s)

    def workers_for(self, share: float = FEEDS) -> int | None:
        """The fewest workers whose pipeline reaches ``share`` of the ceiling's rate."""
        need = share / self.ceiling_s
        fed = [w for w, rates in self.pipeline if statistics.median(rates) >= need]
        return min(fed) if fed else None

    def facts(self) -> dict[str, object]:
        loop = statistics.median(self.loop_step_s)
        facts: dict[str, object] = {
            "probe.ceiling_step_s": self.ceiling_s,
            "probe.loop_step_s": loop,
            "probe.loop_step_spread": (max(self.loop_step_s) - min(self.loop_step_s)) / loop,
            "probe.stall_share": statistics.median(self.stall_share),
            "probe.batch_size": self.batch_size,
            "probe.cores": self.cores,
            "probe.test_mode": self.test_mode,
        }
        if self.num_workers is not None:
            facts["probe.workers"] = self.num_workers
        if self.pipeline:  # the hook around a script of one's own sweeps no workers
            rates = (statistics.median(rates) for _, rates in self.pipeline)
            facts["probe.pipeline_batches_per_s.max"] = max(rates)
        workers = self.workers_for()
        if workers is not None:
            facts["probe.workers_for_95pct"] = workers
        return facts

    def note(self) -> str:
        """What the probe says, in one line (the model's prediction is the advice's)."""
        workers = self.workers_for()
        if not self.pipeline:
            fed = "no worker counts were tried: nothing says how many feed"
        elif workers is None:
            fed = f"no worker count up to {self.cores} feeds"
        elif workers == 0:
            fed = "the main process alone (0 workers) feeds"
        else:
            fed = f"{workers} worker{'s' if workers > 1 else ''} feed"
        mode = "; its step was the device-time stand-in (test mode)" if self.test_mode else ""
        return (
            f"the loop waited for its next batch {statistics.median(self.stall_share):.0%} of "
            f"the time; {fed} {FEEDS:.0%} of the step's ceiling "
            f"({self.ceiling_s * 1000:.3g} ms at batch {self.batch_size}){mode}"
        )


def read_probe(path: str) -> Probe:
    """The probe in ``path``, or one ``InputError`` naming it."""
    return parse_probe(load_json_input(path, "probe file"), path)


def parse_probe(data: object, path: str | Path | None) -> Probe:
    def bad(why: str) -> InputError:
        return InputError(path, f"not a usable probe file: {why}")

    if not isinstance(data, Mapping) or data.get("kind") != KIND:
        raise InputError(path, f"not a probe file (a JSON object of kind {KIND!r})")
    schema = data.get("schema")
    if not _whole(schema) or schema < 1:
        raise bad("schema is not a whole number")
    if schema > SCHEMA:
        raise bad(f"schema {schema} is newer than this tuneadvisor reads ({SCHEMA})")
    batch, cores, test_mode = data.get("batch_size"), data.get("cores"), data.get("test_mode")
    if not _whole(batch) or batch < 1:
        raise bad("batch_size is not a whole number of at least 1")
    if not _whole(cores) or cores < 1:
        raise bad("cores is not a whole number of at least 1")
    if not isinstance(test_mode, bool):
        raise bad("test_mode is not true or false")
    stall = _windows(data.get("loop_stall_share"), "loop_stall_share", bad, upper=1.0)
    workers = data.get("num_workers")
    if workers is not None and (not _whole(workers) or workers < 0):
        raise bad("num_workers is not a whole number of at least 0")
    return Probe(
        batch_size=batch,
        cores=cores,
        test_mode=test_mode,
        ceiling_step_s=_windows(data.get("ceiling_step_s"), "ceiling_step_s", bad),
        pipeline=_pipeline(data.get("pipeline"), bad),
        loop_step_s=_windows(data.get("loop_step_s"), "loop_step_s", bad),
        stall_share=stall,
        num_workers=workers,
    )


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _windows(value: object, name: str, bad: _Bad, upper: float | None = None) -> tuple[float, ...]:
    """A non-empty list of finite numbers: above 0 (times, rates), or 0..``upper``."""
    if not isinstance(value, list) or not value or len(value) > _MAX_WINDOWS:
        raise bad(f"{name} is not a list of 1 to {_MAX_WINDOWS} numbers")
    out = []
    for v in value:
        ok = is_finite_number(v)
        if ok and upper is not None:
            ok = 0 <= v <= upper
        elif ok:
            ok = v > 0
        if not ok:
            want = f"0..{upper:g}" if upper is not None else "above 0"
            raise bad(f"{name} holds {str(v)[:20]!r}, not a number {want}")
        out.append(float(v))
    return tuple(out)


def _pipeline(value: object, bad: _Bad) -> tuple[tuple[int, tuple[float, ...]], ...]:
    if not isinstance(value, list) or len(value) > _MAX_WINDOWS:  # empty: no sweep
        raise bad("pipeline is not a list of worker counts and their rates")
    rows: dict[int, tuple[float, ...]] = {}
    for i, row in enumerate(value):
        workers = row.get("workers") if isinstance(row, Mapping) else None
        if not _whole(workers) or workers < 0:
            raise bad(f"pipeline[{i}].workers is not a whole number of 0 or more")
        if workers in rows:
            raise bad(f"pipeline names {workers} workers twice")
        rows[workers] = _windows(row.get("batches_per_s"), f"pipeline[{i}].batches_per_s", bad)
    return tuple(sorted(rows.items()))
