"""How the reports read (issue 24, points 16 and 17): units once in markdown, the plan and
the training-script chain in both documents, one unit with fixed decimals in a column of
times, JSON evidence keyed by fact id, and a job script given as the profile named as such.

The bundled example with a seff log: four findings with units in their labels and values,
and a plan of four changes."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import REPO
from tuneadvisor.advisor.facts import FACTS
from tuneadvisor.cli import main
from tuneadvisor.present.number_text import column_unit, in_unit

INPUTS = [
    "examples/mnist/24752610.lprof",
    "--job",
    "examples/mnist/mnist.sbatch",
    "--seff",
    "tests/fixtures/seff/one-busy-core.txt",
]


def report(fmt: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(REPO / "tests" / "no-such-config"))
    monkeypatch.delenv("TUNEADVISOR_RULES", raising=False)
    monkeypatch.delenv("TUNEADVISOR_SITE", raising=False)
    assert main(["report", *INPUTS, "--format", fmt]) == 0
    return capsys.readouterr().out


def test_markdown_writes_each_unit_once_the_plan_and_the_chain(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    markdown = report("markdown", capsys, monkeypatch)
    doc = json.loads(report("json", capsys, monkeypatch))
    text = report("text", capsys, monkeypatch)
    evidence = [line for line in markdown.splitlines() if re.match(r"- .+: \*\*.*\*\*", line)]
    assert evidence
    for line in evidence:  # "(%): **80.1** %" says the unit twice
        named = re.match(r"- .*\((?:[^()]*, )?([^(),]+)\): \*\*.*\*\*(.*)$", line)
        assert named is None or named.group(2) == "", line
    # the plan, each change once, as the text report has it
    plan = [line for line in text.split("Plan:\n", 1)[1].split("\n\n", 1)[0].splitlines()]
    changes = [line.split("   (")[0].strip() for line in plan]
    assert len(changes) == sum(len(doc["advice"]["plan"][k]) for k in ("sbatch", "script", "env"))
    section = markdown.split("## Plan\n", 1)[1].split("\n## ", 1)[0]
    for change in changes:
        assert f"`{change}`" in section
    chain = next(line for line in text.splitlines() if line.startswith("Training script:"))
    assert chain in markdown.splitlines()


def test_a_column_of_times_has_one_unit_and_fixed_decimals(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = json.loads(report("json", capsys, monkeypatch))
    lines = doc["profile"]["functions"][0]["lines"]
    text = report("text", capsys, monkeypatch)
    header = next(line for line in text.splitlines() if line.strip().startswith("Line  Hits"))
    assert re.search(r"Time (s|ms|µs) ", header)
    rows = [line.split() for line in text.splitlines() if re.match(r"\s+\d+\s+\d+\s+\d", line)]
    times = [row[2] for row in rows[: len(lines)]]
    assert len({len(t.split(".")[1]) for t in times}) == 1  # the same decimals
    assert not any("e" in t for t in times)  # no 7.12e-05 beside 55.8
    for cell, line in zip(times, lines, strict=True):
        assert float(cell) == pytest.approx(line["time_s"], abs=0.0005)  # in seconds here
    markdown = report("markdown", capsys, monkeypatch)
    table = [row for row in markdown.splitlines() if re.match(r"\| \d+ \|", row)]
    cells = [row.split("|")[3].strip() for row in table]
    assert cells[: len(times)] == times


@given(st.lists(st.floats(min_value=0, max_value=1e5, allow_nan=False), min_size=1, max_size=30))
def test_column_unit_keeps_each_value_and_the_largest_readable(values: list[float]) -> None:
    unit, size, decimals = column_unit(values)
    cells = [in_unit(v, size, decimals) for v in values]
    assert {len(c.split(".")[1]) for c in cells} == {decimals}
    for cell, value in zip(cells, values, strict=True):
        assert math.isclose(float(cell) * size, value, abs_tol=size * 10**-decimals)
    largest = max(values)
    if largest > 0:  # the largest never reads as a tiny fraction of the unit
        assert largest / size >= 1 or unit == "µs"


def test_json_evidence_is_keyed_by_fact_id_with_the_label_beside(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = json.loads(report("json", capsys, monkeypatch))
    assert doc["tool"]["schema"] == 2
    assert len(doc["findings"]) >= 4
    for finding in doc["findings"]:
        by_fact = finding["evidence_by_fact"]
        # the same evidence as the labelled table, nothing lost or added
        assert {v["label"]: v["value"] for v in by_fact.values()} == finding["evidence"]
        for key, item in by_fact.items():
            assert key in FACTS or not re.fullmatch(r"[a-z_]+(\.[a-z_0-9]+)+", key), key
            assert item["unit"] == finding["evidence_units"].get(item["label"], "")
    loader = next(f for f in doc["findings"] if f["id"] == "dataloader-bound")
    assert loader["evidence_by_fact"]["profile.loader_share"]["value"] == 80.1
    cores = next(f for f in doc["findings"] if f["id"] == "under-requested-cores")
    efficiency = cores["evidence_by_fact"]["usage.cpu_efficiency_pct"]
    assert efficiency == {"value": 94.67, "label": "CPU efficiency (%)", "unit": "%"}
    memory = next(f for f in doc["findings"] if f["id"] == "over-requested-memory")
    # a value computed from two facts is keyed by its expression, which names them
    share = "round(100 * usage.mem_peak_mib / usage.mem_requested_mib, 1)"
    assert memory["evidence_by_fact"][share]["label"] == "used share (%)"


@pytest.mark.parametrize("command", ["report", "apply"])
def test_a_job_script_given_as_the_profile_is_named_so(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job.sbatch"
    job.write_text((REPO / "examples" / "mnist" / "mnist.sbatch").read_text())
    args = [command, str(job)] + (["--job", str(job), "-o", str(tmp_path / "t.sbatch")]
                                  if command == "apply" else [])  # fmt: skip
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"tuneadvisor: {job}: a Slurm job script (#! and #SBATCH lines), not a profile: "
        "pass it with --job\n"
    )
    assert not (tmp_path / "t.sbatch").exists()


def test_a_table_printed_after_a_script_is_still_a_table(tmp_path: Path) -> None:
    """A job's log that echoes its script and then prints the table stays readable."""
    from tuneadvisor.profile.lprof import load_profile

    table = (REPO / "examples" / "mnist" / "24752610.txt").read_text()
    log = tmp_path / "slurm.out"
    log.write_text("#!/bin/bash\n#SBATCH --time=1:00:00\n" + table)
    assert load_profile(log).functions
