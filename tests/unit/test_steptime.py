"""The step-time model (advisor/steptime.py), its sizing (sizing.py) and the plan's
prediction (forecast.py), from recorded files and at each cap."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import REPO
from tuneadvisor.advisor.engine import evaluate
from tuneadvisor.advisor.forecast import STORAGE, predict
from tuneadvisor.advisor.measured_allocation import allocation_facts
from tuneadvisor.advisor.plan import Change, Plan
from tuneadvisor.advisor.prediction import Prediction, Span
from tuneadvisor.advisor.sizing import MARGIN, model_facts, size
from tuneadvisor.advisor.steptime import MIN_SPREAD, RECEIVE_S, step_budget
from tuneadvisor.cli import main
from tuneadvisor.present.prediction_text import headline
from tuneadvisor.workspace.read_measured import read_metrics
from tuneadvisor.workspace.rule_files import default_rules_dir, load_rules

EXAMPLE = ["examples/mnist/24752610.lprof", "--job", "examples/mnist/mnist.sbatch"]


@pytest.fixture
def example(example_report: Any) -> Any:
    return example_report


def test_profile_gives_steps_and_a_sized_plan(example: Any) -> None:
    """The example's profile: 120 steps (--max-steps 120), one worker kept the loop
    waiting most of the step: enough workers to cover the rest with the margin, a core each
    and one for the main process, and a prediction of the plan's setting."""
    facts = example["advice"]["facts"]
    assert facts["profile.steps"] == 120
    assert facts["profile.step_s"] == pytest.approx(facts["profile.total_s"] / 120)
    budget = step_budget(facts)
    assert budget is not None and budget.source == "profile" and budget.workers == 1
    busy = 1 - facts["profile.loader_share"]
    workers = facts["model.workers"]
    # the loop's floor with workers: its own time and receiving a batch (assumed); the
    # sizing covers its own time (the assumed receiving would only lower the count)
    receive = min(RECEIVE_S / facts["profile.step_s"], 1 - busy)
    assert budget.receive == pytest.approx(receive) and budget.busy == pytest.approx(busy)
    needed = budget.worker_steps * (1 + MARGIN) / busy
    assert (workers - 1) < needed <= workers  # and is the smallest that does
    assert facts["model.cores_per_task"] == workers + 1
    prediction = example["advice"]["prediction"]
    assert prediction["setting"] == {"num_workers": workers, "cpus_per_task": workers + 1}
    assert prediction["speedup"]["expected"] > 1
    step = prediction["step_s"]
    assert step["low"] <= step["expected"] <= step["high"] < facts["profile.step_s"]
    rate = prediction["samples_per_s"]["expected"]
    assert rate == pytest.approx(facts["script.batch_size"] / step["expected"])
    assert any("measured, the profile" in b for b in prediction["basis"])
    assert any("estimated" in b for b in prediction["basis"])


def test_recording_gives_a_budget_but_no_step_time() -> None:
    """A watch recording (2 workers, GPU busy about half the time): the shares are
    estimates from the GPU's busy share; without a step time no prediction, and the line
    says which evidence would give one."""
    facts: dict[str, object] = dict(
        read_metrics([str(REPO / "tests/fixtures/watch/replay-a100.jsonl")]).facts()  # type: ignore[union-attr]
    )
    facts.update({"alloc.workers": 2, "alloc.cpus_per_task": 4, "job.ranks_per_task": 1})
    budget = step_budget(facts)
    assert budget is not None and budget.source == "recording" and budget.step_s is None
    assert budget.wait == pytest.approx(1 - float(facts["gpu.util.mean"]) / 100)  # type: ignore[arg-type]
    assert all("estimated" in b or "assumed" in b for b in budget.basis)
    sized = model_facts(facts)
    assert sized["model.workers"] > 2  # type: ignore[operator]
    plan = Plan(script={"num_workers": Change(sized["model.workers"], ("x",))})
    prediction, why = predict(facts, plan)
    assert prediction is None and why is not None and "profile" in why


def _facts(share: float, workers: int, cores: int, **more: object) -> dict[str, object]:
    return {
        "profile.loader_share": share,
        "profile.compute_share": 1 - share,
        "profile.step_s": 0.1,
        "profile.steps": 100,
        "alloc.workers": workers,
        "alloc.cpus_per_task": cores,
        "job.ranks_per_task": 1,
        **more,
    }


