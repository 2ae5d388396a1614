"""A tune folder given to ``compare`` stands for its trials: ``runs/ID-tune-NAME-XXXX/`` holds
``tune.json`` and one run folder per trial under ``trials/``, each with its ``run.json``. So
``compare runs/*-mnist_single-*`` after a ``tune`` compares the tune's trials beside the runs
instead of failing on a folder without ``run.json``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tuneadvisor.errors import InputError
from tuneadvisor.files import is_directory, load_json_input
from tuneadvisor.relaunch.records import RECORD_NAME, list_runs

TUNE_SUMMARY = "tune.json"
TRIALS = "trials"


def is_tune_folder(path: Path) -> bool:
    return (
        is_directory(path)  # a name too long for the system is no folder, not a crash
        and not (path / RECORD_NAME).exists()
        and ((path / TUNE_SUMMARY).is_file() or (path / TRIALS).is_dir())
    )


def trial_folders(folder: Path) -> list[Path]:
    """The trials' run folders, in the order tune ran them (tune.json's), else oldest first
    (a tune stopped before it wrote its summary); none is one InputError line."""
    trials = folder / TRIALS
    ordered = [trials / run_id for run_id in _run_ids(folder / TUNE_SUMMARY)]
    found = [p for p in ordered if (p / RECORD_NAME).is_file()]
    if not found:
        found = [r.path.parent for r in list_runs(trials) if r.path is not None]
    if not found:
        raise InputError(folder, "a tune folder without any trial run to compare")
    return found


def expand_tune_folders(paths: Sequence[str]) -> list[str]:
    """``paths`` with each tune folder replaced by its trials' run folders."""
    out: list[str] = []
    for text in paths:
        path = Path(text)
        if is_tune_folder(path):
            out.extend(str(p) for p in trial_folders(path))
        else:
            out.append(text)
    return out


def _run_ids(summary: Path) -> list[str]:
    """The run ids tune.json lists, trial by trial; none when it is missing or unreadable
    (the trials folder is read instead)."""
    if not summary.is_file():
        return []
    try:
        data = load_json_input(summary, "tune summary")
    except InputError:
        return []
    trials = data.get("trials") if isinstance(data, dict) else None
    ids: list[str] = []
    for trial in trials if isinstance(trials, list) else []:
        runs = trial.get("runs") if isinstance(trial, dict) else None
        for run_id in runs if isinstance(runs, list) else []:
            # an id is a folder name under trials/, never a path elsewhere
            named = isinstance(run_id, str) and run_id not in ("", ".", "..")
            if named and Path(run_id).name == run_id:
                ids.append(run_id)
    return ids
