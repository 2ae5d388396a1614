"""`--probe FILE`: the probe file read as probe.* facts, and anything else refused in one
line naming the file, exit status 2 (issue 21, part 5)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tuneadvisor.advisor.facts import FACTS, type_matches
from tuneadvisor.cli import main
from tuneadvisor.errors import InputError
from tuneadvisor.runrecord.probe import FEEDS, parse_probe, read_probe
from tuneadvisor.workspace.evidence_stamp import evidence_stamp
from tuneadvisor.workspace.gather import gather
from tuneadvisor.workspace.inputs import Inputs


def probe_record(**changes: Any) -> dict[str, Any]:
    """A probe as training/probekit.py writes it: a 20 ms step; 2 workers feed it."""
    record: dict[str, Any] = {
        "kind": "tuneadvisor-probe", "schema": 1, "script": "mnist_single", "device": "cuda:0",
        "batch_size": 64, "num_workers": 1, "cores": 4, "steps_per_window": 20,
        "test_mode": False,
        "ceiling_step_s": [0.0201, 0.0199, 0.0200],
        "pipeline": [
            {"workers": 0, "batches_per_s": [20.0, 21.0, 19.0]},
            {"workers": 1, "batches_per_s": [30.0, 31.0, 29.0]},
            {"workers": 2, "batches_per_s": [48.0, 49.0, 47.0]},
            {"workers": 4, "batches_per_s": [70.0, 90.0, 80.0]},
        ],
        "loop_step_s": [0.034, 0.033, 0.035],
        "loop_stall_share": [0.40, 0.41, 0.39],
    }  # fmt: skip
    record.update(changes)
    return record


def test_the_facts_are_the_windows_medians_and_the_fewest_workers_that_feed() -> None:
    facts = parse_probe(probe_record(), "p.json").facts()
    assert facts == {
        "probe.ceiling_step_s": 0.0200,
        "probe.loop_step_s": 0.034,
        "probe.loop_step_spread": pytest.approx((0.035 - 0.033) / 0.034),
        "probe.pipeline_batches_per_s.max": 80.0,
        "probe.workers_for_95pct": 2,  # 48/s >= 95 % of 50/s; 1 worker's 30/s is not
        "probe.stall_share": 0.40,
        "probe.batch_size": 64,
        "probe.cores": 4,
        "probe.test_mode": False,
        "probe.workers": 1,  # the loop's, as the file names it
    }
    for name, value in facts.items():  # every one registered, with its declared type
        assert name in FACTS and type_matches(name, value), name


def test_no_worker_count_that_feeds_leaves_the_fact_out_and_says_so() -> None:
    slow = [{"workers": w, "batches_per_s": [10.0]} for w in (0, 1, 2, 4)]
    probe = parse_probe(probe_record(pipeline=slow), "p.json")
    assert "probe.workers_for_95pct" not in probe.facts()
    assert "no worker count up to 4 feeds" in probe.note()


def test_a_probe_without_a_worker_sweep_gives_the_loops_facts_alone() -> None:
    """What the hook around a script of one's own writes: no pipeline per worker count."""
    probe = parse_probe(probe_record(pipeline=[]), "p.json")
    facts = probe.facts()
    assert facts["probe.stall_share"] == 0.40 and facts["probe.ceiling_step_s"] == 0.0200
    assert "probe.workers_for_95pct" not in facts
    assert "probe.pipeline_batches_per_s.max" not in facts
    assert "no worker counts were tried" in probe.note()


def test_the_stand_ins_probe_says_it_was_a_test_mode() -> None:
    probe = parse_probe(probe_record(test_mode=True), "p.json")
    assert probe.facts()["probe.test_mode"] is True
    assert "device-time stand-in (test mode)" in probe.note()


rates = st.lists(st.floats(0.5, 500.0), min_size=1, max_size=4)


@given(
    ceiling=st.floats(0.001, 1.0),
    pipeline=st.dictionaries(st.integers(0, 64), rates, min_size=1, max_size=8),
)
def test_the_workers_that_feed_are_the_fewest_whose_median_reaches_95_percent(
    ceiling: float, pipeline: dict[int, list[float]]
) -> None:
    rows = [{"workers": w, "batches_per_s": r} for w, r in pipeline.items()]
    probe = parse_probe(probe_record(ceiling_step_s=[ceiling], pipeline=rows), None)
    fed = probe.workers_for()
    reaches = {w for w, r in pipeline.items() if statistics.median(r) >= FEEDS / ceiling}
    assert fed == (min(reaches) if reaches else None)


def test_gather_reads_the_probe_once_and_stamps_it_as_evidence(tmp_path: Path) -> None:
    path = tmp_path / "probe.json"
    path.write_text(json.dumps(probe_record()))
    found = gather(Inputs(probe=str(path)), None, env={})
    assert found.facts["probe.workers_for_95pct"] == 2
    assert any(n.startswith(f"{path}: the loop waited") for n in found.notes)
    stamp = evidence_stamp(Inputs(job="job.sh", probe=str(path)))
    assert stamp is not None and stamp.evidence == "probe probe.json"
    path.write_text(json.dumps(probe_record(cores=8)))  # other evidence, another digest
    again = evidence_stamp(Inputs(job="job.sh", probe=str(path)))
    assert again is not None and again.digest != stamp.digest


# ------------------------------------------------------------------------------ refusals

_BAD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-5, -1), st.just(float("nan")),
    st.just(float("inf")), st.text(max_size=5), st.just([]), st.just({}),
    st.lists(st.one_of(st.none(), st.text(max_size=3), st.integers(-3, -1)), min_size=1),
)  # fmt: skip
_FIELDS = ["kind", "schema", "batch_size", "cores", "test_mode", "ceiling_step_s",
           "pipeline", "loop_step_s", "loop_stall_share"]  # fmt: skip


@st.composite
def malformed(draw: st.DrawFn) -> str:
    """A probe with one field broken or missing, another JSON value, or no JSON at all."""
    kind = draw(st.sampled_from(["field", "missing", "row", "json", "text"]))
    if kind == "text":
        return draw(st.text(max_size=40).filter(lambda t: not _is_json(t)))
    if kind == "json":
        return json.dumps(draw(st.one_of(st.none(), st.integers(), st.lists(st.integers()))))
    record = probe_record()
    if kind == "missing":
        del record[draw(st.sampled_from(_FIELDS))]
    elif kind == "row":
        row = dict(record["pipeline"][0])
        row[draw(st.sampled_from(["workers", "batches_per_s"]))] = draw(_BAD_VALUES)
        record["pipeline"] = [row, *record["pipeline"][1:]]
    else:
        name = draw(st.sampled_from(_FIELDS))
        # good values among the bad: true or false for test_mode, no sweep ([]) for pipeline
        bad = _BAD_VALUES.filter(
            lambda v: (
                not (name == "test_mode" and isinstance(v, bool))
                and not (name == "pipeline" and v == [])
            )
        )
        record[name] = draw(bad)
    return json.dumps(record)  # NaN and Infinity as Python's json writes them


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(text=malformed())
def test_a_bad_probe_file_is_one_line_naming_it_and_exit_2(
    text: str, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path_factory.mktemp("probe") / "probe.json"
    path.write_text(text)
    capsys.readouterr()
    assert main(["report", "--probe", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tuneadvisor: {path}: ") and err.count("\n") == 1, err
    with pytest.raises(InputError):
        read_probe(str(path))


def test_a_newer_schema_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(probe_record(schema=2)))
    with pytest.raises(InputError, match="schema 2 is newer"):
        read_probe(str(path))
