"""Run records: one folder per run under the runs folder, with ``run.json`` (settings, host,
versions, step times, samples/s, loss and accuracy per epoch, resources, paths of the profile
and metrics), the training output and its progress events.

``run.json`` is an interface (``compare`` reads it, people script against it): add keys,
never rename them.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

from tuneadvisor.errors import InputError
from tuneadvisor.files import is_directory, is_regular_file, write_atomic

# The model and its reader are runrecord's (below the session, which reads the record beside
# a profile); named here too, where relaunch's modules have always imported them from.
from tuneadvisor.runrecord.parts import CpuUse as CpuUse
from tuneadvisor.runrecord.parts import Host as Host
from tuneadvisor.runrecord.parts import Paths as Paths
from tuneadvisor.runrecord.parts import Resources as Resources
from tuneadvisor.runrecord.record import KIND as KIND
from tuneadvisor.runrecord.record import RECORD_NAME as RECORD_NAME
from tuneadvisor.runrecord.record import SCHEMA as SCHEMA
from tuneadvisor.runrecord.record import RunRecord as RunRecord
from tuneadvisor.runrecord.record import read_record as read_record

DEFAULT_RUNS_DIR = "runs"


def runs_dir(explicit: str | None) -> Path:
    return Path(explicit or os.environ.get("TUNEADVISOR_RUNS_DIR") or DEFAULT_RUNS_DIR)


def write_record(run_dir: Path, record: RunRecord) -> RunRecord:
    """Write ``run.json`` in ``run_dir``; the record as read back from there."""
    path = run_dir / RECORD_NAME
    write_atomic(path, (json.dumps(record.to_json(), indent=2, default=str) + "\n").encode())
    return replace(record, path=path)


def list_runs(folder: Path) -> list[RunRecord]:
    """Every readable run under ``folder``, oldest first."""
    found: list[RunRecord] = []
    if is_directory(folder):
        for sub in sorted(folder.iterdir()):
            if is_regular_file(sub / RECORD_NAME):
                try:
                    found.append(read_record(sub))
                except InputError:
                    continue
    return sorted(found, key=lambda r: r.started)
