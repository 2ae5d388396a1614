"""The TUI's presentation rules, without running the app."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.tui.helpers import (
    JOB_SCRIPT,
    advised_workspace,
    mnist_workspace,
    sample_advice,
    sample_findings,
    sample_tuned,
)
from tuneadvisor.advisor.findings import Evidence, Suggestion
from tuneadvisor.present.findings import (
    evidence_text,
    findings_summary,
    format_value,
    grouped_findings,
    rationale_text,
    suggestion_texts,
    top_finding,
)
from tuneadvisor.present.number_text import format_seconds, heat_bar
from tuneadvisor.present.plan_rows import plan_rows
from tuneadvisor.profile.analysis import AnnotatedFunction, ProfileAnalysis
from tuneadvisor.trainscript.kinds import LineKind
from tuneadvisor.tui.view import (
    FUNCTION_SORTS,
    LINE_SORTS,
    FunctionSort,
    LineSort,
    diff_line_kind,
    display_path,
    findings_tab_label,
    function_rows,
    heat_level,
    kind_cycle,
    line_rows,
    merged_lines,
    next_in,
)
from tuneadvisor.workspace.apply import can_apply, planned_writes, tuned_name, write_outputs


def _analysis(tmp_path: Path) -> ProfileAnalysis:
    analysis = mnist_workspace(tmp_path).analysis
    assert analysis is not None
    return analysis


def _train(tmp_path: Path) -> AnnotatedFunction:
    train = _analysis(tmp_path).function("train")
    assert train is not None
    return train


def test_functions_by_time_then_by_name(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path)
    by_time = [f.name for _, f in function_rows(analysis.functions, FunctionSort.TIME)]
    by_name = [f.name for _, f in function_rows(analysis.functions, FunctionSort.NAME)]
    assert by_time == ["train", "test"]
    assert by_name == ["test", "train"]


def test_function_search_is_case_insensitive(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path)
    rows = function_rows(analysis.functions, FunctionSort.TIME, "TES")
    assert [(i, f.name) for i, f in rows] == [(1, "test")]


def test_block_and_timed_lines_are_merged(tmp_path: Path) -> None:
    rows = merged_lines(_train(tmp_path))
    assert [r.lineno for r in rows] == list(range(5, 16))
    assert rows[0].timing is None and rows[0].text is not None
    assert rows[0].text.startswith("def train(")
    assert rows[2].timing is not None and rows[2].timing.hits == 939


def test_sorting_lines_keeps_only_timed_lines(tmp_path: Path) -> None:
    train = _train(tmp_path)
    by_time = [r.lineno for r in line_rows(train, LineSort.TIME)]
    by_hits = [r.lineno for r in line_rows(train, LineSort.HITS)]
    assert by_time[:3] == [7, 10, 12]
    assert by_hits[0] == 7 and 5 not in by_hits
    assert line_rows(train, LineSort.LINE)[0].lineno == 5


def test_kind_filter_and_source_search(tmp_path: Path) -> None:
    train = _train(tmp_path)
    assert [r.lineno for r in line_rows(train, LineSort.LINE, LineKind.DATALOADER)] == [7]
    assert [r.lineno for r in line_rows(train, LineSort.LINE, query="BACKWARD")] == [12]
    assert line_rows(train, LineSort.LINE, LineKind.DATALOADER, query="backward") == []


def test_kind_cycle_lists_present_kinds_in_enum_order(tmp_path: Path) -> None:
    cycle = kind_cycle(_analysis(tmp_path))
    assert cycle[0] is None
    assert cycle[1:] == tuple(LineKind)  # the test data has every kind
    assert next_in(cycle, cycle[-1]) is None


def test_next_in_wraps_around() -> None:
    assert next_in(FUNCTION_SORTS, FunctionSort.NAME) is FunctionSort.TIME
    assert next_in(LINE_SORTS, LineSort.LINE) is LineSort.TIME


def test_display_path_never_shows_foreign_absolute_paths(tmp_path: Path) -> None:
    assert display_path("/cluster/home/alice/train.py", cwd=tmp_path) == "train.py"
    assert display_path(str(tmp_path / "pkg" / "train.py"), cwd=tmp_path) == "pkg/train.py"
    assert display_path("train.py", cwd=tmp_path) == "train.py"


def test_number_formats() -> None:
    assert format_seconds(84.5) == "84.50 s"
    assert format_seconds(150.04) == "150.0 s"
    assert format_seconds(0.0021) == "2.10 ms"
    assert format_seconds(0.0000533) == "53.3 µs"
    assert format_seconds(0) == "0 s"


def test_bars_and_heat() -> None:
    assert heat_bar(100, 4) == "████"
    assert heat_bar(0, 4) == "    "
    assert heat_bar(50, 4) == "██  "
    assert len(heat_bar(84.5, 10)) == 10
    assert [heat_level(p) for p in (84.5, 12, 3, 0)] == ["high", "mid", "low", "none"]


def test_findings_tab_label_counts_or_says_it_is_pending() -> None:
    advice = sample_advice()
    assert findings_tab_label(advice, partial=False) == "Findings (2)"
    assert findings_tab_label(sample_advice(findings=()), partial=False) == "Findings (0)"
    assert findings_tab_label(None, partial=True) == "Findings (…)"
    assert findings_tab_label(None, partial=False) == "Findings"


def test_findings_grouped_by_cause_and_the_top_one_by_severity() -> None:
    loader, mismatch = sample_findings()
    groups = grouped_findings([loader, mismatch])
    assert [(g, [f.id for f in fs]) for g, fs in groups] == [
        ("distributed", ["tasks-gpus-mismatch"]),
        ("input-pipeline", ["dataloader-bound"]),
    ]
    assert top_finding([loader, mismatch]) is mismatch  # error before warning
    assert top_finding([loader]) is loader
    assert top_finding([]) is None
    assert findings_summary([loader, mismatch]) == "2 findings: 1 error, 1 warning"
    assert findings_summary([loader]) == "1 finding: 1 warning"
    assert findings_summary([]) == "no findings"


def test_evidence_and_suggestions_as_the_report_writes_them() -> None:
    assert evidence_text(Evidence("cores requested", 1, "cores")) == ("cores requested", "1 core")
    assert evidence_text(Evidence("share", 80.1, "fraction")) == ("share", "80.1")
    assert format_value(0.5, "GiB") == "0.5 GiB"
    suggest = Suggestion(sbatch={"cpus-per-task": 4}, script={"num_workers": 3}, env={"X": 1})
    assert suggestion_texts(suggest) == ["--cpus-per-task=4", "num_workers=3", "export X=1"]
    assert rationale_text("  one\ntwo  \n\nthree\n") == "one two\n\nthree"


def test_plan_rows_name_the_findings_behind_each_change() -> None:
    rows = plan_rows(sample_advice().plan)
    assert rows == [
        ("job script", "#SBATCH --cpus-per-task=4", "dataloader-bound"),
        ("training", "num_workers = 3", "dataloader-bound"),
        ("environment", "export NCCL_DEBUG=INFO", "tasks-gpus-mismatch"),
    ]


def test_diff_lines_by_kind() -> None:
    kinds = [diff_line_kind(line) for line in sample_tuned().job_diff.splitlines()[:6]]
    assert kinds == ["header", "header", "hunk", "context", "context", "context"]
    assert diff_line_kind("+#SBATCH --cpus-per-task=4") == "added"
    assert diff_line_kind("-#SBATCH --cpus-per-task=1") == "removed"


def test_what_apply_would_write(tmp_path: Path) -> None:
    workspace = advised_workspace(tmp_path)
    assert can_apply(workspace)
    assert not can_apply(advised_workspace(tmp_path, findings=()))
    assert not can_apply(replace(workspace, advice=None))
    out = tmp_path / "mnist.tuned.sbatch"
    assert planned_writes(workspace, out) == [
        (out, "the tuned job script: --cpus-per-task=4"),
        (tmp_path / "train.py.tuneadvisor.patch", "a patch for train.py"),
    ]


def test_what_apply_would_write_is_what_write_outputs_writes(tmp_path: Path) -> None:
    """The confirmation lists the files before they exist: keep it in step with outputs."""
    inputs, outputs = tmp_path / "inputs", tmp_path / "outputs"
    inputs.mkdir()
    outputs.mkdir()
    workspace = advised_workspace(inputs)  # it writes a train.py there
    job = outputs / "mnist.sbatch"
    job.write_text(JOB_SCRIPT)
    out = tuned_name(job)
    planned = {path for path, _ in planned_writes(workspace, out)}
    write_outputs(workspace.tuned, job, out, in_place=False)
    assert {p for p in outputs.iterdir() if p != job} == planned
