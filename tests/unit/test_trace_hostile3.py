"""The trace reader under the third hostile-input campaign (issue 34) and the trace forms of
issue 30, each class held over generated inputs (hypothesis, or bench/fuzz_trace_gen.py's
shape generator), not one file: bounded memory with every bound said, events over many
steps, FIFOs, linear tensor-core matching, odd JSON types, one file twice, names that never
reach a terminal raw, numbers in range, older forms (capitals, a top-level array), traces
without ProfilerStep and too short to judge."""

from __future__ import annotations

import contextlib
import os
import random
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.fuzz_trace_gen import HOSTILE_NAMES, _doc, _dump, _event, shapes, step_trace
from tests.conftest import REPO
from tuneadvisor.errors import InputError
from tuneadvisor.profile.trace import breakdown as b
from tuneadvisor.profile.trace import classify, collect, stream
from tuneadvisor.profile.trace.collect import Collected
from tuneadvisor.profile.trace.facts import trace_facts
from tuneadvisor.profile.trace.reader import read_rank, read_trace_set

FAST = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))

# The pattern before issue 34, kept as the reference the linear one must agree with.
OLD_TENSOR_CORE = re.compile(
    r"tensorop|xmma|hmma|gmma|imma"
    r"|[hsi](?:884|1688|16816|16832)"
    r"|(?:gemm|mma|conv|fprop|dgrad|wgrad).*(?:bf16|fp16|f16|tf32|half)"
    r"|(?:bf16|fp16|f16|tf32|half).*(?:gemm|mma|conv|fprop|dgrad|wgrad)"
    r"|flash_?(?:fwd|bwd|attn)|fmha",
    re.IGNORECASE,
)
PIECES = ("gemm", "GEMM", "mma", "conv", "fprop", "dgrad", "wgrad", "bf16", "fp16", "f16",
          "tf32", "half", "HALF", "h884", "s1688", "xmma", "ffma", "sgemm", "_", "x", "a", "f1",
          "gem", "tf3", "flash_fwd", "fmha", "sm80")  # fmt: skip
names = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)


def _write(tmp: Path, doc: Any, name: str = "rank0.pt.trace.json") -> Path:
    path = tmp / name
    path.write_bytes(_dump(doc, gz=name.endswith(".gz")))
    return path


# ----------------------------------------------------------------- §5 no backtracking


@given(names)
@FAST
def test_tensor_core_matching_agrees_with_the_old_pattern(name: str) -> None:
    old = OLD_TENSOR_CORE.search(name) is not None
    simt = classify.SIMT_RE.search(name) and not classify.REDUCED_RE.search(name)
    assert classify.is_tensor_core(name) is (old and not simt)


