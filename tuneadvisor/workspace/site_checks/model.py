"""One line of `tuneadvisor doctor`: what was checked, how it came out, and what to do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Status = Literal["ok", "missing", "failed", "not-applicable"]
STATUSES: tuple[Status, ...] = ("ok", "missing", "failed", "not-applicable")


@dataclass(frozen=True)
class Check:
    id: str  # stable: scripts and the README name it ("gpu.visible")
    status: Status
    value: str  # what was found, or why nothing was
    fix: str | None = None  # one line of what to do; only where the status is not ok

    def __post_init__(self) -> None:
        if self.status not in STATUSES:  # pragma: no cover - a programming error
            raise ValueError(f"{self.id}: status {self.status!r}")
