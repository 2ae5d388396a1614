"""Whether a measured change pays: its gain against the measured spread of both settings.

A trial's samples/s is a median with a spread (the steady-state steps after the warm-up,
and the repeats when there are several). A change is kept only when it gains more than
``min_gain`` *and* more than the two spreads together: a +6 % from one noisy trial whose
steps vary by +-8 % is noise, and tune says so rather than keeping it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rate:
    """A setting's measured samples/s: median and relative spread (0.05: +-5 %)."""

    median: float
    spread: float


@dataclass(frozen=True)
class Verdict:
    gain: float  # relative: 0.07 = +7 %
    noise: float  # the spreads of both, together
    min_gain: float

    @property
    def needed(self) -> float:
        return max(self.min_gain, self.noise)

    @property
    def kept(self) -> bool:
        return self.gain > self.needed

    @property
    def within_noise(self) -> bool:
        """A gain the spread could explain (and that the bare threshold would have kept)."""
        return 0 < self.gain <= self.noise

    def why(self) -> str:
        """Why a change was not kept, in words."""
        pct = f"{100 * self.gain:+.1f} %"
        if self.within_noise:
            return f"{pct}, within the measured spread (+-{100 * self.noise:.1f} %): noise"
        return f"{pct}, below the {100 * self.needed:.0f} % a change must gain"


def judge(old: Rate, new: Rate, min_gain: float) -> Verdict:
    """``new`` against ``old``: the gain, and the noise it must beat."""
    gain = new.median / old.median - 1.0 if old.median > 0 else 0.0
    return Verdict(gain, max(0.0, old.spread) + max(0.0, new.spread), min_gain)
