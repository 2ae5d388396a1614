"""The JSON report's schema in the tests: every report a test writes in this process is
checked against it (``report/json_report.to_json`` wrapped by an autouse fixture), and a test
that reads a report from a subprocess checks it with ``checked``.

The tests check the schema closed: an object the schema describes key by key may hold no
other key, so every key the writer writes is one the schema (the contract users read) names.
Readers take the schema open (a later release may add keys)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from tuneadvisor.relaunch.saved_report import check_report, report_schema


def closed(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` on each object given key by key."""
    if isinstance(schema, dict):
        out = {k: closed(v) for k, v in schema.items()}
        if "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [closed(v) for v in schema]
    return schema


CLOSED = Draft202012Validator(closed(copy.deepcopy(report_schema())))


def schema_errors(doc: object) -> list[str]:
    """Each place where ``doc`` breaks the closed schema, with the schema's words."""
    return [f"{e.json_path}: {e.message}" for e in _leaves(CLOSED.iter_errors(doc))]


def _leaves(errors: Iterable[ValidationError]) -> Iterator[ValidationError]:
    """The errors themselves, not "valid under none of" a null-or-object's branches."""
    for error in errors:
        if error.context:
            yield from _leaves(error.context)
        else:
            yield error


def checked(doc: Any) -> Any:
    """``doc``, after checking it is a report of the schema (closed) that the reader takes."""
    errors = schema_errors(doc)
    assert not errors, "the JSON report breaks its schema:\n" + "\n".join(errors[:20])
    check_report(doc, "the report")
    return doc


def checking(write: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """``write`` (a report writer), each report it returns checked."""

    @functools.wraps(write)
    def checked_write(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return checked(write(*args, **kwargs))  # type: ignore[no-any-return]

    return checked_write


@pytest.fixture(autouse=True)
def _json_reports_match_their_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every report ``to_json`` makes in a test, checked (the CLI's `report --format json`
    included: it looks ``to_json`` up when it runs)."""
    from tuneadvisor.report import json_report

    monkeypatch.setattr(json_report, "to_json", checking(json_report.to_json))


def minimal_report(
    directives: dict[str, Any] | None = None, plan: dict[str, Any] | None = None, **advice: Any
) -> dict[str, Any]:
    """The smallest report the schema takes: no profile, the job's ``directives`` (no job
    without them), ``plan`` (its sbatch, script and env sections; no advice without it or
    ``advice``'s other keys)."""
    sections = {"sbatch": {}, "script": {}, "env": {}, **(plan or {})}
    return {
        "tool": {"name": "tuneadvisor", "version": "0.1.0", "schema": 2},
        "profile": None,
        "job": None if directives is None else {"path": "job.sbatch", "directives": directives},
        "findings": [],
        "advice": None if plan is None and not advice else {"plan": sections, **advice},
    }
