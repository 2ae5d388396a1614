"""Snapshots of the screens at a fixed size (pytest-textual-snapshot).

Regenerate after an intended change with `pytest tests/tui --snapshot-update`, then look at
the SVGs in tests/tui/__snapshots__/ before committing them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from tests.tui.helpers import SIZE, make_app, missing_source_workspace, mnist_workspace, wait_loaded

SnapCompare = Callable[..., bool]


async def loaded(pilot: Pilot[Any]) -> None:
    await wait_loaded(pilot)


def test_main_screen(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = make_app(mnist_workspace(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded)


def test_help_screen(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = make_app(mnist_workspace(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded, press=["question_mark"])


def test_missing_source(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = make_app(missing_source_workspace(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded)
