"""The step-time model's costs besides the workers (issue 31 §3): the spread every measured
source gets, the main process's cost of receiving batches, the intra-op threads of a CPU
compute, and the profiler's cost in the workers it forked (the range's fast side)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuneadvisor.advisor.fact_view import as_view
from tuneadvisor.advisor.finish import measured_step
from tuneadvisor.advisor.forecast import predict
from tuneadvisor.advisor.plan import Change, Plan
from tuneadvisor.advisor.sizing import size, step_model
from tuneadvisor.advisor.steptime import (
    MIN_SPREAD,
    PROFILE_SPREAD,
    PROFILED_WORKERS_OVERHEAD,
    PROFILER_OVERHEAD,
    RECEIVE_S,
    step_budget,
)


def _profile(share: float, workers: int, cores: int, **more: object) -> dict[str, object]:
    """A profile whose step is all waiting or compute (a CPU job unless ``job.gpus``)."""
    return {
        "profile.loader_share": share,
        "profile.compute_share": 1 - share,
        "profile.step_s": 0.1,
        "profile.steps": 100,
        "script.batch_size": 32,
        "alloc.workers": workers,
        "alloc.cpus_per_task": cores,
        "job.ranks_per_task": 1,
        **more,
    }


def _probe(spread: float | None, stall: float = 0.16) -> dict[str, object]:
    """The prediction bench's low-cost probe: a 24 ms loop, 20.3 ms of it the device's."""
    facts: dict[str, object] = {
        "probe.loop_step_s": 0.024,
        "probe.ceiling_step_s": 0.0203,
        "probe.stall_share": stall,
        "probe.batch_size": 32,
        "alloc.workers": 1,
        "alloc.cpus_per_task": 1,
        "job.ranks_per_task": 1,
        "job.gpus": 1,
    }
    if spread is not None:
        facts["probe.loop_step_spread"] = spread
    return facts


def _plan(workers: int, cores: int) -> Plan:
    return Plan(
        sbatch={"cpus-per-task": Change(cores, ("x",))},
        script={"num_workers": Change(workers, ("x",))},
    )


def test_a_probe_whose_windows_agree_still_gets_the_floor_of_a_measured_spread() -> None:
    """The bench's low-cost probe said "1.16-1.16x" (its three windows agreed): a measured
    spread is taken at least MIN_SPREAD wide whichever source measured it; none measured is
    the assumed one, said as assumed."""
    measured = step_budget(_probe(0.0))
    missing = step_budget(_probe(None))
    assert measured is not None and missing is not None
    assert measured.spread == MIN_SPREAD and missing.spread == PROFILE_SPREAD
    assert any(b.startswith("spread 5%: measured, the probe's loop") for b in measured.basis)
    assert any(b.startswith("spread 15%: assumed") for b in missing.basis)
    prediction, why = predict(_probe(0.0), _plan(2, 2))
    assert prediction is not None, why
    speedup = prediction.speedup
    assert speedup.low < speedup.expected < speedup.high
    # a ratio of two runs, each within the floor; and the slow side's own factors: the main
    # process's CPU at the new rate, more cores busy than measured
    slower = measured.slower_at(2, 2) * measured.slower_together(2, 2)
    assert speedup.expected / speedup.low == pytest.approx(
        (1 + math.hypot(MIN_SPREAD, MIN_SPREAD)) * slower
    )


def test_receiving_batches_is_a_floor_more_workers_cannot_remove() -> None:
    """The low-cost probe: 16 % of a 24 ms step waiting. Without the main process's cost of
    receiving a batch the model promised 1/0.84 = 1.19x for any number of workers (measured
    1.09x); with it the floor is 0.84 + 1 ms / 24 ms, and the bench's 1.09x is inside."""
    budget = step_budget(_probe(0.0))
    assert budget is not None
    assert budget.receive == pytest.approx(RECEIVE_S / 0.024)
    assert 1 / budget.step_at(64, 65) == pytest.approx(1 / (0.84 + RECEIVE_S / 0.024))
    prediction, _ = predict(_probe(0.0), _plan(2, 2))
    assert prediction is not None and prediction.speedup.contains(1.09)
    assert any("receiving a batch from a worker" in b and "assumed" in b for b in budget.basis)


