"""The JSON report read back: ``report --format json`` as ``run --from`` and ``tune --from``
take it, and its schema (``tuneadvisor/schema/report-vN.json``, shipped in the package).

One module reads a saved report: it is checked against the schema (jsonschema), then its
job directives, plan and prediction become typed values (``SavedReport``). A file that is no
report, a report of a newer schema, or one that breaks the schema is one ``InputError``
naming the file and where in it the problem is. The writer is ``report/json_report.py``; it
takes its version from here.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuneadvisor.advisor.plan import Change, Plan
from tuneadvisor.errors import InputError
from tuneadvisor.files import load_json_input
from tuneadvisor.slurm.safe_words import checked_text

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

    from tuneadvisor.advisor.prediction import Prediction

# 2: findings[].evidence_by_fact (evidence keyed by fact id, the label beside); the keys of
# schema 1 are all kept, so a schema-1 report reads as one of schema 2
SCHEMA_VERSION = 2
SCHEMA_FILE = f"report-v{SCHEMA_VERSION}.json"
NOT_A_REPORT = "not a report of `tuneadvisor report --format json`"
_SHOWN = 80  # characters of a place in the report that a message quotes


def schema_path() -> Path:
    """Where the schema file lies (in the installed package: scripts may read it there)."""
    return Path(str(resources.files("tuneadvisor").joinpath("schema", SCHEMA_FILE)))


@functools.cache
def report_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(schema_path().read_text(encoding="utf-8"))
    return schema


@dataclass(frozen=True)
class SavedReport:
    """What a relaunch takes from a saved report."""

    source: str
    schema: int  # tool.schema
    directives: Mapping[str, str]  # the job's, as sbatch applies them ({} without a job)
    plan: Plan
    prediction: Prediction | None  # None: the report predicts nothing
    facts: Mapping[str, object] | None = None  # advice.facts: sized again where a run runs


def read_report(path: str) -> SavedReport:
    """The report at ``path``, checked and read; an InputError naming it otherwise."""
    return parse_report(load_json_input(path, "report"), path)


def parse_report(doc: object, source: str) -> SavedReport:
    check_report(doc, source)
    assert isinstance(doc, Mapping)
    job = doc["job"] or {}
    advice = doc["advice"] or {}
    plan = advice.get("plan") or {}
    return SavedReport(
        source=source,
        schema=doc["tool"]["schema"],
        directives=job.get("directives", {}),
        plan=Plan(
            sbatch=_changes(plan.get("sbatch", {}), source),
            script=_changes(plan.get("script", {}), source),
            env=_changes(plan.get("env", {}), source),
        ),
        prediction=prediction_of(advice.get("prediction"), source, "advice."),
        facts=advice.get("facts") if isinstance(advice.get("facts"), Mapping) else None,
    )


def check_report(doc: object, source: str | None) -> None:
    """``doc`` is a report of this schema, or of an older one (its keys are all kept); an
    InputError saying where it is not."""
    tool = doc.get("tool") if isinstance(doc, Mapping) else None
    if not isinstance(tool, Mapping) or tool.get("name") != "tuneadvisor":
        raise InputError(source, NOT_A_REPORT)
    version = tool.get("schema")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise InputError(
            source,
            f"a report of schema {version}: this tuneadvisor reads schema {SCHEMA_VERSION} "
            "and older (update tuneadvisor)",
        )
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    error = best_match(Draft202012Validator(report_schema()).iter_errors(doc))
    if error is not None:
        raise InputError(source, f"{NOT_A_REPORT} (schema {SCHEMA_VERSION}): {_said(error)}")


def _said(error: ValidationError) -> str:
    """Where and what, in words that quote the schema and the place, never the value (a
    report may hold anything)."""
    place = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    where = _safe(place.removeprefix(".") or "the top")
    rule = error.validator
    wanted: Any = error.validator_value  # the schema's value for the rule that failed
    if rule == "required" and isinstance(error.instance, Mapping):
        missing = [k for k in wanted if k not in error.instance]
        return f"{where}: no {missing[0] if missing else 'required key'}"
    if rule == "type":
        types = [wanted] if isinstance(wanted, str) else list(wanted)
        return f"{where}: must be {' or '.join(types)}"
    if rule in ("const", "enum"):
        values = [wanted] if rule == "const" else list(wanted)
        return f"{where}: must be {' or '.join(json.dumps(v) for v in values)}"
    if rule == "minimum":
        return f"{where}: must be at least {wanted}"
    if rule == "oneOf":
        return f"{where}: must be null or as the schema describes it"
    return f"{where}: does not match the schema ({rule})"


def _safe(text: str) -> str:
    """A place in the report as a message may show it: printable, bounded."""
    shown = "".join(c if c.isprintable() else "?" for c in text)
    return shown if len(shown) <= _SHOWN else shown[: _SHOWN - 3] + "..."


def _changes(table: Mapping[str, Any], source: str) -> dict[str, Change]:
    """A plan section: key -> {value, because}. The finding ids are written into the job
    script's comments: checked as text."""
    changes: dict[str, Change] = {}
    for key, entry in table.items():
        checked_text(key, "a plan setting", source)
        ids = tuple(checked_text(b, f"plan {key}: a finding id", source) for b in entry["because"])
        changes[key] = Change(entry["value"], ids)
    return changes


def prediction_of(raw: object, source: str | Path | None, where: str) -> Prediction | None:
    """A report's ``advice.prediction`` (a run record keeps the same object): None when it
    predicts nothing; one off the schema's ``prediction``, or that does not hold together (a
    range out of order), is an InputError naming ``source`` and ``where``."""
    if raw is None:
        return None
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    from tuneadvisor.advisor.prediction import Prediction

    # a run record's copy is held to the report's definition of a prediction too
    part = {"$defs": report_schema()["$defs"], "$ref": "#/$defs/prediction"}
    error = best_match(Draft202012Validator(part).iter_errors(raw))
    if error is not None:
        said = _said(error)
        place = said.removeprefix("the top") if said.startswith("the top") else f".{said}"
        raise InputError(source, f"{where}prediction{place}")
    try:
        return Prediction.from_json(raw)
    except ValueError as exc:
        raise InputError(source, f"{where}{exc}") from None
