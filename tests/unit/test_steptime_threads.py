"""Intra-op threads that follow the task's cores, sharing them with DataLoader workers (issue
31 §3): the compute may take longer (OVERSUBSCRIBED_MOST, measured by
bench/omp_oversubscription.py), on the range's slow side, counted where the compute runs on
the CPU, OMP_NUM_THREADS follows the cores, two or more threads share their cores with
workers, and the measured run's threads had their cores to themselves."""

from __future__ import annotations

from dataclasses import replace
from unittest.mock import patch

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.test_steptime_costs import _profile
from tuneadvisor.advisor import steptime
from tuneadvisor.advisor.forecast import predict
from tuneadvisor.advisor.plan import Change, Plan
from tuneadvisor.advisor.steptime import (
    OVERSUBSCRIBED_MOST,
    step_budget,
)

FOLLOW: dict[str, object] = {"job.omp_threads_set": True, "job.omp_threads_follow_cores": True}
FIXED: dict[str, object] = {"job.omp_threads_set": True, "job.omp_threads_follow_cores": False}


def _plan(workers: int, cores: int) -> Plan:
    return Plan(
        sbatch={"cpus-per-task": Change(cores, ("x",))},
        script={"num_workers": Change(workers, ("x",))},
    )


def _span(facts: dict[str, object], workers: int, cores: int) -> tuple[float, float, float]:
    prediction, why = predict(facts, _plan(workers, cores))
    assert prediction is not None, why
    s = prediction.speedup
    return s.low, s.expected, s.high


def test_threads_following_the_cores_beside_workers_widen_the_slow_side(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bench's case: the 1-core, 1-worker run (one thread) of a CPU job whose
    OMP_NUM_THREADS follows the cores, predicted at 2 cores and 1 worker: two threads share
    their cores with the worker. The slow side takes the compute as long as the most
    measured; the expected value and the fast side stay (the same setting ran as fast in
    other rounds); with OMP_NUM_THREADS fixed nothing changes, and the basis names the
    assumption only where it decides the number."""
    wait = 0.1
    follow = _span(_profile(wait, 1, 1, **FOLLOW), 1, 2)
    fixed = _span(_profile(wait, 1, 1, **FIXED), 1, 2)
    with monkeypatch.context() as m:
        m.setattr(steptime, "OVERSUBSCRIBED_MOST", 1.0)  # the model before it
        before = _span(_profile(wait, 1, 1, **FOLLOW), 1, 2)
    assert follow[1:] == before[1:] and follow[0] < before[0]
    # the worker's batch (0.1 steps) fits beside the compute: the compute (0.9 of the step)
    # sets the slow step, 0.1 + 0.9 x OVERSUBSCRIBED_MOST measured steps
    slowest = wait + (1 - wait) * OVERSUBSCRIBED_MOST
    assert slowest * 0.95 <= before[0] / follow[0] <= slowest * 1.01
    assert follow[0] < fixed[0] / 2
    prediction, _ = predict(_profile(wait, 1, 1, **FOLLOW), _plan(1, 2))
    assert prediction is not None
    assert any("share their cores with 1 worker(s)" in b and "slow side only" in b
               for b in prediction.basis)  # fmt: skip
    for facts, workers, cores in (
        (_profile(wait, 1, 1, **FIXED), 1, 2),
        (_profile(wait, 1, 1, **FOLLOW), 3, 1),
    ):
        unchanged, _ = predict(facts, _plan(workers, cores))
        assert unchanged is not None
        assert not any("share their cores" in b for b in unchanged.basis)


@pytest.mark.parametrize(
    ("more", "workers", "cores"),
    [
        ({**FOLLOW, "job.gpus": 1}, 2, 3),  # the compute on a GPU: no threads counted
        (FIXED, 2, 3),  # OMP_NUM_THREADS fixed: not counted
        (FOLLOW, 3, 1),  # one core, one thread: nothing to wait on
        (FOLLOW, 0, 2),  # no workers: the threads have their cores
    ],
)
def test_nothing_changes_where_threads_do_not_share_cores_with_workers(
    more: dict[str, object], workers: int, cores: int
) -> None:
    facts = _profile(0.4, 1, 1, **more)
    budget = step_budget(facts)
    assert budget is not None
    assert not budget.shares_cores(workers, cores)
    plain = replace(budget, oversubscribed=1.0)
    assert budget.step_at(workers, cores) == plain.step_at(workers, cores)
    assert budget.slower_sharing(workers, cores) == 1.0


def test_a_setting_of_no_workers_is_predicted_where_threads_hold_the_compute() -> None:
    """The loop loading its own batches beside threads that follow the cores: a prediction
    (the pipeline's line divided by the workers' worth: no longer by zero)."""
    prediction, why = predict(_profile(0.1, 1, 1, **FOLLOW), _plan(0, 2))
    assert prediction is not None, why
    assert any("no workers" in b and "loads each batch itself" in b for b in prediction.basis)


def test_a_measured_run_whose_threads_shared_their_cores_is_taken_as_measured() -> None:
    """2 cores, 1 worker, threads following: the measured compute already carries the cost;
    predicting 3 cores and 2 workers counts no more of it, and the basis says why."""
    facts = _profile(0.3, 1, 2, **FOLLOW)
    budget = step_budget(facts)
    assert budget is not None and budget.threads_hold_compute
    assert not budget.shares_cores(2, 3)
    assert any("shared their cores with its workers" in b for b in budget.basis)
    assert budget.step_at(1, 2) == pytest.approx(1.0)


@given(
    wait=st.floats(0.02, 0.95),
    measured_workers=st.integers(0, 3),
    measured_cores=st.integers(1, 4),
    workers=st.integers(0, 8),
    cores=st.integers(1, 16),
    omp=st.sampled_from(["follow", "fixed", "unknown"]),
    gpu=st.booleans(),
)
def test_the_slow_side_is_never_narrower_and_the_expected_value_moves_only_where_counted(
    wait: float,
    measured_workers: int,
    measured_cores: int,
    workers: int,
    cores: int,
    omp: str,
    gpu: bool,
) -> None:
    """Against the model without the threads' cost (OVERSUBSCRIBED_MOST 1.0): the
    prediction's slow side is never higher, lower only where threads share their cores with
    workers (a CPU job whose threads follow the cores, two or more of them, and a measured
    run whose threads had their cores); the expected value and the fast side never move."""
    more: dict[str, object] = {"follow": FOLLOW, "fixed": FIXED, "unknown": {}}[omp]
    if gpu:
        more = {**more, "job.gpus": 1}
    facts = _profile(wait, measured_workers, measured_cores, **more)
    now, why = predict(facts, _plan(workers, cores))
    with patch.object(steptime, "OVERSUBSCRIBED_MOST", 1.0):
        before, _ = predict(facts, _plan(workers, cores))
    assert now is not None and before is not None, why
    assert now.speedup.expected == before.speedup.expected
    assert now.speedup.high == before.speedup.high
    assert now.speedup.low <= before.speedup.low
    if now.speedup.low < before.speedup.low:
        assert omp == "follow" and not gpu and workers >= 1 and cores >= 2
        assert measured_workers == 0 or measured_cores == 1
        assert any("share their cores" in b for b in now.basis)
