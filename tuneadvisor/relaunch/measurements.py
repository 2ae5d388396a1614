"""What a run measured: the training scripts' progress events (``TUNEADVISOR {json}`` lines
of their output), gathered while the run goes (``Measurements``) and kept in its record
(``Measured``: the start event, the throughput summary, each step and epoch)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from tuneadvisor.relaunch.json_fields import JsonFields

PREFIX = "TUNEADVISOR "  # the training scripts' progress lines: PREFIX + one JSON object


def parse_event(line: str) -> dict[str, Any] | None:
    """A progress event from one line of training output; None for any other line."""
    if not line.startswith(PREFIX):
        return None
    try:
        event = json.loads(line[len(PREFIX) :])
    except (ValueError, RecursionError):  # not JSON, huge integers, nested too deeply
        return None
    return event if isinstance(event, dict) and "event" in event else None


@dataclass
class Measurements:
    """What the training's progress events said, gathered while it runs."""

    start: dict[str, Any] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)
    epochs: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] = field(default_factory=dict)
    other: list[dict[str, Any]] = field(default_factory=list)  # resume, snapshot, killed

    def add(self, event: Mapping[str, Any]) -> None:
        kind = event.get("event")
        body = {k: v for k, v in event.items() if k != "event"}
        if kind == "start":
            if not self.start:
                self.start = body
            else:  # an elastic restart: keep the first start, note the others
                self.other.append({"event": "start", **body})
        elif kind == "step":
            self.steps.append(body)
        elif kind == "epoch":
            last_loss = next(
                (s["loss"] for s in reversed(self.steps) if s.get("epoch") == body.get("epoch")),
                None,
            )
            self.epochs.append({**body, "train_loss": last_loss})
        elif kind == "end":
            self.end = body
        else:
            self.other.append(dict(event))

    def summary(self, warmup_steps: int = 1) -> Summary:
        """Throughput over the measured steps: the first ``warmup_steps`` step reports (start-
        up, first batches, worker start) are left out of the medians."""
        measured = self.steps[warmup_steps:] or self.steps
        rates = [s["samples_per_s"] for s in measured if s.get("samples_per_s")]
        times = [s["step_time_s"] for s in measured if s.get("step_time_s")]
        accuracy = [e["accuracy"] for e in self.epochs if e.get("accuracy") is not None]
        return Summary(
            samples_per_s=self.end.get("samples_per_s"),
            samples_per_s_median=statistics.median(rates) if rates else None,
            step_time_s_median=statistics.median(times) if times else None,
            steps=self.end.get("steps", self.steps[-1]["step"] if self.steps else 0),
            samples=self.end.get("samples"),
            train_time_s=self.end.get("train_time_s"),
            final_accuracy=accuracy[-1] if accuracy else None,
            best_accuracy=max(accuracy) if accuracy else None,
        )


@dataclass(frozen=True)
class Summary:
    """Throughput and accuracy of a run (``Measurements.summary``)."""

    samples_per_s: float | None = None  # the end event's: all samples over the training time
    samples_per_s_median: float | None = None  # of the measured steps
    step_time_s_median: float | None = None
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

    def to_json(self) -> dict[str, Any]:
        return dict(self.event)

    @classmethod
    def from_json(cls, f: JsonFields) -> Step:
        return cls(f.whole("step", 0), f.number("samples_per_s"), f.number("step_time_s"), f.data)


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
        return cls(f.opt_whole("epoch"), f.number("train_loss"), f.number("accuracy"), f.data)


@dataclass(frozen=True)
class Measured:
    """What the training's progress events said (a submitted run has none until it ends)."""

    start: Mapping[str, Any]  # the start event: the script's own settings and versions
    summary: Summary
    steps: tuple[Step, ...]
    epochs: tuple[Epoch, ...]
    events: tuple[Mapping[str, Any], ...]  # resume, snapshot, killed, later starts

    @classmethod
    def of(cls, measurements: Measurements) -> Measured:
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
        return cls.from_json(f)

    @classmethod
    def from_json(cls, f: JsonFields) -> Measured:
        return cls(
            start=f.mapping("start"),
            summary=Summary.from_json(f.obj("summary")),
            steps=tuple(Step.from_json(s) for s in f.objects("steps")),
            epochs=tuple(Epoch.from_json(e) for e in f.objects("epochs")),
            events=tuple(dict(e.data) for e in f.objects("events")),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "start": dict(self.start),
            "summary": self.summary.to_json(),
            "steps": [s.to_json() for s in self.steps],
            "epochs": [e.to_json() for e in self.epochs],
            "events": [dict(e) for e in self.events],
        }
