"""The speedup's range (issue 31 §3, §5): a ratio of two runs, each within the measured
spread; over the job as it runs without the profiler (the measured run gains from losing it
too); and on its slow side the main process's own time taking its share of a core at the new
rate, where the cores are few."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuneadvisor.advisor.forecast import predict
from tuneadvisor.advisor.plan import Change, Plan
from tuneadvisor.advisor.steptime import CORES_TOGETHER, step_budget


def _plan(workers: int, cores: int) -> Plan:
    return Plan(
        sbatch={"cpus-per-task": Change(cores, ("x",))},
        script={"num_workers": Change(workers, ("x",))},
    )


def _probe(stall: float, step_s: float = 0.137, spread: float = 0.05) -> dict[str, object]:
    """A probe of a one-worker, one-core loop (no instrument of its own)."""
    return {
        "probe.loop_step_s": step_s,
        "probe.ceiling_step_s": step_s * (1 - stall),
        "probe.stall_share": stall,
        "probe.loop_step_spread": spread,
        "probe.batch_size": 32,
        "alloc.workers": 1,
        "alloc.cpus_per_task": 1,
        "job.ranks_per_task": 1,
        "job.gpus": 1,
    }


def _profile(wait: float, step_s: float = 0.5) -> dict[str, object]:
    """A GPU job's profile of a one-worker, one-core run: line_profiler in the loop and in
    the workers it forked."""
    return {
        "profile.loader_share": wait,
        "profile.compute_share": 1 - wait,
        "profile.step_s": step_s,
        "profile.steps": 100,
        "script.batch_size": 32,
        "alloc.workers": 1,
        "alloc.cpus_per_task": 1,
        "job.ranks_per_task": 1,
        "job.gpus": 1,
    }


def test_the_speedup_spans_two_runs_spread_the_samples_one() -> None:
    """The samples/s range is one new run's (within the spread); the speedup compares it with
    a second run, the measured one, within the same spread: hypot(s, s) wide, not s."""
    facts = _probe(0.5, step_s=0.05)
    budget = step_budget(facts)
    prediction, why = predict(facts, _plan(2, 8))
    assert budget is not None and prediction is not None, why
    assert budget.slower_at(2, 8) == 1.0  # cores to spare: the main's share never binds
    together = budget.slower_together(2, 8)  # more cores busy than measured: its own factor
    samples, speedup = prediction.samples_per_s, prediction.speedup
    assert samples is not None
    assert math.isclose(samples.expected / samples.low, (1 + budget.spread) * together)
    pair = math.hypot(budget.spread, budget.spread)
    assert math.isclose(speedup.expected / speedup.low, (1 + pair) * together)
    assert any(b.startswith("the speedup's spread 7%: two runs'") for b in prediction.basis)
    # what the speedup is over: the measured run's setting, for a check beside it (compare)
    assert prediction.baseline == {"num_workers": 1, "cpus_per_task": 1}


def test_the_main_process_busier_at_a_faster_step_slows_the_slow_side_where_cores_are_few() -> None:
    """A probe whose loop is 15 % of the step: with 2 workers on 2 cores the step nearly
    halves, so the main process's own time takes ~0.3 of a core at the new rate, not the
    0.15 measured: the slow side counts it. With cores to spare, nothing changes."""
    facts = _probe(0.85)
    budget = step_budget(facts)
    assert budget is not None
    tight = budget.slower_at(2, 2)
    assert tight > 1.0
    assert budget.slower_at(2, 8) == 1.0
    # the settled share is what the basis says: more than measured, at most a core
    assert budget.main_cores() < budget.main_share_at(2, 2) <= 1.0
    prediction, why = predict(facts, _plan(2, 2))
    assert prediction is not None, why
    assert any("the main process's own time all CPU" in b for b in prediction.basis)
    roomy, _ = predict(facts, _plan(2, 8))
    assert roomy is not None
    assert not any("the main process's own time all CPU" in b for b in roomy.basis)
    assert prediction.speedup.low < roomy.speedup.low


def test_a_profiles_speedup_is_over_the_job_without_line_profiler() -> None:
    """The measured run's workers ran traced (forked inside the profiled function): without
    the profiler the job itself makes its batches up to 30 % faster, so a setting whose step
    the loop sets (it gains only the loop's 15 %) buys less over the job as it runs than over
    the profiled run. A probe has no instrument: its range is the spread's alone."""
    facts = _profile(0.8)
    budget = step_budget(facts)
    assert budget is not None
    assert budget.faster_measured() > 1.0
    prediction, why = predict(facts, _plan(7, 8))
    assert prediction is not None, why
    gain = budget.faster_unprofiled(7.0) / budget.faster_measured()
    assert gain < 1.0
    pair = math.hypot(budget.spread, budget.spread)
    speedup = prediction.speedup
    slower = budget.slower_at(7, 8) * budget.slower_together(7, 8)
    assert math.isclose(speedup.low, speedup.expected / (1 + pair) / slower * gain)
    assert math.isclose(speedup.high, speedup.expected * (1 + pair))
    assert any("without the profiler: the measured run may gain" in b for b in prediction.basis)
    probe, _ = predict(_probe(0.8, step_s=0.5), _plan(7, 8))
    assert probe is not None
    assert not any("without the profiler" in b for b in probe.basis)


@settings(max_examples=200)
@given(
    wait=st.floats(0.0, 0.98),
    step_s=st.floats(1e-3, 5.0),
    spread=st.floats(0.0, 0.5),
    workers=st.integers(0, 16),
    cores=st.integers(1, 32),
    kind=st.sampled_from(["probe", "profile"]),
)
def test_the_speedup_span_is_never_narrower_than_two_runs_spread(
    wait: float, step_s: float, spread: float, workers: int, cores: int, kind: str
) -> None:
    """Whatever the evidence: low <= expected <= high, the slow side never faster than
    expected, and the range at least as wide as two runs' spread on each side."""
    facts = _probe(wait, step_s, spread) if kind == "probe" else _profile(wait, step_s)
    budget = step_budget(facts)
    prediction, why = predict(facts, _plan(workers, cores))
    if prediction is None or budget is None:
        assert why, "no prediction and no line saying why"
        return
    assert budget.slower_at(workers, cores) >= 1.0
    speedup = prediction.speedup
    pair = math.hypot(budget.spread, budget.spread)
    assert speedup.low <= speedup.expected <= speedup.high
    assert speedup.expected / max(speedup.low, 1e-12) >= (1 + pair) * (1 - 1e-9)
    assert speedup.high / speedup.expected >= (1 + pair) * (1 - 1e-9)


def test_more_cores_busy_than_measured_may_each_run_slower_on_the_slow_side() -> None:
    """A one-core run cannot measure how cores busy together run (all-core turbo, a VM's
    shared host: 2 busy vCPUs of the test VM made 1.30-2.08x one): where the setting keeps
    more workers busy than the measured run, the slow side takes each worker's batch up to
    CORES_TOGETHER slower; the expected value is the model's; the measured setting gets none."""
    facts = _probe(0.85)
    budget = step_budget(facts)
    assert budget is not None
    pipeline_bound = budget.slower_together(2, 2)
    assert pipeline_bound == pytest.approx(1 / (1 - CORES_TOGETHER), rel=0.02)
    assert budget.slower_together(1, 1) == 1.0  # the measured setting
    assert budget.slower_together(0, 1) == 1.0
    # a setting whose workers cover the loop with room: less of it reaches the step
    roomy = step_budget(_probe(0.5, step_s=0.05))
    assert roomy is not None and 1.0 <= roomy.slower_together(8, 9) < pipeline_bound
    prediction, why = predict(facts, _plan(2, 2))
    assert prediction is not None, why
    assert any("cores busy together each run slower" in b for b in prediction.basis)
    pair = math.hypot(budget.spread, budget.spread)
    expected = prediction.speedup.expected
    assert prediction.speedup.low == pytest.approx(
        expected / (1 + pair) / (budget.slower_at(2, 2) * pipeline_bound)
    )
    assert expected == pytest.approx(1 / budget.step_at(2, 2))
