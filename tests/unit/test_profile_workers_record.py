"""run.json says whether a line profile's DataLoader workers ran under line_profiler's tracer
(issue 31 §5): ``profile.workers_traced``, from the training's start event (the bundled
scripts turn the tracer off in forked children and say so), and the ``run.*`` fact the
step-time model reads beside the profile: ``run.profile_workers_traced``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tuneadvisor.advisor.fact_view import view
from tuneadvisor.errors import InputError
from tuneadvisor.relaunch.records import read_record, write_record


def _record(folder: Path, start: dict[str, Any], **more: Any) -> Path:
    folder.mkdir(parents=True)
    data = {
        "kind": "tuneadvisor-run", "schema": 1, "id": folder.name, "name": "mnist_single",
        "status": "completed", "settings": {"cpus_per_task": 2},
        "start": {"event": "start", "batch_size": 64, **start},
        "paths": {"profiles": ["profile.lprof"], "metrics": []}, **more,
    }  # fmt: skip
    (folder / "run.json").write_text(json.dumps(data))
    return folder


def test_the_start_events_word_is_the_records_profile_field_and_a_run_fact(
    tmp_path: Path,
) -> None:
    record = read_record(_record(tmp_path / "a", {"profile_workers_traced": False}))
    assert record.stated_workers_traced is False
    assert record.to_json()["profile"] == {"workers_traced": False}
    facts = record.facts()
    assert facts["run.profile_workers_traced"] is False
    assert view(facts).run.profile_workers_traced is False
    # written and read again: the field is the record's own
    (tmp_path / "copy").mkdir()
    write_record(tmp_path / "copy", record)
    again = read_record(tmp_path / "copy")
    assert again.profile_workers_traced is False and again.to_json() == record.to_json()


def test_a_record_that_says_nothing_has_no_such_field_nor_fact(tmp_path: Path) -> None:
    """Unprofiled runs, and records of scripts before the hook: unknown, never assumed."""
    record = read_record(_record(tmp_path / "a", {}))
    assert record.stated_workers_traced is None
    assert "profile" not in record.to_json()
    assert "run.profile_workers_traced" not in record.facts()


def test_the_records_own_field_is_read_and_a_wrong_one_named(tmp_path: Path) -> None:
    own = read_record(_record(tmp_path / "a", {}, profile={"workers_traced": True}))
    assert own.stated_workers_traced is True and own.facts()["run.profile_workers_traced"]
    _record(tmp_path / "b", {}, profile={"workers_traced": "no"})
    with pytest.raises(InputError, match=r"profile\.workers_traced is 'no', not true, false"):
        read_record(tmp_path / "b")