@pytest.mark.parametrize(
    ("caps", "by"),
    [
        ({"node.cores": 6}, "the node's cores"),
        ({"node.cores": 64, "node.max_cores_per_gpu": 4, "job.gpus": 1}, "cores per GPU"),
        ({"node.cores": 32, "node.gpus": 8, "job.gpus": 1}, "fair share"),
    ],
)
def test_each_cap_binds_and_says_its_ceiling(caps: dict[str, object], by: str) -> None:
    # a 100 ms step, 10 ms of it the loop's own: wants ceil(1.2 / 0.1) = 12 workers, 13 cores
    facts = _facts(0.9, 1, 1, **caps)
    want = 12
    budget = step_budget(facts)
    assert budget is not None
    sizing = size(budget, facts)
    assert sizing.wanted_workers == want and sizing.cap is not None and by in sizing.cap.by
    assert sizing.cores_per_task == sizing.cap.cores < want + 1
    assert sizing.workers <= sizing.cores_per_task  # never more workers than cores
    plan = Plan(
        sbatch={"cpus-per-task": Change(sizing.cores_per_task, ("x",))},
        script={"num_workers": Change(sizing.workers, ("x",))},
    )
    prediction, _ = predict(facts, plan)
    assert prediction is not None and prediction.ceiling is not None
    assert by in prediction.ceiling and "persistent_workers" in prediction.ceiling


def test_a_recording_of_sleeping_workers_is_storage_bound() -> None:
    """A real watch recording (tests/fixtures/watch/make_replay_recording.py): four workers
    that mostly sleep, as workers waiting for files do, the main process idle, the GPUs half
    idle. The model keeps the setting, and the live finding says why."""
    recorded = read_metrics([str(REPO / "tests/fixtures/watch/storage-a100.jsonl")])
    assert recorded is not None
    facts: dict[str, object] = dict(recorded.facts())
    facts.update(allocation_facts(facts)[0])  # as watch's live facts derive them
    budget = step_budget(facts)
    assert budget is not None and budget.source == "recording" and budget.workers == 4
    assert budget.storage_bound
    sized = model_facts(facts)
    assert sized["model.storage_bound"] is True and sized["model.workers"] == 4
    rules = load_rules([default_rules_dir()])
    found = {f.id for f in evaluate(rules, {**facts, **sized}).findings}
    assert "input-waits-on-storage" in found


def test_storage_bound_keeps_the_setting_and_says_why() -> None:
    """Four workers, nearly idle, while the GPU and the main process wait: storage."""
    facts = _facts(
        0.6, 4, 5,
        **{"gpu.util.mean": 20.0, "host.proc.main_cpu_pct.mean": 30.0,
           "host.proc.cpu_cores.mean": 0.7, "host.proc.workers.max": 4},
    )  # fmt: skip
    sized = model_facts(facts)
    assert sized == {"model.storage_bound": True, "model.workers": 4, "model.cores_per_task": 5}
    prediction, why = predict(facts, Plan(script={"num_workers": Change(8, ("x",))}))
    assert prediction is None and why == STORAGE and "node-local" in why
    busy = dict(facts, **{"host.proc.cpu_cores.mean": 4.2})  # the same, workers busy: CPU
    assert model_facts(busy)["model.storage_bound"] is False


def test_probe_count_replaces_the_estimate() -> None:
    facts = _facts(0.5, 1, 2)
    facts.update({"probe.loop_step_s": 0.2, "probe.ceiling_step_s": 0.05,
                  "probe.loop_step_spread": 0.04, "probe.workers_for_95pct": 3,
                  "probe.batch_size": 128, "probe.test_mode": True})  # fmt: skip
    budget = step_budget(facts)
    # its loop's 4 % is taken at the floor every measured spread gets
    assert budget is not None and budget.source == "probe" and budget.spread == MIN_SPREAD
    assert any(b.startswith("spread 5%: measured, the probe's loop") for b in budget.basis)
    assert model_facts(facts)["model.workers"] == 3
    assert any("stand-in" in b for b in budget.basis)


def test_without_the_measured_workers_the_doubling_stays() -> None:
    facts = {"profile.loader_share": 0.845, "alloc.cpus_per_task": 1, "job.ranks_per_task": 1}
    assert step_budget(facts) is None
    assert model_facts(facts) == {
        "model.storage_bound": False, "model.workers": 4, "model.cores_per_task": 4,
    }  # fmt: skip


