"""What a planned change is expected to buy: the step time, samples/s and speedup of the run
with the plan's setting, each a range (``Span``) from the measured spread.

The step-time model (issue 21) makes one; the report shows it in every format; a relaunch
(``run --from REPORT``, ``tune``) records it beside its measurement and ``compare`` checks it.
The JSON form (``as_json``/``from_json``) is what a report file carries, so ``from_json``
validates what it reads (a report may come from someone else).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import field
from typing import Any, TypeGuard

from tuneadvisor.records import record

# What a prediction read from a file may hold: a step of 30,000 years, 10^12 samples/s. Past
# it the file is refused (a report from elsewhere), never printed as ``inf``.
MAX_READ = 1e12


@record
class Span:
    """A predicted figure: its range and the value expected inside it."""

    low: float
    expected: float
    high: float

    def __post_init__(self) -> None:
        values = (self.low, self.expected, self.high)
        if not all(math.isfinite(v) and v >= 0 for v in values):
            raise ValueError(f"a span of finite, non-negative numbers, not {values}")
        if not self.low <= self.expected <= self.high:
            raise ValueError(f"low <= expected <= high, not {values}")

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def as_json(self) -> dict[str, float]:
        return {"low": self.low, "expected": self.expected, "high": self.high}

    @classmethod
    def from_json(cls, obj: object, what: str) -> Span:
        if not isinstance(obj, Mapping) or set(obj) != {"low", "expected", "high"}:
            raise ValueError(f"{what}: an object with low, expected and high")
        values = [obj[k] for k in ("low", "expected", "high")]
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            raise ValueError(f"{what}: numbers")
        if any(MAX_READ < abs(float(v)) < math.inf for v in values):  # 1e308 s: "inf-inf ms"
            raise ValueError(f"{what}: numbers up to {MAX_READ:g} (no run takes or makes more)")
        try:
            return cls(*(float(v) for v in values))
        except ValueError as exc:
            raise ValueError(f"{what}: {exc}") from None


@record
class Prediction:
    """The run with ``setting`` (the plan's values, e.g. ``{"num_workers": 4,
    "cpus_per_task": 5}``) against the run that was measured."""

    setting: Mapping[str, int]
    step_s: Span  # seconds per training step
    speedup: Span  # over the measured run (1.0: no change)
    samples_per_s: Span | None = None  # None when the batch size is not known
    # which figure came from which evidence, and which are estimates ("DataLoader wait per
    # step 0.21 s: measured, the profile"; "compute per step 0.004 s: estimated, ...")
    basis: tuple[str, ...] = ()
    # the cap that limits the prediction (node, partition, cores per GPU, fair share) and what
    # else would move the ceiling; None when nothing capped it
    ceiling: str | None = None
    notes: tuple[str, ...] = field(default=())
    # the node sized for where it is not known ("an assumed 64-core node ..."); None: a site
    # file, Slurm or the machine itself gave it
    assumed_node: str | None = None
    # the measured run's setting (``{"num_workers": 1, "cpus_per_task": 1}``): a run of it
    # beside a run of ``setting`` measures the speedup (compare); None where not known
    baseline: Mapping[str, int] | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "setting": dict(self.setting),
            "step_s": self.step_s.as_json(),
            "speedup": self.speedup.as_json(),
            "samples_per_s": self.samples_per_s.as_json() if self.samples_per_s else None,
            "basis": list(self.basis),
            "ceiling": self.ceiling,
            "notes": list(self.notes),
            "assumed_node": self.assumed_node,
            "baseline": dict(self.baseline) if self.baseline is not None else None,
        }

    @classmethod
    def from_json(cls, obj: object) -> Prediction:
        """A report's ``advice.prediction``; ``ValueError`` saying what is wrong."""
        if not isinstance(obj, Mapping):
            raise ValueError("prediction: an object")
        setting = obj.get("setting")
        if not _a_setting(setting):
            raise ValueError("prediction.setting: names and non-negative whole numbers")
        baseline = obj.get("baseline")  # a report from before it: none
        if baseline is not None and not _a_setting(baseline):
            raise ValueError("prediction.baseline: names and non-negative whole numbers, or null")
        samples = obj.get("samples_per_s")
        texts = {k: obj.get(k, []) for k in ("basis", "notes")}
        for key, value in texts.items():
            if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
                raise ValueError(f"prediction.{key}: a list of strings")
        ceiling = obj.get("ceiling")
        if ceiling is not None and not isinstance(ceiling, str):
            raise ValueError("prediction.ceiling: a string or null")
        assumed = obj.get("assumed_node")
        if assumed is not None and not isinstance(assumed, str):
            raise ValueError("prediction.assumed_node: a string or null")
        return cls(
            setting=dict(setting),
            step_s=Span.from_json(obj.get("step_s"), "prediction.step_s"),
            speedup=Span.from_json(obj.get("speedup"), "prediction.speedup"),
            samples_per_s=(
                None if samples is None else Span.from_json(samples, "prediction.samples_per_s")
            ),
            basis=tuple(texts["basis"]),
            ceiling=ceiling,
            notes=tuple(texts["notes"]),
            assumed_node=assumed,
            baseline=dict(baseline) if isinstance(baseline, Mapping) else None,
        )


def _a_setting(value: object) -> TypeGuard[Mapping[str, int]]:
    """Names and non-negative whole numbers (a setting as a report writes it)."""
    return isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
        for k, v in value.items()
    )
