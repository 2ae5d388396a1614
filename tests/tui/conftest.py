"""Fixtures for the TUI tests: line kinds are pinned to a test classifier."""

from __future__ import annotations

import pytest

from tests.tui.helpers import classify_for_tests


@pytest.fixture(autouse=True)
def pinned_kinds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The TUI shows the analysis's kinds; pin them so these tests (and snapshots) do not
    depend on how the real AST classifier evolves."""
    monkeypatch.setattr("tuneadvisor.profile.analysis.classify_source", classify_for_tests)
