"""What the advisor says: findings with evidence and suggestions, and rules that could not run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from enum import StrEnum

from tuneadvisor.records import record


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


@record
class Evidence:
    """One value a finding rests on, with its label."""

    label: str
    value: object
    unit: str = ""
    # what the JSON report keys it by: the id of the one fact the value is computed from
    # (its unit and label say how: "(%)" of a fraction), else the rule's expression
    key: str = ""


@record
class Suggestion:
    """What a finding suggests changing: sbatch options, training arguments, environment."""

    sbatch: Mapping[str, object] = field(default_factory=dict)  # long option -> value
    script: Mapping[str, object] = field(default_factory=dict)  # training argument -> value
    env: Mapping[str, object] = field(default_factory=dict)  # variable -> value

    def is_empty(self) -> bool:
        return not (self.sbatch or self.script or self.env)


@record
class Finding:
    """One rule's verdict on the gathered facts."""

    id: str
    title: str
    severity: Severity
    group: str  # the cause related symptoms are grouped under
    evidence: tuple[Evidence, ...]
    suggest: Suggestion
    rationale: str
    references: tuple[str, ...]
    rule_path: str


@record
class Skipped:
    """A rule that did not fire because facts it needs are absent ("no data" is not "bad")."""

    id: str
    missing: tuple[str, ...]
