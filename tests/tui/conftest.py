"""Fixtures for the TUI tests: line kinds are pinned to a test classifier, and each test runs
in an empty working folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tui.helpers import classify_for_tests


@pytest.fixture(autouse=True)
def pinned_kinds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The TUI shows the analysis's kinds; pin them so these tests (and snapshots) do not
    depend on how the real AST classifier evolves."""
    monkeypatch.setattr("tuneadvisor.profile.analysis.classify_source", classify_for_tests)


@pytest.fixture(autouse=True)
def _outside_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The screens name files relative to the working folder ("mnist.tuned.sbatch (replaces
    the existing file)"): run them in an empty one, so that what a user left in the checkout
    (the first hour's tuned scripts) cannot change what a test sees."""
    monkeypatch.chdir(tmp_path)
