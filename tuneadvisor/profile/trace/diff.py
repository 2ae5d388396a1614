"""Two trace sets side by side: what changed per kind (``tuneadvisor compare A B``)."""

from __future__ import annotations

from dataclasses import dataclass

from tuneadvisor.profile.trace.model import IDLE, KINDS, TraceSet


@dataclass(frozen=True)
class TraceChange:
    what: str  # "step time (ms)", "kernel share (%)", ...
    before: float | None
    after: float | None

    @property
    def delta(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return self.after - self.before


def _steps(ts: TraceSet) -> list[tuple[float, dict[str, float], float, float]]:
    return [
        (s.duration_us, dict(s.by_kind), s.gpu_busy_us, s.communication_exposed_us)
        for r in ts.ranks
        for s in r.steps
    ]


def summary(ts: TraceSet) -> dict[str, float | None]:
    """Mean step (ms: the steps' time over their count, as the report's rank line and
    trace.step_s) and each kind's share of all steps (%), GPU busy and exposed comm."""
    steps = _steps(ts)
    total = sum(d for d, _, _, _ in steps)
    out: dict[str, float | None] = {"step time (ms)": total / len(steps) / 1e3 if steps else None}
    has_device = any(r.has_device for r in ts.ranks)
    for kind in (*KINDS, IDLE):
        share = sum(k.get(kind, 0.0) for _, k, _, _ in steps) / total if total > 0 else None
        out[f"{kind} share (%)"] = None if share is None else 100 * share
    busy = sum(b for _, _, b, _ in steps)
    exposed = sum(e for _, _, _, e in steps)
    shown = total > 0 and has_device
    out["GPU busy (%)"] = 100 * busy / total if shown else None
    out["exposed communication (%)"] = 100 * exposed / total if shown else None
    return out


def changes(before: TraceSet, after: TraceSet) -> list[TraceChange]:
    a, b = summary(before), summary(after)
    return [TraceChange(key, a[key], b[key]) for key in a]


def render_text(rows: list[TraceChange]) -> str:
    def cell(v: float | None) -> str:
        return "-" if v is None else f"{v:,.1f}"

    width = max(len(r.what) for r in rows)
    lines = [f"{'':<{width}}  {'before':>10}  {'after':>10}  {'change':>10}"]
    for r in rows:
        d = r.delta
        change = "-" if d is None else f"{d:+,.1f}"
        lines.append(f"{r.what:<{width}}  {cell(r.before):>10}  {cell(r.after):>10}  {change:>10}")
    return "\n".join(lines) + "\n"
