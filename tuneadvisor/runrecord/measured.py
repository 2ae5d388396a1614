"""What a run measured, as its record keeps it: the start event, the throughput summary,
each step and epoch (relaunch/measurements.py gathers them while the run goes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol

from tuneadvisor.numbers import is_finite_number
from tuneadvisor.runrecord.json_fields import JsonFields

# Progress events a run record may hold of each kind (steps, epochs, others): a run reports
# every --log-interval batches, a few thousand times in a long run; 100,000 steps took
# seconds in `compare`.
MAX_EVENTS = 20_000
# the most steps one event may say it covers (10^9 steps: past any run's length)
MAX_COVERED_STEPS = 10**9


class Gathering(Protocol):
    """The progress events gathered while a run goes (relaunch's ``Measurements``)."""

    @property
    def start(self) -> Mapping[str, Any]: ...
    @property
    def steps(self) -> Sequence[Mapping[str, Any]]: ...
    @property
    def epochs(self) -> Sequence[Mapping[str, Any]]: ...
    @property
    def other(self) -> Sequence[Mapping[str, Any]]: ...  # resume, snapshot, killed

    def summary(self) -> Summary: ...


@dataclass(frozen=True)
class Summary:
    """Throughput and accuracy of a run (``Measurements.summary``). ``samples_per_s`` and
    ``step_time_s`` are the run's figures, those of its steady window (window.py); the others
    are named for what they are."""

    samples_per_s: float | None = None  # over the steady window (window.py: steady_window)
    step_time_s: float | None = None  # over the steady window
    samples_per_s_overall: float | None = None  # the end event's: all samples, warm-up included
    samples_per_s_median: float | None = None  # the median of the per-step rates
    step_time_s_median: float | None = None  # the median of the per-step times
    steps: int | None = None
    samples: float | None = None
    train_time_s: float | None = None
    final_accuracy: float | None = None
    best_accuracy: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, f: JsonFields) -> Summary:
        return cls(
            samples_per_s=f.number("samples_per_s"),
            step_time_s=f.number("step_time_s"),
            samples_per_s_overall=f.number("samples_per_s_overall"),
            samples_per_s_median=f.number("samples_per_s_median"),
            step_time_s_median=f.number("step_time_s_median"),
            steps=f.opt_whole("steps"),
            samples=f.number("samples"),
            train_time_s=f.number("train_time_s"),
            final_accuracy=f.number("final_accuracy"),
            best_accuracy=f.number("best_accuracy"),
        )


@dataclass(frozen=True)
class Step:
    """One ``step`` progress event. ``event`` is all of it as the training script wrote it
    (the scripts add fields of their own); the fields tuneadvisor reads are typed."""

    step: int
    samples_per_s: float | None
    step_time_s: float | None
    event: Mapping[str, Any]
    covers: int | None = None  # ``steps``: the optimizer steps its figures are over, if said

    def to_json(self) -> dict[str, Any]:
        return dict(self.event)

    @classmethod
    def from_json(cls, f: JsonFields) -> Step:
        return cls(
            f.whole("step", 0),
            f.number("samples_per_s"),
            f.number("step_time_s"),
            f.data,
            _covers(f.data.get("steps")),
        )


def _covers(value: object) -> int | None:
    """An event's step count where it is one (a script of the user's may write anything
    under ``steps``: read as unsaid, not as a broken record)."""
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_COVERED_STEPS
    return value if ok else None  # type: ignore[return-value]


@dataclass(frozen=True)
class Epoch:
    """One ``epoch`` progress event with the last training loss of the epoch added."""

    epoch: int | None
    train_loss: float | None
    accuracy: float | None  # test accuracy, 0 to 1
    event: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return dict(self.event)

    @classmethod
    def from_json(cls, f: JsonFields) -> Epoch:
        return cls(f.opt_whole("epoch"), f.loss("train_loss"), f.number("accuracy"), f.data)


@dataclass(frozen=True)
class Measured:
    """What the training's progress events said (a submitted run has none until it ends)."""

    start: Mapping[str, Any]  # the start event: the script's own settings and versions
    summary: Summary
    steps: tuple[Step, ...]
    epochs: tuple[Epoch, ...]
    events: tuple[Mapping[str, Any], ...]  # resume, snapshot, killed, later starts

    @classmethod
    def of(cls, measurements: Gathering) -> Measured:
        """The measurements as recorded (their events read as a record's are)."""
        f = JsonFields(
            {
                "start": measurements.start,
                "summary": measurements.summary().to_json(),
                "steps": measurements.steps,
                "epochs": measurements.epochs,
                "events": measurements.other,
            },
            None,
        )
        return cls.from_json(f, most=None)  # a run's own events: all of them are written

    @classmethod
    def from_json(cls, f: JsonFields, most: int | None = MAX_EVENTS) -> Measured:
        """What a record holds; past ``most`` steps, epochs or other events, one InputError
        naming the file (a record read by ``compare`` or beside a profile is a file)."""
        return cls(
            start=_start(f),
            summary=Summary.from_json(f.obj("summary")),
            steps=tuple(Step.from_json(s) for s in f.objects("steps", most)),
            epochs=tuple(Epoch.from_json(e) for e in f.objects("epochs", most)),
            events=tuple(dict(e.data) for e in f.objects("events", most)),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "start": dict(self.start),
            "summary": self.summary.to_json(),
            "steps": [s.to_json() for s in self.steps],
            "epochs": [e.to_json() for e in self.epochs],
            "events": [dict(e) for e in self.events],
        }


def _start(f: JsonFields) -> dict[str, Any]:
    """The start event, its numbers finite: its world size, samples and batch size are
    divided and multiplied by whoever reads the run (scaling, the step-time model)."""
    start = f.mapping("start")
    for key, value in start.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            f.obj("start").get(key, is_finite_number, "a finite number", None)
    return start