@given(st.sampled_from(PIECES), st.sampled_from(PIECES), st.integers(10_000, 60_000))
@settings(max_examples=15, deadline=None)
def test_tensor_core_matching_is_linear_on_long_names(a: str, c: str, n: int) -> None:
    # the old pattern took 18-30 s on a 60 kB name like these; linear is milliseconds
    for name in (a * n, a * n + c, (a + "x") * n + c, "x" * n + a * (n // 4)):
        started = time.perf_counter()
        classify.is_tensor_core(name)
        assert time.perf_counter() - started < 2.0, (a, c, n)  # generous: a loaded machine


# ------------------------------------------------------------------ §6 odd JSON types

json_values = st.recursive(
    st.none() | st.booleans() | st.text(max_size=5)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)  # fmt: skip


@given(st.lists(st.tuples(st.sampled_from(("name", "cat", "pid", "tid", "ts", "dur", "args", "ph")),
                          json_values), min_size=1, max_size=20),
       st.integers(0, 2**16))  # fmt: skip
@FAST
def test_any_json_in_any_field_is_read_or_refused_in_one_line(
    tmp_path_factory: pytest.TempPathFactory, edits: list[tuple[str, Any]], seed: int
) -> None:
    rng = random.Random(seed)
    events = step_trace(3, 5, rng)
    for key, value in edits:
        rng.choice(events)[key] = value
    path = _write(tmp_path_factory.mktemp("odd"), _doc(events))
    ts = read_trace_set([str(path)])
    trace_facts(ts)  # the facts of what was read, no exception either
    assert ts.ranks[0].events == len(events)


@given(st.lists(st.integers(0, 3), min_size=2, max_size=5), st.booleans())
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
def test_files_naming_one_rank_or_given_twice_are_read(
    tmp_path_factory: pytest.TempPathFactory, ranks: list[int], twice: bool
) -> None:
    folder = tmp_path_factory.mktemp("ranks")
    paths = []
    for i, rank in enumerate(ranks):
        doc = _doc(step_trace(3, 4, random.Random(i)), distributedInfo={"rank": rank})
        paths.append(str(_write(folder, doc, f"r{i}.pt.trace.json")))
    if twice:
        paths.append(paths[0])
    ts = read_trace_set(paths)
    assert len(ts.ranks) == len(ranks)  # the file given twice is read once
    trace_facts(ts)  # no StatisticsError when two files name one rank
    if len(set(ranks)) < len(ranks):
        assert any("same rank" in n for n in ts.notes)


# ------------------------------------------------------------------ §1 bounded reading


def test_every_bound_holds_over_the_generated_shapes_and_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small bounds, so generated traces pass each: what is kept stays under it, and the
    rank's notes say what was left out."""
    monkeypatch.setattr(collect, "MAX_NAMES", 50)
    monkeypatch.setattr(collect, "MAX_STEPS", 20)
    monkeypatch.setattr(collect, "MAX_INTERVALS", 3000)
    monkeypatch.setattr(collect, "MAX_THREADS", 4)
    for seed in range(4):
        rng = random.Random(seed)
        many = tuple(f"k{rng.random()}" for _ in range(200))
        events = step_trace(rng.randint(30, 60), rng.randint(20, 60), rng, names=many)
        for i, ev in enumerate(events):
            ev["tid"] = i % 9
        col = Collected()
        for ev in events:
            col.add(ev)
        assert len(col._seen) <= 50 and len(col.name_list) <= 51
        assert len(col.steps) <= 20 and len(col.kinds) <= 3000 and len(col.tid_ids) <= 4
        notes = " ".join(read_rank(str(_write(tmp_path, _doc(events)))).notes)
        for said in ("distinct event names", "ProfilerSteps", "timed events", "threads"):
            assert said in notes, (seed, said, notes)


def test_a_gz_stops_at_its_inflation_bound_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream, "MIN_INFLATE", 1 << 16)
    monkeypatch.setattr(stream, "MAX_INFLATE_RATIO", 2)
    for seed in range(3):
        events = step_trace(40 + 20 * seed, 20, random.Random(seed))
        path = _write(tmp_path, _doc(events), f"s{seed}.pt.trace.json.gz")
        rank = read_rank(str(path))
        assert 0 < rank.events < len(events)
        assert any("inflates past" in n for n in rank.notes)


def test_the_header_is_read_within_its_bounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream, "MAX_KEPT_TOKENS", 200)
    monkeypatch.setattr(stream, "MAX_HEADER_TOKENS", 5000)
    device = {"name": "GPU", "computeMajor": 8, "totalGlobalMem": 80e9}
    events = step_trace(3, 4, random.Random(1))
    kept = read_rank(str(_write(tmp_path, _doc(events, deviceProperties=[device] * 100))))
    assert 0 < len(kept.devices) < 100 and any("deviceProperties" in n for n in kept.notes)
    big = _doc(events, other=[[1, 2, 3]] * 5000)
    past = read_rank(str(_write(tmp_path, big)))
    assert len(past.steps) == 3 and any("metadata before" in n for n in past.notes)


@given(st.integers(2, 40), st.lists(st.tuples(st.floats(0, 1), st.floats(0, 30), st.integers(0, 8)),
                                    min_size=1, max_size=60))  # fmt: skip
@FAST
def test_events_over_many_steps_break_down_as_if_each_step_held_them(
    steps: int, spans: list[tuple[float, float, int]]
) -> None:
    """The difference-array cover gives each step what the old steps x events loop gave."""
    col = Collected()
    for s in range(steps):
        col.steps.append((s, 10.0 * s, 10.0 * s + 9.0, 0))
    for start, length, kind in spans:
        col.starts.append(10.0 * steps * start)
        col.ends.append(10.0 * steps * start + 10.0 * length)
        col.corrs.append(-1)
        col.kinds.append(kind)
        col.names.append(0)
        col.tids.append(0)
    col.name_list.append("op")
    wins = b.windows(col)
    for win, found in b.by_step(col, wins):
        got = b.step_parts(col, win, found).time.by_kind
        every = [
            i for i in range(len(col.starts)) if col.starts[i] < win.end and col.ends[i] > win.start
        ]
        ref = b.step_parts(
            col, win, b.StepEvents(every, (0,) * len(collect.KIND_CODES))
        ).time.by_kind
        assert got == pytest.approx(ref), (win, got, ref)


