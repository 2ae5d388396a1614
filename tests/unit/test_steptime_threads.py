"""Intra-op threads that follow the task's cores, sharing them with DataLoader workers (issue
31 §3): the compute takes longer (OVERSUBSCRIBED_*, measured by
bench/omp_oversubscription.py), counted where the compute runs on the CPU, OMP_NUM_THREADS
follows the cores, two or more threads share their cores with workers, and the measured run's
threads had their cores to themselves."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuneadvisor.advisor.forecast import predict
from tuneadvisor.advisor.plan import Change, Plan
from tuneadvisor.advisor.sizing import step_model
from tuneadvisor.advisor.steptime import (
    OVERSUBSCRIBED_LEAST,
    OVERSUBSCRIBED_MOST,
    step_budget,
)

FOLLOW = {"job.omp_threads_set": True, "job.omp_threads_follow_cores": True}
FIXED = {"job.omp_threads_set": True, "job.omp_threads_follow_cores": False}


def _profile(wait: float, workers: int, cores: int, **more: object) -> dict[str, object]:
    """A profile whose step is waiting and compute (a CPU job unless ``job.gpus``)."""
    return {
        "profile.loader_share": wait,
        "profile.compute_share": 1 - wait,
        "profile.step_s": 0.1,
        "profile.steps": 100,
        "script.batch_size": 32,
        "alloc.workers": workers,
        "alloc.cpus_per_task": cores,
        "job.ranks_per_task": 1,
        **more,
    }


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


def test_threads_following_the_cores_beside_workers_slow_the_compute() -> None:
    """The bench's case: the 1-core, 1-worker run (one thread) of a CPU job whose
    OMP_NUM_THREADS follows the cores, predicted at 2 cores and 1 worker: two threads share
    their cores with the worker. The expected value takes the least measured factor, the
    slow side the most; the same with OMP_NUM_THREADS fixed is as before (the GPU job's
    shape), and the basis names the assumption."""
    wait = 0.1
    follow = _span(_profile(wait, 1, 1, **FOLLOW), 1, 2)
    fixed = _span(_profile(wait, 1, 1, **FIXED), 1, 2)
    # the worker's batch (0.1 steps) fits in the step: the compute decides the step
    assert follow[1] == pytest.approx(1 / (wait + (1 - wait) * OVERSUBSCRIBED_LEAST), rel=0.02)
    assert follow[1] < fixed[1] / 1.5
    assert follow[0] < fixed[0] and follow[0] < follow[1] / (OVERSUBSCRIBED_MOST / 2)
    prediction, _ = predict(_profile(wait, 1, 1, **FOLLOW), _plan(1, 2))
    assert prediction is not None
    assert any("share their cores with 1 worker(s)" in b and "assumed" in b
               for b in prediction.basis)  # fmt: skip
    unchanged, _ = predict(_profile(wait, 1, 1, **FIXED), _plan(1, 2))
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
    plain = replace(budget, oversubscribed=1.0, oversubscribed_max=1.0)
    assert budget.step_at(workers, cores) == plain.step_at(workers, cores)
    assert budget.slower_at(workers, cores) == plain.slower_at(workers, cores)


def test_a_measured_run_whose_threads_shared_their_cores_is_taken_as_measured() -> None:
    """2 cores, 1 worker, threads following: the measured compute already carries the cost;
    predicting 3 cores and 2 workers counts no more of it, and the basis says why."""
    facts = _profile(0.3, 1, 2, **FOLLOW)
    budget = step_budget(facts)
    assert budget is not None and budget.threads_hold_compute
    assert not budget.shares_cores(2, 3)
    assert any("shared their cores with its workers" in b for b in budget.basis)
    assert budget.step_at(1, 2) == pytest.approx(1.0)


def test_the_model_no_longer_sizes_a_slowdown_for_threads_following_the_cores() -> None:
    """The bench's low-cost profile (1 core, 1 worker, 7 % waiting, the rest compute on the
    CPU) on a 2-core node: with threads following the cores the model sized 2 cores and 1
    worker and predicted 1.00x (measured 0.1-0.25x); now that setting is predicted as the
    slowdown it is, so advice does not make it (under BUYS_NOTHING)."""
    facts = _profile(0.07, 1, 1, **FOLLOW, **{"node.cores": 2})
    model = step_model(facts)
    assert model.sizing is not None
    w, c = model.sizing.workers, model.sizing.cores_per_task
    prediction, _ = predict(facts, _plan(w, c), model)
    assert prediction is not None
    assert prediction.speedup.expected < 1.0  # said as the slowdown, never rounded up


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
    """Against the same budget without the threads' cost: the step's slow side is never
    shorter; the expected step is unchanged wherever threads sharing cores are not
    counted, and never shorter where they are."""
    more: dict[str, object] = {"follow": FOLLOW, "fixed": FIXED, "unknown": {}}[omp]
    if gpu:
        more = {**more, "job.gpus": 1}
    budget = step_budget(_profile(wait, measured_workers, measured_cores, **more))
    assert budget is not None
    plain = replace(budget, oversubscribed=1.0, oversubscribed_max=1.0)
    expected, before = budget.step_at(workers, cores), plain.step_at(workers, cores)
    slow = expected * budget.slower_at(workers, cores)
    slow_before = before * plain.slower_at(workers, cores)
    assert slow >= slow_before * (1 - 1e-9)
    assert slow >= expected * (1 - 1e-9)
    if budget.shares_cores(workers, cores):
        assert omp == "follow" and not gpu and workers >= 1 and cores >= 2
        assert expected >= before * (1 - 1e-9)
    else:
        assert expected == before
