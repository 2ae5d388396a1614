"""How `doctor` reads: one aligned line per check, what to do under a line that is not ok,
and the JSON object scripts read (its keys are stable; the README lists the check ids)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from tuneadvisor.session.site_checks.model import STATUSES, Check

FIX_MARK = "-> "


def render_checks(checks: Sequence[Check], about: Mapping[str, str]) -> str:
    """``about``: a few facts of the run ("host", "tuneadvisor"), shown first."""
    head = "tuneadvisor doctor: " + ", ".join(f"{k} {v}" for k, v in about.items())
    status_w = max(len(s) for s in STATUSES)
    id_w = max((len(c.id) for c in checks), default=0)
    lines = [head, ""]
    for check in checks:
        lines.append(f"{check.status:<{status_w}}  {check.id:<{id_w}}  {check.value}".rstrip())
        if check.fix and check.status != "ok":
            lines.append(f"{'':<{status_w + id_w + 4}}{FIX_MARK}{check.fix}")
    counts = Counter(c.status for c in checks)
    lines += ["", ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])]
    return "\n".join(lines) + "\n"


def checks_json(checks: Sequence[Check], about: Mapping[str, str]) -> dict[str, Any]:
    return {
        **about,
        "checks": [
            {"id": c.id, "status": c.status, "value": c.value, "fix": c.fix} for c in checks
        ],
    }
