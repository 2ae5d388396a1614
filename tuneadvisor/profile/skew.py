"""Skew between ranks of a merged profile (one file per rank): which rank spends the most
time in its DataLoader, or in the rest of its steps, and by how much over the others.

In DDP every rank waits for the slowest at each all-reduce, so a rank that loads its batches
slowly shows as more DataLoader time on that rank (and more waiting in the others'
backward); its step time alone hides it. Both measures are compared against the median of
the *other* ranks, so one straggler among few ranks is not averaged into its own yardstick.
"""

from __future__ import annotations

from collections.abc import Sequence

from tuneadvisor.profile.analysis import PartSummary
from tuneadvisor.records import record
from tuneadvisor.trainscript.kinds import LineKind

MEASURES = ("DataLoader", "step")


@record
class RankSkew:
    """How far the slowest rank's profile is behind the others'."""

    measure: str  # "DataLoader" (its lines' time) or "step" (everything else in the profile)
    slowest: str  # the slowest rank's file
    slowest_s: float
    others_median_s: float
    excess_share: float  # (slowest - others' median) / the slowest rank's total time

    @property
    def ratio(self) -> float:
        """How many times the others' median; infinite when the others spent no time."""
        return self.slowest_s / self.others_median_s if self.others_median_s > 0 else float("inf")


def _median(values: Sequence[float]) -> float:
    """The median (not ``statistics``: it costs `report` its start-up imports)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _loader_s(part: PartSummary) -> float:
    return sum(k.time_s for k in part.kinds if k.kind is LineKind.DATALOADER)


def _skew(parts: Sequence[PartSummary], measure: str) -> RankSkew | None:
    def value(part: PartSummary) -> float:
        loader = _loader_s(part)
        return loader if measure == "DataLoader" else part.total_s - loader

    slowest = max(parts, key=value)
    others = [value(p) for p in parts if p is not slowest]
    median = _median(others)
    if value(slowest) <= 0 or slowest.total_s <= 0:
        return None
    excess = (value(slowest) - median) / slowest.total_s
    return RankSkew(measure, slowest.origin, value(slowest), median, excess)


def rank_skews(parts: Sequence[PartSummary]) -> tuple[RankSkew, ...]:
    """The slowest rank by DataLoader time and by step time (two ranks at least), the larger
    excess first."""
    if len(parts) < 2:
        return ()
    found = [s for m in MEASURES if (s := _skew(parts, m)) is not None]
    return tuple(sorted(found, key=lambda s: s.excess_share, reverse=True))


def skew_text(skew: RankSkew) -> str:
    """'slowest DataLoader: 4_3.lprof 2.1 s, 3.2x the other ranks' median (0.66 s)'."""
    times = "∞" if skew.ratio == float("inf") else f"{skew.ratio:.1f}x"
    return (
        f"slowest {skew.measure}: {skew.slowest} {skew.slowest_s:.3g} s, {times} the other "
        f"ranks' median ({skew.others_median_s:.3g} s)"
    )
