"""Words and numbers that agree (issue 33 §3) in the bundled example's report: one figure for
one memory efficiency, "1 core" not "1 cores", and the memory note saying which way --mem
went."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tuneadvisor.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mnist"


@pytest.fixture
def report(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", "100")
    code = main([
        "report", str(EXAMPLE / "24752610.lprof"), "--job", str(EXAMPLE / "mnist.sbatch"),
        "--seff", str(EXAMPLE / "seff-24752610.txt"),
    ])  # fmt: skip
    assert code == 0
    return capsys.readouterr().out


def test_one_memory_efficiency_one_figure(report: str) -> None:
    shares = set(re.findall(r"memory efficiency ([\d.]+) %|used share \(%\): ([\d.]+)", report))
    figures = {a or b for a, b in shares}
    assert len(figures) == 1, figures


def test_one_core_is_one_core(report: str) -> None:
    assert not re.search(r"\b1 cores\b", report)
    assert "1 core per node" in report


def test_the_memory_note_says_which_way_mem_went(report: str) -> None:
    assert "-#SBATCH --mem=8G" in report and "+#SBATCH --mem=6G" in report
    assert "--mem raised to 6G" not in report
    assert "--mem lowered from 8G to 6G" in report
