"""What a run measured: the training scripts' progress events (``TUNEADVISOR {json}`` lines
of their output), gathered while the run goes (``Measurements``) and kept in its record
(``Measured``, runrecord's: the start event, the throughput summary, each step and
epoch)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tuneadvisor.runrecord.json_fields import JsonFields

# runrecord holds the run record's model (below the session); named here too for
# relaunch's importers.
from tuneadvisor.runrecord.measured import Measured as Measured
from tuneadvisor.runrecord.measured import Step, Summary
from tuneadvisor.runrecord.window import steady_steps, steady_window

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

    def summary(self) -> Summary:
        """The run's throughput and step time over its steady window (window.py, the figure
        every command prints), with the per-step medians of the same steps and the end
        event's figure over the whole training, each named for what it is."""
        steps = [Step.from_json(JsonFields(s, None)) for s in self.steps]
        measured = steady_steps(steps)
        steady = steady_window(steps)
        rates = [s.samples_per_s for s in measured if s.samples_per_s]
        times = [s.step_time_s for s in measured if s.step_time_s]
        accuracy = [e["accuracy"] for e in self.epochs if e.get("accuracy") is not None]
        return Summary(
            samples_per_s=steady.samples_per_s if steady else self.end.get("samples_per_s"),
            step_time_s=steady.step_s if steady else None,
            samples_per_s_overall=self.end.get("samples_per_s"),
            samples_per_s_median=statistics.median(rates) if rates else None,
            step_time_s_median=statistics.median(times) if times else None,
            steps=self.end.get("steps", self.steps[-1]["step"] if self.steps else 0),
            samples=self.end.get("samples"),
            train_time_s=self.end.get("train_time_s"),
            final_accuracy=accuracy[-1] if accuracy else None,
            best_accuracy=max(accuracy) if accuracy else None,
        )
