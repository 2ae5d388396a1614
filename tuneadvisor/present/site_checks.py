"""How `doctor` reads: one aligned line per check, what to do under a line that is not ok,
and the JSON object scripts read (its keys are stable; the README lists the check ids)."""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from tuneadvisor.workspace.site_checks.model import STATUSES, Check

FIX_MARK = "-> "


def render_checks(
    checks: Sequence[Check], about: Mapping[str, str], width: int | None = None
) -> str:
    """``about``: a few facts of the run ("host", "tuneadvisor"), shown first. ``width``: the
    terminal's; values and fixes wrap at word breaks under their column (none: one line)."""
    head = "tuneadvisor doctor: " + ", ".join(f"{k} {v}" for k, v in about.items())
    status_w = max(len(s) for s in STATUSES)
    id_w = max((len(c.id) for c in checks), default=0)
    indent = " " * (status_w + id_w + 4)
    room = None if width is None else max(30, width - len(indent))

    def wrapped(text: str, first: str, hang: str) -> list[str]:
        if room is None:
            return [first + text]
        parts = textwrap.wrap(text, room - (len(hang) - len(indent)), break_on_hyphens=False)
        return [first + parts[0], *(hang + part for part in parts[1:])] if parts else [first]

    lines = [head, ""]
    for check in checks:
        lead = f"{check.status:<{status_w}}  {check.id:<{id_w}}  "
        lines += [line.rstrip() for line in wrapped(check.value, lead, indent)]
        if check.fix and check.status != "ok":
            lines += wrapped(check.fix, indent + FIX_MARK, indent + " " * len(FIX_MARK))
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
