"""Issue 30: torch 1.12 traces read for their steps, step times and kernels, and the
iterations of a trace that marks none (no ProfilerStep#N, no optimizer step) inferred from
the block of top-level host ops its loop repeats. The real traces are the ones in
tests/fixtures/realworld/traces (MANIFEST.md), here also with their step marks taken out:
what the reader infers must be what the marks said."""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.unit.test_trace_facts import fired
from tuneadvisor.profile.trace import pattern
from tuneadvisor.profile.trace.facts import trace_facts
from tuneadvisor.profile.trace.reader import read_rank, read_trace_set

REAL = Path(__file__).parents[1] / "fixtures" / "realworld" / "traces"
MARKS = ("ProfilerStep#", "Optimizer.step#")


def _load(name: str) -> dict[str, Any]:
    with gzip.open(REAL / name, "rt") as f:
        doc: dict[str, Any] = json.load(f)
    return doc


def _unmarked(name: str, tmp: Path) -> str:
    """The real trace with every ProfilerStep# and Optimizer.step# event taken out: what
    ``export_chrome_trace`` around a loop without ``prof.step()`` or torch.optim writes."""
    doc = _load(name)
    events = [e for e in doc["traceEvents"] if not str(e.get("name", "")).startswith(MARKS)]
    out = tmp / f"unmarked-{name.removesuffix('.gz')}"
    out.write_text(json.dumps({**doc, "traceEvents": events}))
    return str(out)


# ------------------------------------------------------------ torch 1.10 (2022-01, CPU)


def test_a_torch_1_10_cpu_forward_names_its_gpu_and_says_it_ran_none() -> None:
    """torch 1.10 listed the machine's GPU in deviceProperties (a GTX 1060 3GB, compute 6)
    though only CPU activity was profiled: the device is named, and the report says there
    are no device events and no steps (one forward under record_function, its top op)."""
    rank = read_rank(str(REAL / "torch110-cpu-resnet18-forward.json.gz"))
    assert (rank.devices[0].name, rank.devices[0].compute_major) == (
        "NVIDIA GeForce GTX 1060 3GB",
        6,
    )
    assert not rank.has_device and any("no device events" in n for n in rank.notes)
    assert rank.step_source == "whole" and any("no steps found" in n for n in rank.notes)
    assert rank.top_ops[0].name == "model_inference"  # record_function, written as a cpu_op


# ------------------------------------------------------------------ torch 1.12 (2022-08)

DLRM = {  # file: (rank, world size, device name, compute major)
    "torch112-a100-dlrm-rank3of8.json.gz": (3, 8, "NVIDIA A100-PG509-200", 8),
    "torch112-v100-dlrm-rank1of2.json.gz": (1, 2, "Tesla V100-SXM2-16GB", 7),
}


@pytest.mark.parametrize("name", sorted(DLRM))
def test_torch_1_12_traces_give_their_ranks_steps_and_kernels(name: str) -> None:
    """Counted from the JSON, not by the reader: the ProfilerStep# events (each step starts
    at its mark and lasts at least as long: it runs on to its last kernel), the kernels."""
    rank_no, world, device, major = DLRM[name]
    doc = _load(name)
    marks = sorted((e["ts"], e["dur"]) for e in doc["traceEvents"]
                   if str(e.get("name", "")).startswith("ProfilerStep#")
                   and e.get("cat") == "user_annotation")  # fmt: skip
    kernels = sum(e.get("cat") == "kernel" for e in doc["traceEvents"])
    rank = read_trace_set([str(REAL / name)]).ranks[0]
    assert (rank.rank, rank.world_size, rank.step_source) == (rank_no, world, "profiler")
    assert (rank.devices[0].name, rank.devices[0].compute_major) == (device, major)
    assert len(rank.steps) == len(marks) == 2 and rank.kernels == kernels
    assert rank.steps[0].start_us == marks[0][0]
    for step, (ts, dur) in zip(rank.steps, marks, strict=True):  # none starts before its mark
        assert step.start_us >= ts and step.start_us + step.duration_us >= ts + dur
    assert not rank.notes  # nothing it could not read


def test_torch_1_12_dlrm_ranks_show_their_exposed_nccl_and_fp32_volta() -> None:
    """The A100 rank runs tf32 tensor-core kernels; the V100 one only FP32 sgemm (no tensor
    cores); both spend a tenth of the step in NCCL no kernel hides."""
    a100 = read_trace_set([str(REAL / "torch112-a100-dlrm-rank3of8.json.gz")])
    v100 = read_trace_set([str(REAL / "torch112-v100-dlrm-rank1of2.json.gz")])
    assert a100.ranks[0].top_kernels[0].name.startswith("ncclKernel_SendRecv")
    assert a100.ranks[0].tensor_core_kernels > 0 and v100.ranks[0].tensor_core_kernels == 0
    a_fired, v_fired = fired(trace_facts(a100)), fired(trace_facts(v100))
    assert "no-tensor-cores" in v_fired and "no-tensor-cores" not in a_fired
    assert "communication-exposed" in a_fired and "communication-exposed" in v_fired