@given(
    share=st.floats(0.1, 0.99),
    workers=st.integers(0, 16),
    cores=st.integers(1, 32),
    node=st.integers(1, 128),
    ranks=st.integers(1, 4),
)
def test_prediction_of_the_sizing(
    share: float, workers: int, cores: int, node: int, ranks: int
) -> None:
    """For any loader-bound profile: the range holds its expected value, the speedup of
    adding workers is at least 1, under a cap no other count within it is predicted faster,
    and the sizing never gives a rank more workers than its cores (or than the node's,
    unless the run already had more)."""
    facts = _facts(share, workers, cores, **{"node.cores": node, "job.ranks_per_task": ranks})
    budget = step_budget(facts)
    assert budget is not None
    sizing = size(budget, facts)
    assert sizing.cores_per_task <= max(node, cores)
    assert sizing.workers <= max(1, sizing.cores_per_task // ranks)
    plan = Plan(
        sbatch={"cpus-per-task": Change(sizing.cores_per_task, ("x",))},
        script={"num_workers": Change(sizing.workers, ("x",))},
    )
    prediction, _ = predict(facts, plan)
    assert prediction is not None
    for span in (prediction.step_s, prediction.speedup):
        assert span.low <= span.expected <= span.high
    if sizing.workers >= workers:  # adds workers on at least the measured cores
        assert prediction.speedup.expected >= 1 - 1e-9
        assert prediction.step_s.expected <= 0.1 + 1e-12
    if sizing.cap is not None:  # the model's best within the cap, not the request less cores
        chosen = budget.step_at(sizing.workers, sizing.cores_per_task, ranks)
        for other in range(1, max(1, sizing.cores_per_task // ranks) + 1):
            assert chosen <= budget.step_at(other, sizing.cores_per_task, ranks) + 1e-9
    assert (prediction, _) == predict(facts, plan)  # the same evidence, the same prediction


def test_workers_sharing_few_cores_count_as_the_cores_they_had() -> None:
    """Four workers and the main process on two cores, the loop waiting half the step: the
    workers were 1.5 cores' worth less the main process's receiving (1 ms of the 100 ms
    step, assumed), so a worker on its own core takes 1.49 steps a batch, and
    1.49 x 1.2 / 0.5 = 3.6: four workers (not the ten that four whole workers would ask)."""
    facts = _facts(0.5, 4, 2)
    budget = step_budget(facts)
    assert budget is not None and budget.worker_steps == pytest.approx(1.5 - RECEIVE_S / 0.1)
    sizing = size(budget, facts)
    assert (sizing.workers, sizing.cores_per_task) == (4, 5)


def test_a_plan_that_adds_no_workers_or_cores_predicts_nothing_and_says_nothing() -> None:
    facts = _facts(0.5, 1, 2)
    assert predict(facts, Plan()) == (None, None)
    assert predict(facts, Plan(sbatch={"mem": Change("8G", ("x",))})) == (None, None)
    # a change without a budget says which evidence would give one
    plan = Plan(sbatch={"cpus-per-task": Change(4, ("x",))})
    prediction, why = predict({"alloc.cpus_per_task": 2}, plan)
    assert prediction is None and why is not None and "profile" in why


def test_the_headline_reads_as_the_issue_asks() -> None:
    prediction = Prediction(
        setting={"num_workers": 15, "cpus_per_task": 16},
        step_s=Span(0.019, 0.021, 0.022),
        speedup=Span(13.2, 14.1, 15.4),
        samples_per_s=Span(2903.0, 3100.0, 3377.0),
    )
    assert headline(prediction) == (
        "expected 13.20-15.40x over the measured run (step 19-22 ms; 2,903-3,377 samples/s "
        "if the node performs as in the measured run) with num_workers=15, --cpus-per-task=16"
    )
    without_batch = replace(prediction, samples_per_s=None, step_s=Span(1.5, 2.0, 2.5))
    assert headline(without_batch).startswith(
        "expected 13.20-15.40x over the measured run (step 1.50-2.50 s) with"
    )
    # where the node was assumed, the prediction's own line says so
    assumed = replace(prediction, assumed_node="for an assumed 64-core node (no site file)")
    assert headline(assumed).endswith(
        "--cpus-per-task=16, for an assumed 64-core node (no site file)"
    )


def _trace_facts(share: float, workers: int, cores: int) -> dict[str, object]:
    return {
        "trace.dataloader_share": share,
        "trace.kernel_share": (1 - share) * 0.8,
        "trace.memcpy_share": (1 - share) * 0.1,
        "trace.step_s": 0.12,
        "trace.steps": 3,
        "alloc.workers": workers,
        "alloc.cpus_per_task": cores,
        "job.ranks_per_task": 1,
    }


def test_a_trace_alone_sizes_the_pipeline_like_a_profile() -> None:
    """A torch.profiler trace's DataLoader share is the wait: the same model sizes workers and
    cores from it, saying the trace is where the figures came from."""
    facts = _trace_facts(0.6, 1, 2)
    budget = step_budget(facts)
    assert budget is not None and budget.source == "trace"
    assert budget.wait == pytest.approx(0.6) and budget.step_s == pytest.approx(0.12)
    assert any("torch.profiler trace" in b for b in budget.basis)
    sized = model_facts(facts)
    workers, cores = sized["model.workers"], sized["model.cores_per_task"]
    assert isinstance(workers, int) and isinstance(cores, int)
    assert workers > 1 and cores > 2
    # the same shares from a profile size the same: one model, two kinds of evidence
    profile = _facts(0.6, 1, 2, **{"profile.transfer_share": 0.04, "profile.compute_share": 0.32})
    assert model_facts(profile)["model.workers"] == sized["model.workers"]


def test_a_profile_beside_the_trace_stays_the_first_source() -> None:
    facts = {**_trace_facts(0.1, 1, 2), **_facts(0.6, 1, 2)}
    budget = step_budget(facts)
    assert budget is not None and budget.source == "profile"


def test_a_trace_without_the_measured_workers_doubles() -> None:
    facts = {"trace.dataloader_share": 0.7, "alloc.cpus_per_task": 2, "job.ranks_per_task": 1}
    assert step_budget(facts) is None
    assert model_facts(facts)["model.cores_per_task"] == 4


@given(share=st.floats(0.06, 0.99), workers=st.integers(0, 16), cores=st.integers(1, 32))
def test_a_trace_sizing_never_shrinks_the_measured_cores(
    share: float, workers: int, cores: int
) -> None:
    sized = model_facts(_trace_facts(share, workers, cores))
    if not sized.get("model.storage_bound"):
        got_cores, got_workers = sized["model.cores_per_task"], sized["model.workers"]
        assert isinstance(got_cores, int) and isinstance(got_workers, int)
        assert got_cores >= cores and got_workers >= 1


def test_under_a_cap_the_model_takes_its_best_setting_within_it() -> None:
    """Issue 31: a loop waiting 20 % of its step, one worker on one core, a 2-core node: the
    model's best within the cap is 2 workers (1.2x), not the rule's request less the cores
    taken away (1 worker, which it predicts at 1.00x)."""
    facts = _facts(0.2, 1, 1, **{"node.cores": 2})
    budget = step_budget(facts)
    assert budget is not None
    sizing = size(budget, facts)
    assert sizing.cap is not None and (sizing.workers, sizing.cores_per_task) == (2, 2)
    assert budget.step_at(2, 2) < budget.step_at(1, 2)


def test_a_change_that_buys_nothing_is_not_made(example_on: Any) -> None:
    """On a 1-core node the example's one worker on one core is already the model's best:
    no workers or cores change, and the line says what the model predicted instead."""
    advice = example_on(1)["advice"]
    assert "num_workers" not in advice["plan"]["script"]
    assert "cpus-per-task" not in advice["plan"]["sbatch"]
    assert advice["prediction"] is None
    assert "1.00x" in advice["no_prediction"] and "no change" in advice["no_prediction"]


@pytest.fixture
def example_on(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> Any:
    """The example's JSON report with a site file of ``cores`` cores a node."""
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(REPO / "tests" / "no-such-config"))
    monkeypatch.delenv("TUNEADVISOR_RULES", raising=False)
    monkeypatch.delenv("TUNEADVISOR_SITE", raising=False)

    def report(cores: int) -> Any:
        site = tmp_path / f"site-{cores}.toml"
        site.write_text(f"[partitions.here]\ncores = {cores}\ndefault = true\n")
        assert main(["report", *EXAMPLE, "--site", str(site), "--format", "json"]) == 0
        return json.loads(capsys.readouterr().out)

    return report


def test_a_trace_beside_a_profile_gives_the_device_floor() -> None:
    """Issue 31 §3: host-side line times of a CUDA loop hold queued kernels in the wait; the
    trace's device time is the floor more workers cannot go under."""
    facts = _facts(0.8, 1, 2, **{"job.gpus": 1})
    host_only = step_budget(facts)
    assert host_only is not None and host_only.busy == pytest.approx(0.2)
    assert any("lower bound" in b for b in host_only.basis)
    traced = {
        **facts,
        "trace.kernel_share": 0.5,
        "trace.step_s": 0.1,
        "trace.dataloader_share": 0.4,
    }
    budget = step_budget(traced)
    assert budget is not None and budget.source == "profile"
    assert budget.busy == pytest.approx(0.5)  # the device's 50 ms of a 100 ms step
    assert not any("lower bound" in b for b in budget.basis)
    # the device floor and receiving a batch cap the speedup of any setting at 1 / 0.51
    assert 1 / budget.step_at(64, 65) == pytest.approx(1 / (0.5 + RECEIVE_S / 0.1))


def test_a_recording_beside_a_profile_gives_the_device_floor_from_its_utilization() -> None:
    """Issue 31 §3: without a trace, the watch recording's GPU utilization (the time a kernel
    ran) is the device's time a step; a trace, where there is one, is read first."""
    facts = _facts(0.8, 1, 2, **{"job.gpus": 1})
    recorded = {**facts, "gpu.count": 1, "gpu.util.mean": 45.0}
    budget = step_budget(recorded)
    assert budget is not None and budget.source == "profile"
    assert budget.busy == pytest.approx(0.45)
    assert any("GPU utilization" in b for b in budget.basis)
    assert not any("lower bound" in b for b in budget.basis)
    traced = {**recorded, "trace.kernel_share": 0.3, "trace.step_s": 0.1,
              "trace.dataloader_share": 0.4}  # fmt: skip
    first = step_budget(traced)
    assert first is not None and first.busy == pytest.approx(0.3)
    # an idle GPU (0 %) measured nothing of the step: the host's floor, said a lower bound
    idle = step_budget({**facts, "gpu.count": 1, "gpu.util.mean": 0.0})
    assert idle is not None and idle.busy == pytest.approx(0.2)
    assert any("lower bound" in b for b in idle.basis)


def test_the_pin_memory_thread_takes_from_the_workers() -> None:
    plain = step_budget(_facts(0.5, 2, 3))
    pinned = step_budget(_facts(0.5, 2, 3, **{"script.pin_memory": True}))
    assert plain is not None and pinned is not None
    assert pinned.usable(4, 3) < plain.usable(4, 3)
    assert any("pin-memory thread" in b and "assumed" in b for b in pinned.basis)


def test_the_prediction_names_its_assumptions() -> None:
    facts = _facts(0.5, 1, 2)
    plan = Plan(
        sbatch={"cpus-per-task": Change(4, ("x",))}, script={"num_workers": Change(3, ("x",))}
    )
    prediction, _ = predict(facts, plan)
    assert prediction is not None
    basis = " ".join(prediction.basis)
    for assumption in ("spread 15%: assumed", "line_profiler: assumed", "one core per worker: "
                       "assumed", "margin (assumed)"):  # fmt: skip
        assert assumption in basis, assumption


def test_fewer_cores_than_measured_predict_a_slowdown() -> None:
    """Never forbidden: a setting with fewer cores than the measured run is slower."""
    facts = _facts(0.6, 3, 4)
    plan = Plan(
        sbatch={"cpus-per-task": Change(1, ("x",))}, script={"num_workers": Change(1, ("x",))}
    )
    prediction, _ = predict(facts, plan)
    assert prediction is not None and prediction.speedup.expected < 1


def test_a_traces_own_steps_give_its_spread() -> None:
    measured = step_budget({**_trace_facts(0.6, 1, 2), "trace.step_spread": 0.2})
    assumed = step_budget(_trace_facts(0.6, 1, 2))
    assert measured is not None and assumed is not None
    assert measured.spread == pytest.approx(0.2) and assumed.spread == 0.15
    assert any(b.startswith("spread 20%: measured") for b in measured.basis)
    assert any(b.startswith("spread 15%: assumed") for b in assumed.basis)


def test_cpu_compute_with_threads_is_named_as_not_counted() -> None:
    """A CPU run (no GPU) whose compute is a real share of the step: intra-op threads compete
    with the workers; the basis says the model does not count them."""
    plan = Plan(
        sbatch={"cpus-per-task": Change(4, ("x",))}, script={"num_workers": Change(3, ("x",))}
    )
    cpu, _ = predict(_facts(0.5, 1, 2, **{"job.omp_threads_set": True}), plan)
    gpu, _ = predict(_facts(0.5, 1, 2, **{"job.gpus": 1}), plan)
    assert cpu is not None and gpu is not None
    assert any(b.startswith("intra-op threads: OMP_NUM_THREADS set") for b in cpu.basis)
    assert not any(b.startswith("intra-op threads") for b in gpu.basis)
