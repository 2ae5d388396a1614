"""The three renderers of one analysis: what a user reads must match the numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import TRAIN_SOURCE, line_of, tutorial_profile
from tuneadvisor.present.number_text import heat_bar
from tuneadvisor.profile.analysis import ProfileAnalysis, analyze, kind_summary_text
from tuneadvisor.profile.model import ProfileSet
from tuneadvisor.profile.source import SourceFinder
from tuneadvisor.report import (
    json_report,
)  # looked up when called: checked (tests/report_schema.py)
from tuneadvisor.report.markdown import render_markdown
from tuneadvisor.report.text import render_text
from tuneadvisor.trainscript.kinds import LineKind
from tuneadvisor.workspace.load import JobScriptText, Workspace


def test_percentages_are_of_the_function_as_line_profiler_prints_them(
    tutorial_analysis: ProfileAnalysis,
) -> None:
    train = tutorial_analysis.functions[0]
    assert sum(line.percent for line in train.lines) == pytest.approx(100.0)
    loader = next(ln for ln in train.lines if ln.lineno == line_of(TRAIN_SOURCE, "for batch_idx"))
    assert loader.percent == pytest.approx(100 * 38.0 / train.total_s)
    assert loader.per_hit_s == pytest.approx(38.0 / 939)
    assert loader.kind is LineKind.DATALOADER


def test_kind_summary_names_the_dataloader_share(tutorial_analysis: ProfileAnalysis) -> None:
    train = tutorial_analysis.functions[0]
    share = 100 * 38.0 / train.total_s
    assert kind_summary_text(train).startswith(f"DataLoader {share:.1f} % of train()")
    assert train.kinds[0].kind is LineKind.DATALOADER
    assert {s.kind for s in train.kinds} >= {LineKind.FORWARD, LineKind.BACKWARD}


def test_text_report_has_a_row_per_timed_line_with_kind_and_heat(
    tutorial_analysis: ProfileAnalysis,
) -> None:
    # wide enough for the whole loop line (a narrower table cuts it: test_report_width.py)
    text = render_text(Workspace(analysis=tutorial_analysis, job=None), width=200)
    assert "\x1b[" not in text  # readable without a terminal
    rows = [r for r in text.splitlines() if "enumerate(train_loader)" in r]
    assert len(rows) == 1
    cells = rows[0].split()
    assert cells[0] == str(line_of(TRAIN_SOURCE, "for batch_idx"))
    assert cells[1] == "939"
    assert "dataloader" in cells
    assert "█" in rows[0]
    backward_row = next(r for r in text.splitlines() if "loss.backward()" in r)
    assert "backward" in backward_row.split()


def test_markdown_report_is_a_table_of_the_same_lines(tutorial_analysis: ProfileAnalysis) -> None:
    md = render_markdown(Workspace(analysis=tutorial_analysis, job=None))
    table_rows = [r for r in md.splitlines() if r.startswith("| ") and r[2:3].isdigit()]
    assert len(table_rows) == len(tutorial_analysis.functions[0].lines)
    assert any("enumerate(train_loader)" in r and "dataloader" in r for r in table_rows)


def test_json_report_follows_the_design_interface(tutorial_analysis: ProfileAnalysis) -> None:
    job = JobScriptText("job.sbatch", "#!/bin/bash\n")
    doc = json.loads(
        json.dumps(json_report.to_json(Workspace(analysis=tutorial_analysis, job=job)))
    )
    func = doc["profile"]["functions"][0]
    assert func["name"] == "train"
    line = next(ln for ln in func["lines"] if ln["kind"] == "dataloader")
    assert set(line) >= {"line", "hits", "time_s", "percent", "kind", "source"}
    assert line["hits"] == 939
    assert line["time_s"] == pytest.approx(38.0)
    assert "enumerate(train_loader)" in line["source"]
    assert doc["findings"] == []
    assert doc["job"]["path"] == "job.sbatch"


def test_missing_source_still_shows_numbers_and_says_so(tmp_path: Path) -> None:
    profile = tutorial_profile("/nowhere/else/train_elsewhere.py")
    analysis = analyze(ProfileSet.of([profile]), SourceFinder(profile_dirs=(tmp_path,)))
    assert analysis.missing_sources == ("/nowhere/else/train_elsewhere.py",)
    train = analysis.functions[0]
    assert all(ln.kind is LineKind.OTHER and ln.source is None for ln in train.lines)
    text = render_text(Workspace(analysis=analysis, job=None))
    assert "source not found" in text
    assert "939" in text
    assert "--source-root" in text


def test_several_files_are_merged_and_kept_apart(tmp_path: Path) -> None:
    (tmp_path / "mnist_classify.py").write_text(TRAIN_SOURCE)
    rank0 = tutorial_profile("/no-such-cluster/a/mnist_classify.py", origin="rank0.lprof")
    rank1 = tutorial_profile(
        "/no-such-cluster/a/mnist_classify.py", scale=2.0, origin="rank1.lprof"
    )
    analysis = analyze(ProfileSet.of([rank0, rank1]), SourceFinder(profile_dirs=(tmp_path,)))
    assert analysis.total_s == pytest.approx(rank0.total_s + rank1.total_s)
    assert [p.origin for p in analysis.parts] == ["rank0.lprof", "rank1.lprof"]
    assert analysis.parts[1].total_s == pytest.approx(2 * analysis.parts[0].total_s)
    merged_loader = next(ln for ln in analysis.functions[0].lines if ln.hits == 2 * 939)
    assert merged_loader.time_s == pytest.approx(3 * 38.0)
    assert "rank1.lprof" in render_text(Workspace(analysis=analysis, job=None))


def test_a_heavy_sync_line_gets_a_note_not_blame(tmp_path: Path) -> None:
    (tmp_path / "mnist_classify.py").write_text(TRAIN_SOURCE)
    profile = tutorial_profile("/no-such-cluster/a/mnist_classify.py")
    func = profile.functions[0]
    sync_line = line_of(TRAIN_SOURCE, "print(loss.item())")
    heavy = tuple(
        type(ln)(ln.lineno, ln.hits, 20.0 if ln.lineno == sync_line else ln.time_s)
        for ln in func.lines
    )
    profile = type(profile)(
        profile.origin,
        profile.unit_s,
        (type(func)(func.filename, func.first_lineno, func.name, heavy),),
        "lprof",
    )
    analysis = analyze(ProfileSet.of([profile]), SourceFinder(profile_dirs=(tmp_path,)))
    assert any(f"line {sync_line}" in note and "asynchronous" in note for note in analysis.notes)


@pytest.mark.parametrize(
    ("percent", "filled"), [(0, 0), (100, 10), (50, 5), (5, 0.5), (150, 10), (-3, 0)]
)
def test_heat_bar_fills_in_proportion(percent: float, filled: float) -> None:
    bar = heat_bar(percent, width=10)
    assert len(bar) == 10
    assert bar.count("█") == int(filled)
    assert (bar.strip(" █") != "") == (filled != int(filled))