# -------------------------------------------------- iterations from the repeated pattern

# real traces, their marks taken out: (file, exact: every iteration the same ops)
SLOW = pytest.mark.slow  # ~25,000-35,000 events, read twice: a few seconds each
UNMARKED = [
    ("h200-pinned.pt.trace.json.gz", True),
    ("cpu-pageable-sync.pt.trace.json.gz", True),
    pytest.param("torch19-v100-resnet50-workers0.pt.trace.json.gz", True, marks=SLOW),
    # DLRM: its iterations differ by a few ops
    pytest.param("torch112-a100-dlrm-rank3of8.json.gz", False, marks=SLOW),
    pytest.param("torch112-v100-dlrm-rank1of2.json.gz", False, marks=SLOW),
    ("torch20-rtx2080ti-resnet-no-profiler-steps.json.gz", True),  # no mark but the optimizer
]


@pytest.mark.parametrize(("name", "exact"), UNMARKED)
def test_unmarked_real_traces_give_the_iterations_their_marks_gave(
    name: str, exact: bool, tmp_path: Path
) -> None:
    marked_set = read_trace_set([str(REAL / name)])
    inferred_set = read_trace_set([_unmarked(name, tmp_path)])
    marked, inferred = marked_set.ranks[0], inferred_set.ranks[0]
    assert inferred.step_source == "pattern" and marked.step_source in ("profiler", "optimizer")
    # torch.optim's marks bound one iteration fewer than there are (before the first: set-up);
    # the pattern finds that one too where it is a whole copy of the others
    extra = 1 if marked.step_source == "optimizer" else 0
    assert len(marked.steps) <= len(inferred.steps) <= len(marked.steps) + extra
    # an iteration lasts what the marks said, within a tenth
    typical = statistics.median(s.duration_us for s in marked.steps)
    found = statistics.median(s.duration_us for s in inferred.steps)
    assert abs(found - typical) <= 0.1 * typical
    # said, and how
    note = next(n for n in inferred.notes if "iterations inferred" in n)
    assert f"{len(inferred.steps)} iterations inferred" in note and "top-level ops" in note
    assert ("the same block" in note) is exact
    # and judged per step as the marked trace is: the same findings
    assert fired(trace_facts(inferred_set)) == fired(trace_facts(marked_set))


FORWARDS = {  # file: (copies of the repeated block, its top-level ops)
    "torch113-cpu-resnet18-forward.pt.trace.json.gz": (3, 21),  # one forward: its stages
    "torch113-cpu-resnet18-10-forwards-no-steps.json.gz": (10, 89),  # ten forwards
}


@pytest.mark.parametrize("name", sorted(FORWARDS))
def test_repeated_forwards_are_said_and_not_taken_as_iterations(name: str) -> None:
    """ResNet-18 on a CPU (torch 1.13.1), no ProfilerStep#: one forward repeats its stages'
    block three times; ten forwards (``prof.step()`` without a schedule writes no mark)
    repeat the whole model ten times. Neither fetches a batch or runs backward, and the two
    look alike: both are one span, and the note says what repeated and why it is no step."""
    copies, block = FORWARDS[name]
    ts = read_trace_set([str(REAL / name)])
    rank = ts.ranks[0]
    assert rank.step_source == "whole" and len(rank.steps) == 1
    said = next(n for n in rank.notes if "not taken as iterations" in n)
    assert f"the same block of {block} top-level ops" in said and f"{copies} copies" in said
    assert not rank.has_device and rank.peak_device_memory_bytes is None
    assert "trace.host_syncs_per_step" not in trace_facts(ts)


def test_a_forward_without_repeats_says_no_steps() -> None:
    rank = read_rank(str(REAL / "torch113-cpu-resnet34-forward.pt.trace.json.gz"))
    assert rank.step_source == "whole" and any("no steps found" in n for n in rank.notes)
    assert not any("not taken as iterations" in n for n in rank.notes)


def test_one_iteration_without_its_mark_is_one_span_not_a_pattern(tmp_path: Path) -> None:
    """The MI250 trace holds one whole iteration: its input and its target are each made by
    aten::randn then aten::to, twice in a row, which is no loop: read as one span."""
    rank = read_rank(_unmarked("hta-mi250-rocm6.2.json.gz", tmp_path))
    assert rank.step_source == "whole" and any("no steps found" in n for n in rank.notes)


