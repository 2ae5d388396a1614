"""A prediction from every kind of evidence (issue 31 §2): a torch.profiler trace with the run
record beside it, a probe, a watch recording; or a ``no_prediction`` naming exactly what is
missing."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.unit.test_probe_reader import probe_record
from tests.unit.test_run_record_facts import record
from tuneadvisor.advisor.forecast import predict
from tuneadvisor.advisor.plan import Change, Plan
from tuneadvisor.advisor.steptime import step_budget
from tuneadvisor.cli import main
from tuneadvisor.runrecord import RECORD_NAME

TRACE = REPO / "tests/fixtures/realworld/traces/h200-pageable-sync.pt.trace.json.gz"
SITE = "[partitions.here]\ncores = 16\ndefault = true\n"


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(REPO / "tests" / "no-such-config"))
    monkeypatch.delenv("TUNEADVISOR_RULES", raising=False)
    monkeypatch.delenv("TUNEADVISOR_SITE", raising=False)


def _advice(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["report", *argv, "--format", "json"]) == 0
    out: dict[str, Any] = json.loads(capsys.readouterr().out)
    return out


def test_a_trace_alone_names_the_workers_as_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(TRACE, tmp_path)
    advice = _advice(capsys, str(tmp_path / TRACE.name))["advice"]
    assert advice["prediction"] is None
    why = advice["no_prediction"]
    assert "torch.profiler trace was read" in why and "DataLoader workers" in why
    assert "line_profiler profile (kernprof), or a probe" not in why


def test_the_run_record_beside_a_trace_gives_the_workers_and_a_prediction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(TRACE, tmp_path)
    (tmp_path / RECORD_NAME).write_text(json.dumps(record(32, [0.05] * 12)))
    site = tmp_path / "site.toml"
    site.write_text(SITE)
    out = _advice(capsys, str(tmp_path / TRACE.name), "--site", str(site))
    advice = out["advice"]
    assert advice["facts"]["alloc.workers"] == 1
    # the trace's wait is 0.66 ms of a 4.7 ms step: the main process's cost of receiving a
    # batch (assumed 1 ms) may be all of it, so the expected value counts half the wait and
    # the range's slow side all of it (no gain): a prediction that says so
    prediction = advice["prediction"]
    assert prediction is not None, advice["no_prediction"]
    assert prediction["setting"]["num_workers"] == advice["plan"]["script"]["num_workers"]["value"]
    assert any("torch.profiler trace" in b for b in prediction["basis"])
    assert any("half the wait" in b for b in prediction["basis"])
    assert prediction["speedup"]["low"] < 1.0 < prediction["speedup"]["expected"]
    # a longer step with the same wait share leaves the workers room, the assumed figure
    # well inside the wait: the slow side is the spread's alone (two runs', each within it)
    facts = {**advice["facts"], "trace.step_s": 0.05}
    budget = step_budget(facts)
    assert budget is not None and budget.source == "trace"
    assert budget.receive == budget.receive_max < budget.wait / 2
    longer, why = predict(
        facts,
        Plan(
            script={"num_workers": Change(2, ("x",))}, sbatch={"cpus-per-task": Change(3, ("x",))}
        ),
    )
    assert longer is not None, why
    assert longer.speedup.expected > 1
    assert budget.slower_at(2, 3) == 1.0
    pair = math.hypot(budget.spread, budget.spread)
    assert longer.speedup.low == pytest.approx(longer.speedup.expected / (1 + pair))


def test_a_probe_that_measured_a_91_percent_stall_gives_a_finding_a_plan_and_a_prediction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    probe = tmp_path / "probe.json"
    stall = [0.91, 0.90, 0.92]
    probe.write_text(json.dumps(probe_record(loop_stall_share=stall, loop_step_s=[0.2] * 3)))
    site = tmp_path / "site.toml"
    site.write_text(SITE)
    out = _advice(capsys, "--probe", str(probe), "--site", str(site))
    assert "dataloader-bound-probe" in [f["id"] for f in out["findings"]]
    advice = out["advice"]
    assert advice["plan"]["script"]["num_workers"]["value"] == 2  # the probe's sweep: 2 feed
    prediction = advice["prediction"]
    assert prediction is not None and prediction["speedup"]["expected"] > 1
    assert prediction["setting"]["num_workers"] == 2


def test_a_recording_without_a_gpu_says_what_it_cannot_tell(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`tuneadvisor run`'s own recording on a machine with no GPU (the device-time stand-in):
    the host's figures, no GPU busy share: the wait for data is not told from the device's."""
    recording = REPO / "tests/fixtures/watch/cpu-standin.jsonl"
    advice = _advice(capsys, "--metrics", str(recording))["advice"]
    assert "host.proc.main_cpu_pct.mean" in advice["facts"]
    assert advice["prediction"] is None
    assert "no GPU busy share" in advice["no_prediction"]
