"""Run records: one folder per run under the runs folder, with ``run.json`` (settings, host,
versions, step times, samples/s, loss and accuracy per epoch, resources, paths of the profile
and metrics), the training output and its progress events.

``run.json`` is an interface (``compare`` reads it, people script against it): add keys,
never rename them.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuneadvisor.errors import InputError
from tuneadvisor.files import read_text_input, write_atomic
from tuneadvisor.relaunch.settings import Settings

SCHEMA = 1
RECORD_NAME = "run.json"
DEFAULT_RUNS_DIR = "runs"
PREFIX = "TUNEADVISOR "  # the training scripts' progress lines: PREFIX + one JSON object


def runs_dir(explicit: str | None) -> Path:
    return Path(explicit or os.environ.get("TUNEADVISOR_RUNS_DIR") or DEFAULT_RUNS_DIR)


def parse_event(line: str) -> dict[str, Any] | None:
    """A progress event from one line of training output; None for any other line."""
    if not line.startswith(PREFIX):
        return None
    try:
        event = json.loads(line[len(PREFIX) :])
    except json.JSONDecodeError:
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

    def summary(self, warmup_steps: int = 1) -> dict[str, Any]:
        """Throughput over the measured steps: the first ``warmup_steps`` step reports (start-
        up, first batches, worker start) are left out of the medians."""
        measured = self.steps[warmup_steps:] or self.steps
        rates = [s["samples_per_s"] for s in measured if s.get("samples_per_s")]
        times = [s["step_time_s"] for s in measured if s.get("step_time_s")]
        accuracy = [e["accuracy"] for e in self.epochs if e.get("accuracy") is not None]
        return {
            "samples_per_s": self.end.get("samples_per_s"),
            "samples_per_s_median": statistics.median(rates) if rates else None,
            "step_time_s_median": statistics.median(times) if times else None,
            "steps": self.end.get("steps", self.steps[-1]["step"] if self.steps else 0),
            "samples": self.end.get("samples"),
            "train_time_s": self.end.get("train_time_s"),
            "final_accuracy": accuracy[-1] if accuracy else None,
            "best_accuracy": max(accuracy) if accuracy else None,
        }


@dataclass(frozen=True)
class RunRecord:
    data: Mapping[str, Any]
    path: Path | None = None  # the run.json it was read from

    # Convenience views of the data; the data is what is stored.
    @property
    def id(self) -> str:
        return str(self.data.get("id", "?"))

    @property
    def label(self) -> str:
        return str(self.data.get("label") or self.id)

    @property
    def settings(self) -> Settings:
        return Settings.from_json(self.data.get("settings") or {})

    @property
    def summary(self) -> Mapping[str, Any]:
        return self.data.get("summary") or {}

    @property
    def epochs(self) -> Sequence[Mapping[str, Any]]:
        return self.data.get("epochs") or []

    @property
    def resources(self) -> Mapping[str, Any]:
        return self.data.get("resources") or {}

    @property
    def samples_per_s(self) -> float | None:
        value = self.summary.get("samples_per_s_median") or self.summary.get("samples_per_s")
        return float(value) if isinstance(value, int | float) else None

    @property
    def ok(self) -> bool:
        return self.data.get("status") == "completed"

    def profile_paths(self) -> list[Path]:
        return self._paths("profiles")

    def metrics_paths(self) -> list[Path]:
        """The ``watch --record`` files sampled beside the run (they may not exist yet:
        a submitted job writes its own)."""
        return self._paths("metrics")

    def _paths(self, key: str) -> list[Path]:
        base = self.path.parent if self.path else Path()
        return [base / p for p in (self.data.get("paths") or {}).get(key, [])]


def write_record(run_dir: Path, data: Mapping[str, Any]) -> Path:
    path = run_dir / RECORD_NAME
    write_atomic(path, (json.dumps(data, indent=2, default=str) + "\n").encode())
    return path


def read_record(path: str | Path) -> RunRecord:
    """A run from its folder or its run.json."""
    file = Path(path)
    if file.is_dir():
        file = file / RECORD_NAME
    text = read_text_input(file, "run record")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(file, f"not JSON (line {exc.lineno}): {exc.msg}") from None
    if not isinstance(data, dict) or data.get("kind") != "tuneadvisor-run":
        raise InputError(file, "not a tuneadvisor run record")
    if int(data.get("schema", 0)) > SCHEMA:
        raise InputError(file, f"run record schema {data.get('schema')} is newer than this one")
    return RunRecord(data, file)


def list_runs(folder: Path) -> list[RunRecord]:
    """Every readable run under ``folder``, oldest first."""
    found: list[RunRecord] = []
    if folder.is_dir():
        for sub in sorted(folder.iterdir()):
            if (sub / RECORD_NAME).is_file():
                try:
                    found.append(read_record(sub))
                except InputError:
                    continue
    return sorted(found, key=lambda r: str(r.data.get("started", "")))