@given(wait=st.floats(0.0, 1.0), step=st.floats(1e-4, 10.0))
def test_receiving_is_never_more_than_the_measured_wait(wait: float, step: float) -> None:
    """It was inside the measured wait: never more, so the measured setting is never
    predicted slower than it ran, however short the step."""
    facts = {**_profile(wait, 1, 2, **{"job.gpus": 1}), "profile.step_s": step}
    budget = step_budget(facts)
    assert budget is not None
    assert 0.0 <= budget.receive <= wait + 1e-12
    assert budget.step_at(1, 2) <= 1.0 + 1e-9


@given(
    share=st.floats(0.05, 0.95),
    workers=st.integers(1, 16),
    cores=st.integers(1, 32),
    ranks=st.integers(1, 4),
    pinned=st.booleans(),
    threads=st.booleans(),
    gpu=st.booleans(),
)
def test_the_measured_setting_predicts_the_measured_step(
    share: float, workers: int, cores: int, ranks: int, pinned: bool, threads: bool, gpu: bool
) -> None:
    """Whatever the model counts beside the workers (the pin-memory thread, receiving
    batches, intra-op threads holding the cores), the workers' time per batch is read from
    the measured run with the same counts: its own setting predicts its own step."""
    more: dict[str, object] = {
        "job.ranks_per_task": ranks,
        "script.pin_memory": pinned,
        "job.omp_threads_set": threads,
        "job.omp_threads_follow_cores": threads,
    }
    if gpu:
        more["job.gpus"] = 1
    budget = step_budget(_profile(share, workers, cores, **more))
    assert budget is not None
    assert budget.threads_hold_compute is (threads and not gpu)
    assert budget.step_at(workers, cores, ranks) == pytest.approx(1.0)


def test_intra_op_threads_following_the_cores_are_counted_on_a_cpu_job() -> None:
    """A CPU job, half its step compute, OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK: the compute's
    threads hold every core while it runs, so the workers only have the rest of the step.
    The same profile on a GPU job (the compute on the device) predicts more; a fixed thread
    count is said and not counted."""
    follows = {"job.omp_threads_set": True, "job.omp_threads_follow_cores": True}
    cpu, _ = predict(_profile(0.5, 1, 2, **follows), _plan(3, 4))
    gpu, _ = predict(_profile(0.5, 1, 2, **follows, **{"job.gpus": 1}), _plan(3, 4))
    fixed, _ = predict(
        _profile(0.5, 1, 2, **{"job.omp_threads_set": True, "job.omp_threads_follow_cores": False}),
        _plan(3, 4),
    )
    assert cpu is not None and gpu is not None and fixed is not None
    assert cpu.speedup.expected < gpu.speedup.expected
    # the one worker had its core in the half step the threads left it: 0.5 steps a batch;
    # three workers then make a batch every 0.5 + 0.5 / 3 steps (a GPU job's: 0.5 + receiving)
    assert cpu.speedup.expected == pytest.approx(1 / (0.5 + 0.5 / 3))
    assert gpu.speedup.expected == pytest.approx(1 / (0.5 + RECEIVE_S / 0.1))
    assert any("hold every core of the task" in b and "assumed" in b for b in cpu.basis)
    assert not any(b.startswith("intra-op threads") for b in gpu.basis)
    assert any("OMP_NUM_THREADS set to a fixed count" in b for b in fixed.basis)
    assert fixed.speedup.expected == pytest.approx(gpu.speedup.expected)


def test_threads_holding_most_of_the_step_do_not_ask_for_endless_workers() -> None:
    """Compute nearly all of the loop's own time: the workers' room is tiny, and the sizing
    stops where their part of the step is within the margin of the compute's."""
    facts = _profile(0.5, 1, 2, **{"job.omp_threads_follow_cores": True, "node.cores": 256})
    facts["profile.compute_share"] = 0.499
    budget = step_budget(facts)
    assert budget is not None and budget.threads_hold_compute
    assert size(budget, facts).wanted_workers <= 16