BACKWARD = "autograd::engine::evaluate_function: MulBackward0"
FETCH = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _loop(
    block: list[str], copies: int, prefix: list[str], gap: float, backward: bool = True
) -> list[dict[str, Any]]:
    """``prefix`` (set-up) then ``copies`` of ``block``, each op 5 µs then ``gap`` µs of
    Python, on the main thread (pid = tid), each op launching one kernel; with
    ``backward``, each copy's first op is also when autograd's thread runs a backward op."""
    events: list[dict[str, Any]] = []
    t = 1000.0
    for i, name in enumerate([*prefix, *block * copies]):
        corr = len(events) + 1
        events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 7, "tid": 7,
                       "ts": t, "dur": 5.0})  # fmt: skip
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                       "pid": 7, "tid": 7, "ts": t + 1, "dur": 2.0,
                       "args": {"correlation": corr}})  # fmt: skip
        events.append({"ph": "X", "cat": "kernel", "name": "k_" + name, "pid": 0, "tid": 7,
                       "ts": t + 3, "dur": 1.0, "args": {"correlation": corr}})  # fmt: skip
        if backward and i >= len(prefix) and (i - len(prefix)) % len(block) == 0:
            events.append({"ph": "X", "cat": "cpu_op", "name": BACKWARD, "pid": 7, "tid": 9,
                           "ts": t + 1, "dur": 2.0})  # fmt: skip
        t += 5.0 + gap
    return events


def _primitive(block: list[str]) -> bool:
    n = len(block)
    return all(n % p or block != block[:p] * (n // p) for p in range(1, n))


@given(
    st.lists(st.sampled_from("abcdef"), min_size=2, max_size=24),
    st.integers(2, 12),
    st.integers(0, 5),
    st.floats(0.0, 50.0),
)
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_n_copies_of_a_block_are_n_steps(
    tmp_path_factory: pytest.TempPathFactory, names: list[str], copies: int, setup: int,
    gap: float,
) -> None:  # fmt: skip
    """Any block that is not itself a repeat, in which some op occurs at most
    MAX_GAP_K times, repeated N times after a set-up of other ops (fewer ops than the
    copies hold: else what repeats is not the bulk of the trace), each copy with a backward
    pass, is N iterations, each lasting one block; without the backward passes (a model's
    repeated layers) it is none."""
    block = [f"aten::{x}" for x in names]
    assume(_primitive(block) and min(block.count(x) for x in block) <= pattern.MAX_GAP_K)
    assume(setup <= pattern.MIN_COVERED * len(block) * copies)
    prefix = [f"setup::{i}" for i in range(setup)]
    doc = {"schemaVersion": 1, "traceEvents": _loop(block, copies, prefix, gap)}
    path = tmp_path_factory.mktemp("loop") / "rank0.json"
    path.write_text(json.dumps(doc))
    rank = read_rank(str(path))
    assert rank.step_source == "pattern" and len(rank.steps) == copies
    period = len(block) * (5.0 + gap)
    for step in rank.steps[:-1]:  # each from its first op to the next copy's first op
        assert step.duration_us == pytest.approx(period)
    assert rank.steps[-1].duration_us == pytest.approx(period - gap)  # the last: to its end
    assert rank.steps[0].start_us == pytest.approx(1000.0 + setup * (5.0 + gap))
    layers = {"schemaVersion": 1, "traceEvents": _loop(block, copies, prefix, gap, False)}
    path.write_text(json.dumps(layers))
    bare = read_rank(str(path))
    assert bare.step_source == "whole" and any("not taken as iterations" in n for n in bare.notes)


def test_the_search_is_bounded_and_says_what_it_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: past MAX_TOP_OPS top-level ops the rest is not looked at (and said); past
    MAX_HOST_OPS host ops on the thread, no pattern is looked for at all."""
    doc = {"schemaVersion": 1, "traceEvents": _loop([FETCH, "aten::b", "aten::c"], 40, [], 1)}
    path = tmp_path / "rank0.json"
    path.write_text(json.dumps(doc))
    monkeypatch.setattr(pattern, "MAX_TOP_OPS", 30)
    cut = read_rank(str(path))
    assert cut.step_source == "pattern" and len(cut.steps) == 10
    assert any("(its first 30 looked at)" in n for n in cut.notes)
    monkeypatch.setattr(pattern, "MAX_HOST_OPS", 100)
    assert read_rank(str(path)).step_source == "whole"
