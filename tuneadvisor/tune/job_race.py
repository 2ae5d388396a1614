"""Trials to a decision: which settings of a tune of the user's own job still need a run.

The array's tasks are rounds, each trying every setting once (interleaved). A setting gets no
more runs once the fastest setting beats it by the tool's own rule (``gain.judge``: beyond both
spreads and ``--min-gain``): it is outside both spreads and cannot be the winner. The decision
is made, and the tasks left are cancelled, when

- the fastest setting beats the start by that rule, each with ``least_runs`` runs (a repeat's
  spread counted, not only one run's steps): it is the winner; a setting still within the
  noise of it after one run is not repeated to choose between two the noise cannot tell apart;
- or every other setting is beaten by the start (or failed), the start with ``least_runs``
  runs: nothing changes.

Otherwise the start and every setting still in run again, to the planned repeats; what they
measured is then judged as a plain sweep's would be (``job_ledger.winner``). Every setting runs
at least once: no setting is left out on a guess.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tuneadvisor.tune.gain import judge
from tuneadvisor.tune.job_grid import JobSetting
from tuneadvisor.tune.job_ledger import TaskResult, pooled


@dataclass(frozen=True)
class Race:
    out: Mapping[JobSetting, str]  # settings given no more runs, and why
    decided: str | None  # why the tasks left are not needed; None while they are
    wanted: frozenset[JobSetting]  # the settings whose next task counts

    def needs(self, setting: JobSetting) -> bool:
        return self.decided is None and setting in self.wanted


def least_runs(repeats: int) -> int:
    """Runs of the start and the winner before a decision: two where the plan has repeats."""
    return min(2, repeats)


def race(
    tasks: Sequence[TaskResult],
    settings: Sequence[JobSetting],
    repeats: int,
    min_gain: float,
    out_before: Mapping[JobSetting, str] | None = None,
) -> Race:
    """The state of the race after the ended ``tasks`` (those that measured, and those that
    failed); ``out_before``: settings already given no more runs (their tasks were cancelled,
    so they stay out)."""
    start = settings[0]
    out = dict(out_before or {})
    runs = {s: [t for t in tasks if t.setting == s and t.rates] for s in settings}
    failed = {s for s in settings if any(t.failed for t in tasks if t.setting == s)}
    rates = {s: r for s in settings if (r := pooled(runs[s])) is not None}
    for s in settings[1:]:
        if s in failed and s not in rates and s not in out:
            out[s] = "its trial failed (the log says why)"
    if start in failed and start not in rates:
        return Race(out, "the start's trial failed: there is nothing to compare with", frozenset())
    unmeasured = [s for s in settings if s not in rates and s not in out]
    # the fastest of those still in (one given no more runs stays out: its tasks are gone)
    leader = max((s for s in rates if s not in out), key=lambda s: rates[s].median, default=None)
    # beaten now by the fastest, by the ledger's rule; one given no more runs stays out even
    # where later runs widened the spreads, but a decision holds only on what holds now
    beaten = {
        s for s in settings[1:]
        if leader is not None and s in rates and s != leader
        and judge(rates[s], rates[leader], min_gain).kept
    }  # fmt: skip
    for s in (s for s in settings if s in beaten):
        out.setdefault(s, f"outside both spreads of {leader.describe() if leader else '-'} "
                          "(the fastest then)")  # fmt: skip
    least = least_runs(repeats)
    live = [s for s in settings if s not in out]
    if unmeasured or leader is None:  # every setting runs once before any decision
        return Race(out, None, frozenset(live))
    if leader == start:
        done = all(s in beaten or (s in failed and s not in rates) for s in settings[1:])
        if done and len(runs[start]) >= least:
            why = "every other setting is outside both spreads of the start, or failed"
            return Race(out, why, frozenset())
        return Race(out, None, frozenset(live))
    if judge(rates[start], rates[leader], min_gain).kept:
        if len(runs[start]) >= least and len(runs[leader]) >= least:
            return Race(
                out,
                f"{leader.describe()} beats the start beyond both spreads "
                f"after {len(runs[start])} and {len(runs[leader])} runs",
                frozenset(),
            )
        # only the start and the fastest need a run to confirm it
        return Race(out, None, frozenset({start, leader}))
    return Race(out, None, frozenset(live))
