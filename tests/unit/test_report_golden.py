"""The reports of the bundled example, compared with reviewed golden files.

After a deliberate change, regenerate with TUNEADVISOR_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import os

import pytest

from tests.conftest import REPO
from tuneadvisor.cli import main

GOLDEN = REPO / "tests" / "golden"
EXAMPLE = ["examples/mnist/24752610.lprof", "--job", "examples/mnist/mnist.sbatch"]


def _report(fmt: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(REPO / "tests" / "no-such-config"))
    monkeypatch.delenv("TUNEADVISOR_RULES", raising=False)
    monkeypatch.delenv("TUNEADVISOR_SITE", raising=False)
    monkeypatch.setenv("COLUMNS", "100")  # the text's tables fit the terminal: one width here
    assert main(["report", *EXAMPLE, "--format", fmt]) == 0
    # Absolute paths differ between checkouts.
    return capsys.readouterr().out.replace(str(REPO), "<repo>")


@pytest.mark.parametrize(("fmt", "suffix"), [("text", "txt"), ("markdown", "md"), ("json", "json")])
def test_example_report_matches_golden(
    fmt: str, suffix: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _report(fmt, capsys, monkeypatch)
    golden = GOLDEN / f"example-report.{suffix}"
    if os.environ.get("TUNEADVISOR_UPDATE_GOLDEN") == "1":
        golden.write_text(out)
    assert golden.is_file(), f"{golden} missing: run with TUNEADVISOR_UPDATE_GOLDEN=1"
    assert out == golden.read_text()


def test_example_shows_the_tutorial_diagnosis(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the golden files must keep saying, whatever else changes."""
    text = _report("text", capsys, monkeypatch)
    assert "DataLoader" in text and "% of train()" in text
    assert "[warning] dataloader-bound" in text
    # sized in one step by the step-time model (1 worker kept the loop waiting 80 % of the
    # step: 7 workers keep up with a margin), and what it is expected to buy
    assert "+#SBATCH --cpus-per-task=8" in text
    assert "Prediction: expected " in text and "samples/s" in text
    assert "source not found" not in text