def test_a_profiles_fast_side_takes_the_traced_workers_cost() -> None:
    """Workers forked inside the profiled function ran under line_profiler's tracer too (the
    bench's high-cost profile ran 28 % below the plain run): where the setting predicted is
    the pipeline's to make, the fast side is up to 1/(1 - 30 %) faster; where it is the
    loop's, only the loop's own 15 %."""
    facts = _profile(0.9, 1, 1, **{"job.gpus": 1})
    worker_bound, _ = predict(facts, _plan(2, 3))
    loop_bound, _ = predict(facts, _plan(15, 16))
    assert worker_bound is not None and loop_bound is not None
    spread = PROFILE_SPREAD
    for prediction, overhead in (
        (worker_bound, PROFILED_WORKERS_OVERHEAD),
        (loop_bound, PROFILER_OVERHEAD),
    ):
        rate = prediction.samples_per_s
        assert rate is not None
        assert rate.high == pytest.approx(rate.expected / (1 - spread) / (1 - overhead))
    assert any("input pipeline up to 30% faster" in b for b in worker_bound.basis)


def test_a_profile_whose_workers_ran_untraced_keeps_only_the_loops_cost() -> None:
    """`run --profile` turns line_profiler's tracer off in the workers it forks and records
    it (run.profile_workers_traced false): their batches cost what they cost plain, so the
    fast side is the loop's 15 % alone. An unknown record keeps the assumed 30 %."""
    traced_facts = _profile(0.9, 1, 1, **{"job.gpus": 1})
    untraced_facts = {**traced_facts, "run.profile_workers_traced": False}
    traced = step_budget(traced_facts)
    untraced = step_budget(untraced_facts)
    assert traced is not None and untraced is not None
    assert traced.pipeline_overhead == PROFILED_WORKERS_OVERHEAD
    assert untraced.pipeline_overhead == 0.0 and untraced.overhead == PROFILER_OVERHEAD
    assert any("ran without line_profiler's tracer" in b for b in untraced.basis)
    assert not any("input pipeline up to 30% faster" in b for b in untraced.basis)
    prediction, _ = predict(untraced_facts, _plan(2, 3))
    assert prediction is not None and prediction.samples_per_s is not None
    rate = prediction.samples_per_s
    # the pipeline sets the step: nothing of the profiler's in it, the spread's fast side only
    assert rate.high == pytest.approx(rate.expected / (1 - PROFILE_SPREAD))
    # a profile of a run with no workers: the loop loads its batches traced, as before
    alone = step_budget({**_profile(0.9, 0, 1), "run.profile_workers_traced": False})
    assert alone is not None and alone.pipeline_overhead == PROFILED_WORKERS_OVERHEAD


def test_a_trace_keeps_its_one_assumed_cost_for_the_loop_and_the_pipeline() -> None:
    facts = {
        "trace.dataloader_share": 0.9,
        "trace.kernel_share": 0.08,
        "trace.step_s": 0.1,
        "trace.steps": 3,
        "script.batch_size": 32,
        "alloc.workers": 1,
        "alloc.cpus_per_task": 1,
        "job.ranks_per_task": 1,
        "job.gpus": 1,
    }
    prediction, _ = predict(facts, _plan(2, 3))
    assert prediction is not None and prediction.samples_per_s is not None
    rate = prediction.samples_per_s
    assert rate.high == pytest.approx(rate.expected / (1 - PROFILE_SPREAD) / (1 - 0.10))


def test_the_measured_step_spans_as_the_prediction_does() -> None:
    """The time to result's measured step (finish.py): the same spread floor and, for a
    profile whose workers set the step, the same fast side as the prediction's."""
    profiled = _profile(0.9, 1, 1, **{"job.gpus": 1})
    span = measured_step(step_model(profiled), as_view(profiled))
    assert span is not None
    assert span.low == pytest.approx(0.1 * (1 - PROFILE_SPREAD) * (1 - PROFILED_WORKERS_OVERHEAD))
    probe = _probe(0.0)
    alone = {k: v for k, v in probe.items() if k != "alloc.workers"}  # no budget: the probe's
    for facts in (probe, alone):
        span = measured_step(step_model(facts), as_view(facts))
        assert span is not None and span.high == pytest.approx(0.024 * (1 + MIN_SPREAD))
