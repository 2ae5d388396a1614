"""One run as ``run.json`` stores it, and its reader: bounded, typed, one ``InputError``
naming the file and the field for anything that is not a run record.

``run.json`` is an interface (``compare`` reads it, people script against it): add keys,
never rename them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from tuneadvisor.errors import InputError
from tuneadvisor.files import is_directory, load_json_input, peek
from tuneadvisor.runrecord import RECORD_NAME as RECORD_NAME
from tuneadvisor.runrecord.allocation_record import Allocation
from tuneadvisor.runrecord.json_fields import (
    JsonFields,
    is_bool,
    is_int,
    is_mapping,
    is_str,
    list_of,
    or_none,
)
from tuneadvisor.runrecord.measured import Epoch, Measured, Step, Summary
from tuneadvisor.runrecord.parts import Host, Paths, Resources
from tuneadvisor.runrecord.settings import Settings
from tuneadvisor.runrecord.window import Window, steady_window

KIND = "tuneadvisor-run"
SCHEMA = 1


# How run.json begins as `run` writes it (json.dumps keeps the key order of to_json).
_RECORD_HEAD = re.compile(rb'\A\s*\{\s*"kind"\s*:\s*"tuneadvisor-run"')
# A record is a few kB: a JSON file up to this size is read whole to find its kind
_SMALL_JSON = 1 << 20


def is_run_record(path: str | Path) -> bool:
    """Whether the file is a run record, told by its content, not its name: ``compare
    A/run.json B/run.json`` must not read them as torch.profiler traces, which are JSON too.
    Never raises: a file that cannot be read is refused where it is read."""
    head = peek(path, 256)
    if _RECORD_HEAD.match(head):
        return True
    if not head.lstrip().startswith(b"{"):
        return False
    try:  # the keys in another order (a record rewritten by a tool): small files only
        if os.path.getsize(path) > _SMALL_JSON:
            return False
        with open(path, "rb") as stream:
            data = json.loads(stream.read(_SMALL_JSON + 1))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and data.get("kind") == KIND


# The status of a run stopped by Ctrl-C (its record is complete, its training is not).
INTERRUPTED = "interrupted"


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """One run as ``run.json`` stores it. Fields a kind of run does not have are None and
    left out of the file: a local run has no Slurm job id, a submitted one no allocation,
    host or exit codes, and no measurements until its job has ended."""

    id: str
    name: str
    label: str | None
    status: str  # completed, failed, interrupted, submitted, or the job's state in lower case
    where: str  # local or slurm
    script: str
    launcher: str
    settings: Settings
    source: Mapping[str, Any]  # where the settings came from
    commands: tuple[tuple[str, ...], ...]
    versions: Mapping[str, str | None]  # tuneadvisor, python, torch, torchvision, cuda
    started: str  # ISO 8601, UTC
    paths: Paths
    notes: tuple[str, ...]
    exit_codes: tuple[int | None, ...] | None = None  # local runs
    task_pids: tuple[int, ...] | None = None  # local runs: what watch followed
    allocation: Allocation | None = None  # local runs: the emulated allocation
    host: Host | None = None  # local runs
    slurm_job_id: str | None = None  # submitted runs
    slurm_state: str | None = None  # submitted runs, once ended: the job's final state
    ended: str | None = None
    wall_s: float | None = None  # local runs
    measured: Measured | None = None
    resources: Resources | None = None
    # what the report (or tune) predicted for this run: ``advisor.prediction.Prediction``'s
    # JSON, kept as written (the relaunch layer reads it; a record without one is older)
    prediction: Mapping[str, Any] | None = None
    # "device-time-stand-in": the training's device work was a sleep (--device-time-ms); by
    # default what the script's start event says, so that every record of such a run says it
    test_mode: str | None = None
    # ``profile.workers_traced``: whether the line profile's DataLoader workers ran under
    # line_profiler's tracer (false: the bundled scripts turn it off in forked children); by
    # default what the script's start event says; None: not said (unprofiled, older scripts)
    profile_workers_traced: bool | None = None
    path: Path | None = field(default=None, compare=False)  # the run.json it was read from

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": KIND, "schema": SCHEMA, "id": self.id, "name": self.name,
            "label": self.label, "status": self.status,
        }  # fmt: skip
        if self.exit_codes is not None:
            out["exit_codes"] = list(self.exit_codes)
        if self.task_pids is not None:
            out["task_pids"] = list(self.task_pids)
        out["where"] = self.where
        if self.stated_test_mode is not None:
            out["test_mode"] = self.stated_test_mode
        if self.slurm_job_id is not None:
            out["slurm_job_id"] = self.slurm_job_id
            if self.ended is not None:  # written when the job's end was recorded
                out["slurm_state"] = self.slurm_state
        out.update(
            script=self.script,
            launcher=self.launcher,
            settings=self.settings.to_json(),
            source=dict(self.source),
            commands=[list(c) for c in self.commands],
        )
        if self.allocation is not None:
            out["allocation"] = self.allocation.to_json()
        if self.host is not None:
            out["host"] = self.host.to_json()
        out["versions"] = dict(self.versions)
        out["started"] = self.started
        if self.ended is not None:
            out["ended"] = self.ended
        if self.wall_s is not None:
            out["wall_s"] = self.wall_s
        if self.measured is not None:
            out.update(self.measured.to_json())
        if self.resources is not None:
            out["resources"] = self.resources.to_json()
        if self.prediction is not None:
            out["prediction"] = dict(self.prediction)
        if self.stated_workers_traced is not None:
            out["profile"] = {"workers_traced": self.stated_workers_traced}
        out["paths"] = self.paths.to_json()
        out["notes"] = list(self.notes)
        return out

    @classmethod
    def from_json(cls, data: object, file: Path | None = None) -> RunRecord:
        """The record in ``data`` (read from ``file``): an ``InputError`` naming the file
        and the field when it is not a run record, or a field has the wrong type. Missing
        fields take their defaults (older and hand-written records)."""
        f = JsonFields(data, file)
        if f.data.get("kind") != KIND:
            raise InputError(file, "not a tuneadvisor run record")
        schema = f.whole("schema", 0)
        if schema > SCHEMA:
            raise InputError(file, f"run record schema {schema} is newer than this one")
        codes = f.get("exit_codes", list_of(or_none(is_int)), "a list of exit codes", None)
        pids = f.get("task_pids", list_of(is_int), "a list of process ids", None)
        versions = f.get("versions", is_mapping, "an object", {})
        if not all(or_none(is_str)(v) for v in versions.values()):
            raise InputError(file, "run record: versions holds a value that is not a string")
        commands = f.get("commands", list_of(list_of(is_str)), "a list of commands", [])
        measured = any(f.has(k) for k in ("start", "summary", "steps", "epochs", "events"))
        try:
            settings = Settings.from_json(f.mapping("settings"))
            allocation = (
                Allocation.from_json(f.mapping("allocation")) if f.has("allocation") else None
            )
        except (TypeError, ValueError, AttributeError) as exc:
            raise InputError(
                file, f"run record: settings or allocation unreadable ({exc})"
            ) from None
        return cls(
            id=f.text("id", "?"),
            name=f.text("name"),
            label=f.opt_text("label"),
            status=f.text("status", "unknown"),
            where=f.text("where"),
            script=f.text("script"),
            launcher=f.text("launcher"),
            settings=settings,
            source=f.mapping("source"),
            commands=tuple(tuple(c) for c in commands),
            versions=dict(versions),
            started=f.text("started"),
            paths=Paths.from_json(f.obj("paths")),
            notes=f.texts("notes"),
            exit_codes=None if codes is None else tuple(codes),
            task_pids=None if pids is None else tuple(pids),
            allocation=allocation,
            host=Host.from_json(f.obj("host")) if f.has("host") else None,
            slurm_job_id=f.opt_text("slurm_job_id"),
            slurm_state=f.opt_text("slurm_state"),
            ended=f.opt_text("ended"),
            wall_s=f.number("wall_s"),
            measured=Measured.from_json(f) if measured else None,
            resources=Resources.from_json(f.obj("resources")) if f.has("resources") else None,
            prediction=f.mapping("prediction") if f.data.get("prediction") is not None else None,
            test_mode=f.opt_text("test_mode"),
            profile_workers_traced=f.obj("profile").get(
                "workers_traced", or_none(is_bool), "true, false or null", None
            ),
            path=file,
        )

    # Views for the readers (compare, plots, tune, the run command)
    @property
    def display_label(self) -> str:
        return self.label or self.id

    @property
    def stated_test_mode(self) -> str | None:
        """The test mode of the run: its own field, else its training's start event's."""
        if self.test_mode is not None:
            return self.test_mode
        said = self.measured.start.get("test_mode") if self.measured is not None else None
        return said if isinstance(said, str) else None

    @property
    def stated_workers_traced(self) -> bool | None:
        """Whether the line profile's workers ran traced: its own field, else its training's
        start event's (``profile_workers_traced``, which trainkit writes under kernprof)."""
        if self.profile_workers_traced is not None:
            return self.profile_workers_traced
        said = self.measured.start.get("profile_workers_traced") if self.measured else None
        return said if isinstance(said, bool) else None

    @property
    def summary(self) -> Summary:
        return self.measured.summary if self.measured is not None else Summary()

    @property
    def steps(self) -> tuple[Step, ...]:
        return self.measured.steps if self.measured is not None else ()

    @property
    def epochs(self) -> tuple[Epoch, ...]:
        return self.measured.epochs if self.measured is not None else ()

    @property
    def sampled(self) -> Mapping[str, float]:
        """What ``watch`` sampled beside the run (empty when nothing)."""
        return (self.resources.sampled if self.resources is not None else None) or {}

    def facts(self) -> dict[str, object]:
        """``run.*``: what the run record beside a profile says of the profiled run, for the
        step-time model (its batch size: the script may set it where a scan cannot see)."""
        out: dict[str, object] = {}
        traced = self.stated_workers_traced  # the profile's workers under its tracer
        if traced is not None:
            out["run.profile_workers_traced"] = traced
        start = self.measured.start if self.measured is not None else {}
        for batch in (self.settings.knobs.get("batch_size"), start.get("batch_size")):
            if isinstance(batch, int) and not isinstance(batch, bool) and batch > 0:
                out["run.batch_size"] = batch
                break
        rate = self.samples_per_s
        if rate is not None:
            out["run.samples_per_s"] = round(rate, 3)
        steady = self.steady
        if steady is not None and steady.steps >= 8:  # a handful of steps says no spread
            out["run.spread"] = round(steady.spread, 4)
        others = self.resources.cpu_others if self.resources is not None else None
        if others is not None and others.others_cores is not None and others.allowed_cpus:
            out["run.others_cores"] = others.others_cores
            out["run.allowed_cpus"] = len(others.allowed_cpus)
        return out

    @property
    def ran_on_cpu(self) -> bool:
        """The training said it ran on the CPU (its start event's device): a machine without
        a GPU, whatever the settings asked for."""
        device = self.measured.start.get("device") if self.measured is not None else None
        return isinstance(device, str) and device.split(":")[0] == "cpu"

    @property
    def used_settings(self) -> Settings:
        """The settings as the run had them: no GPU where it ran on the CPU (never labelled
        or plotted at the GPUs it asked for and did not get)."""
        if self.ran_on_cpu and self.settings.gpus:
            return replace(self.settings, gpus=0)
        return self.settings

    def describe(self) -> str:
        """Its settings in one short line, as the run had them."""
        text = self.used_settings.describe()
        if self.used_settings is not self.settings:
            text += f", no GPU ({self.settings.gpus} asked)"
        return text

    @cached_property
    def steady(self) -> Window | None:
        """The steady window of its steps (window.py): the run's throughput and step time."""
        return steady_window(self.steps)

    @property
    def samples_per_s(self) -> float | None:
        """The run's throughput: over its steady window; a record without steps (a job
        that wrote none) has only its summary's."""
        steady = self.steady
        if steady is not None:
            return steady.samples_per_s
        value = self.summary.samples_per_s
        return float(value) if value is not None else None

    @property
    def step_s(self) -> float | None:
        """The run's step time in seconds, over the same steady window."""
        steady = self.steady
        if steady is not None:
            return steady.step_s
        value = self.summary.step_time_s
        return float(value) if value is not None else None

    @property
    def ok(self) -> bool:
        return self.status == "completed"

    @property
    def interrupted(self) -> bool:
        """Stopped by Ctrl-C (``run`` and ``tune`` then exit 130)."""
        return self.status == INTERRUPTED

    def profile_paths(self) -> list[Path]:
        return self._paths(self.paths.profiles)

    def trace_paths(self) -> list[Path]:
        """The torch.profiler traces of ``run --profile torch``, one per rank."""
        return self._paths(self.paths.traces)

    def metrics_paths(self) -> list[Path]:
        """The ``watch --record`` files sampled beside the run (they may not exist yet:
        a submitted job writes its own)."""
        return self._paths(self.paths.metrics)

    def _paths(self, names: Sequence[str]) -> list[Path]:
        base = self.path.parent if self.path else Path()
        return [base / p for p in names]


def read_record(path: str | Path) -> RunRecord:
    """A run from its folder or its run.json."""
    file = Path(path)
    if is_directory(file):
        file = file / RECORD_NAME
    data = load_json_input(file, "run record")
    if not isinstance(data, dict):
        raise InputError(file, "not a run record (a JSON object)")
    try:
        return RunRecord.from_json(data, file)
    except (AttributeError, TypeError, ValueError, KeyError) as exc:
        # A record edited or damaged by hand: a field of the wrong type deep in the model.
        raise InputError(file, f"not a valid run record: {_why(exc)}") from None


def _why(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:120]}"