def test_a_fifo_named_like_a_trace_is_refused_not_waited_on(tmp_path: Path) -> None:
    for name in ("rank0.pt.trace.json", "rank0.pt.trace.json.gz", "x.json"):
        fifo = tmp_path / name
        os.mkfifo(fifo)
        result: list[BaseException | None] = []

        def read(path: Path = fifo, result: list[BaseException | None] = result) -> None:
            try:
                read_trace_set([str(path)])
                result.append(None)
            except BaseException as exc:  # noqa: BLE001 - the thread hands any error to the test
                result.append(exc)

        worker = threading.Thread(target=read, daemon=True)
        worker.start()
        worker.join(60)  # refused at once; 60 s only so a regression fails, not hangs
        assert result and isinstance(result[0], InputError) and "regular file" in str(result[0])
        fifo.unlink()


# ----------------------------------------------------------------- §7 names on the faces

hostile = st.sampled_from(HOSTILE_NAMES) | st.text(
    st.characters(codec="utf-8", categories=("Cc", "Zl", "Zp", "Ll")), min_size=1, max_size=40
)


@given(st.lists(hostile, min_size=1, max_size=6), st.integers(0, 2**16))
@FAST
def test_names_from_a_trace_reach_no_face_raw(
    tmp_path_factory: pytest.TempPathFactory, picked: list[str], seed: int
) -> None:
    from tuneadvisor.present.trace_text import cannot_show, observations, section_lines

    rng = random.Random(seed)
    events = step_trace(3, 30, rng, names=tuple(picked))
    folder = tmp_path_factory.mktemp("names")
    file = picked[0][:20].replace("/", "_").replace("\x00", "_") or "_"
    ts = read_trace_set([str(_write(folder, _doc(events), f"{file}.json"))])
    shown = [*section_lines(ts, top=20), *cannot_show(ts)]
    shown += [line for r in ts.ranks for line in observations(r)]
    for line in shown:  # each on one line: a name cannot start a forged one
        assert not re.search(r"[\x00-\x1f\x7f-\x9f]", line), repr(line)
    assert not any(line.lstrip().startswith("Findings") for line in "\n".join(shown).split("\n"))


def test_compare_prints_folder_names_and_setting_names_on_one_line(tmp_path: Path) -> None:
    import contextlib
    import io

    from tuneadvisor.cli import main

    events = step_trace(3, 5, random.Random(3))
    before = tmp_path / "a\x1b]0;title\x07\nFindings: none"
    before.mkdir()
    _write(before, _doc(events))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["compare", str(before), str(before), "--format", "text"]) == 0
    assert "\x1b" not in out.getvalue() and "\nFindings" not in out.getvalue()

    from tuneadvisor.advisor.prediction import Prediction, Span
    from tuneadvisor.present.prediction_text import headline

    span = Span(1.0, 1.0, 1.0)
    prediction = Prediction(setting={"x\x1b[2J\n{0}": 3}, step_s=span, speedup=span)
    line = headline(prediction)
    assert "\x1b" not in line and "\n" not in line and "{0}" in line


# ------------------------------------------------------------------ §8 numbers in range


def test_a_memory_peak_past_the_device_is_no_share(tmp_path: Path) -> None:
    for peak in (1e20, 2e11, -5.0):
        events = step_trace(3, 10, random.Random(0))
        memory = {"Device Id": 0, "Device Type": 1, "Total Allocated": peak}
        events.append({"ph": "i", "name": "[memory]", "ts": 1000, "pid": 1, "tid": 1,
                       "args": memory})  # fmt: skip
        doc = _doc(
            events, deviceProperties=[{"name": "G", "computeMajor": 8, "totalGlobalMem": 8e10}]
        )
        ts = read_trace_set([str(_write(tmp_path, doc))])
        share = trace_facts(ts).get("trace.device_memory_peak_share")
        assert share is None or 0 <= share <= 1  # type: ignore[operator]
        if 8e10 < peak < 2**62:  # past 2**62 no [memory] event is read at all
            assert share is None and any("no reading" in n for n in ts.ranks[0].notes)


def test_a_prediction_past_any_run_is_refused() -> None:
    from tuneadvisor.advisor.prediction import Prediction

    for value in (1e308, 1e13, -1e13):
        raw = {"setting": {}, "step_s": {"low": 1, "expected": 1, "high": value},
               "speedup": {"low": 1, "expected": 1, "high": 1}}  # fmt: skip
        with pytest.raises(ValueError, match="up to"):
            Prediction.from_json(raw)


