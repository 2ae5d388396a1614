"""A prediction's speedup checked as an outsider checks it: the run of the predicted setting
against runs of the measured setting (the prediction's ``baseline``) compared beside it, the
same job otherwise, neither under a profiler. The speedup is the figure the report leads
with; unlike samples/s it holds where the node runs at another pace than in the measured run
(a shared machine, another node of the partition), so it is judged on its own.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from rich.table import Table

from tuneadvisor.advisor.prediction import Span
from tuneadvisor.records import record
from tuneadvisor.relaunch.predicted import FINDING_ID, PredictionCheck
from tuneadvisor.runrecord.record import RunRecord


class Item(Protocol):
    """What a check reads of a compared item (compare/tables.py's ``Item``, which shows
    these checks: a protocol, not an import, so that neither imports the other)."""

    @property
    def label(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def run(self) -> RunRecord | None: ...
    @property
    def predicted(self) -> PredictionCheck | None: ...
    @property
    def samples_per_s(self) -> float | None: ...


# knobs that change how long a run is, not how fast it goes: runs differing in them are the
# same job for a speedup
_LENGTH_KNOBS = frozenset({"num_workers", "max_steps", "epochs", "max_eval_batches"})

INSIDE, MISSED, BETTER = "within the range", "missed", "better than predicted"


@record
class SpeedupCheck:
    """One run of a predicted setting against the runs of the measured one."""

    item: Item
    baselines: tuple[Item, ...]
    predicted: Span
    measured: float  # the run's samples/s over the baselines' median

    @property
    def verdict(self) -> str:
        if self.measured < self.predicted.low:
            return MISSED
        return BETTER if self.measured > self.predicted.high else INSIDE

    def finding(self) -> str | None:
        """``prediction-missed``'s text for a speedup outside its range; None inside."""
        if self.verdict == INSIDE:
            return None
        against = ", ".join(b.key for b in self.baselines)
        said = "below" if self.verdict == MISSED else "above (better than predicted)"
        line = (
            f"{_named(self.item)}: speedup {self.measured:.2f}x against {against} (the measured "
            f"setting, run beside it) {said} the {self.predicted.low:.2f}-"
            f"{self.predicted.high:.2f}x predicted"
        )
        reasons = self.item.predicted.reasons if self.item.predicted is not None else ()
        return f"{line}: {'; '.join(reasons)}" if reasons else line

    @property
    def baseline_rate(self) -> float:
        """The measured setting's samples/s here: the median of its runs."""
        return statistics.median(b.samples_per_s or 0.0 for b in self.baselines)

    @property
    def measured_run_rate(self) -> float | None:
        """The measured run's samples/s as the prediction has it (its expected samples/s
        over its expected speedup); None without a batch size."""
        prediction = self.item.predicted.prediction if self.item.predicted else None
        if prediction is None or prediction.samples_per_s is None or self.predicted.expected <= 0:
            return None
        return prediction.samples_per_s.expected / self.predicted.expected

    def held_note(self) -> str | None:
        """Where the speedup held and the samples/s missed: the measured setting's pace here
        against the measured run's, which the samples/s range assumed."""
        check = self.item.predicted
        then = self.measured_run_rate
        if self.verdict != INSIDE or check is None or not check.missed or not then:
            return None
        now = self.baseline_rate
        return (
            f"{_named(self.item)}: the speedup held ({self.measured:.2f}x within "
            f"{self.predicted.low:.2f}-{self.predicted.high:.2f}x); the measured setting ran "
            f"here at {now:,.1f} samples/s, the measured run at {then:,.1f} "
            f"({now / then - 1:+.0%}): the samples/s range holds only at the measured run's pace"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "run": self.item.label,
            "baselines": [b.label for b in self.baselines],
            "predicted": self.predicted.as_json(),
            "measured": self.measured,
            "verdict": self.verdict,
            "baseline_samples_per_s": self.baseline_rate,
            "measured_run_samples_per_s": self.measured_run_rate,
        }


def _named(item: Item) -> str:
    """A run as the findings name it: its row and short label (``#2 143506-6fdf``)."""
    return item.label if item.key == item.label else f"{item.key} {item.label}"


def _plain(run: RunRecord) -> bool:
    """Completed, with a throughput, and not under a profiler (whose cost is in its rate)."""
    return run.ok and bool(run.samples_per_s) and not run.paths.profiles and not run.paths.traces


def _job(run: RunRecord) -> tuple[object, ...]:
    """What makes two runs the same job, but for their workers and cores."""
    s = run.settings
    knobs = sorted((k, repr(v)) for k, v in s.knobs.items() if k not in _LENGTH_KNOBS)
    return (run.name, run.where, s.ntasks, s.nodes, s.gpus, s.extra_args, tuple(knobs))


def _is_setting(run: RunRecord, setting: Mapping[str, int]) -> bool:
    workers = run.settings.knobs.get("num_workers")
    return (
        setting.get("cpus_per_task") == run.settings.cpus_per_task
        and setting.get("num_workers") == workers
    )


def speedup_checks(items: Sequence[Item]) -> list[SpeedupCheck]:
    """Each plain run with a prediction whose measured setting was run beside it (the same
    job, plain): its speedup over them against the predicted range."""
    checks = []
    for item in items:
        run, check = item.run, item.predicted
        if run is None or check is None or check.prediction.baseline is None or not _plain(run):
            continue
        baseline = check.prediction.baseline
        if not _is_setting(run, check.prediction.setting):
            continue  # a run whose setting is not the one predicted (resized, say)
        same = [
            other
            for other in items
            if other is not item
            and other.run is not None
            and _plain(other.run)
            and _job(other.run) == _job(run)
            and _is_setting(other.run, baseline)
        ]
        rates = [o.samples_per_s for o in same if o.samples_per_s]
        if not rates or not item.samples_per_s:
            continue
        measured = item.samples_per_s / statistics.median(rates)
        checks.append(SpeedupCheck(item, tuple(same), check.prediction.speedup, measured))
    return checks


def speedup_table(checks: Sequence[SpeedupCheck]) -> Table | None:
    if not checks:
        return None
    table = Table(
        title="Speedup against the measured setting",
        title_justify="left",
        caption="measured: the run's samples/s over the median of the measured setting's "
        "runs beside it (the same job, neither profiled); unlike samples/s it holds where the "
        "node runs at another pace than in the measured run",
        caption_justify="left",
    )
    for name in ("run", "against", "predicted", "measured", "verdict"):
        figure = name in ("predicted", "measured")
        table.add_column(name, justify="right" if figure else "left", no_wrap=figure)
    for c in checks:
        table.add_row(
            c.item.key,
            ", ".join(b.key for b in c.baselines),
            f"{c.predicted.low:.2f}-{c.predicted.high:.2f}x",
            f"{c.measured:.2f}x",
            c.verdict,
        )
    return table


def speedup_findings(checks: Sequence[SpeedupCheck]) -> list[str]:
    """``prediction-missed`` lines for speedups outside their range (FINDING_ID's)."""
    return [text for c in checks if (text := c.finding()) is not None]


def held_notes(checks: Sequence[SpeedupCheck]) -> list[str]:
    """For runs whose samples/s missed while their speedup held: why, measured."""
    return [text for c in checks if (text := c.held_note()) is not None]


__all__ = [
    "FINDING_ID",
    "SpeedupCheck",
    "held_notes",
    "speedup_checks",
    "speedup_findings",
    "speedup_table",
]