# ------------------------------------------------------ issue 30: forms and step coverage


@given(st.integers(0, 2**16))
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
def test_capital_categories_and_a_top_level_array_read_as_today_s_traces(
    tmp_path_factory: pytest.TempPathFactory, seed: int
) -> None:
    folder = tmp_path_factory.mktemp("forms")
    now = read_rank(str(_write(folder, _doc(step_trace(5, 8, random.Random(seed))), "a.json")))
    old = step_trace(5, 8, random.Random(seed), capital=True)
    for doc, name in ((_doc(old), "b.json"), (old, "c.json"), (old, "d.json.gz")):
        got = read_rank(str(_write(folder, doc, name)))
        assert got.has_device and got.kernels == now.kernels
        assert [s.by_kind for s in got.steps] == [s.by_kind for s in now.steps]


@given(st.integers(2, 30), st.integers(0, 2**16))
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
def test_without_profiler_steps_the_optimizer_s_steps_are_the_steps(
    tmp_path_factory: pytest.TempPathFactory, iterations: int, seed: int
) -> None:
    rng = random.Random(seed)
    events = [e for e in step_trace(iterations, 6, rng) if "ProfilerStep" not in e["name"]]
    step_us = 10.0 * 8
    for s in range(iterations):
        end = 1000.0 + (s + 1) * step_us - 2
        events.append(_event("user_annotation", "Optimizer.step#SGD.step", end - 1, 1.0))
    rank = read_rank(str(_write(tmp_path_factory.mktemp("opt"), _doc(events))))
    # n optimizer steps bound n - 1 iterations (before the first: set-up)
    assert rank.step_source == "optimizer" and len(rank.steps) == iterations - 1
    # one sync at the end of the whole loop is one sync, not one a step
    last = [e for e in events if "ProfilerStep" not in e["name"]]
    alone = read_rank(str(_write(tmp_path_factory.mktemp("none"), _doc(
        [e for e in last if not e["name"].startswith("Optimizer")]))))  # fmt: skip
    assert alone.step_source == "whole"
    assert "trace.host_syncs_per_step" not in trace_facts(read_trace_set([alone.path])) and any(
        "no steps found" in n for n in alone.notes
    )


def test_a_trace_too_short_is_not_judged(tmp_path: Path) -> None:
    for dur in (0.3, 5.0, 300.0):
        doc = _doc([_event("kernel", "k", 1.0, dur), _event("cpu_op", "aten::mm", 0.5, dur * 2)])
        ts = read_trace_set([str(_write(tmp_path, doc))])
        facts = trace_facts(ts)
        assert "trace.gpu_busy_share" not in facts
        assert any("too short to judge" in n for n in ts.ranks[0].notes)


def test_the_generated_shapes_read_or_refuse_in_process(tmp_path: Path) -> None:
    """Every shape of the bench's generator, read in process (the bounds under their own
    fork: tests/process/test_trace_fuzz.py): a result or one InputError."""
    for shape in shapes(random.Random(7)):
        path = tmp_path / shape.file
        path.write_bytes(shape.data)
        with contextlib.suppress(InputError):
            trace_facts(read_trace_set([str(path)]))
        path.unlink()


@given(st.integers(0, 2**16))
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
def test_a_trace_with_no_dataloader_wait_and_a_plan_adding_workers_predicts(
    tmp_path_factory: pytest.TempPathFactory, seed: int
) -> None:
    """Found by fuzz_e2e's trace target: a trace whose DataLoader share is 0 under a job
    whose script has num_workers=0 divided by the workers' zero cost (ZeroDivisionError)."""
    import contextlib as ctx
    import io

    from tuneadvisor.cli import main

    # the benches import each other as scripts do, with bench/ on sys.path
    sys.path.insert(0, str(REPO / "bench"))
    import fuzz_e2e

    JOB, TRAIN = fuzz_e2e.JOB, fuzz_e2e.TRAIN

    folder = tmp_path_factory.mktemp("plan")
    (folder / "job.sbatch").write_text(JOB)
    (folder / "train.py").write_text(TRAIN)
    trace = _write(folder, _doc(step_trace(40, 3, random.Random(seed))))
    with ctx.redirect_stdout(io.StringIO()):
        assert main(["report", "--job", str(folder / "job.sbatch"), str(trace)]) == 0
