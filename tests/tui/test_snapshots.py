"""Snapshots of the screens at a fixed size (pytest-textual-snapshot).

Regenerate after an intended change with `pytest tests/tui --snapshot-update`, then look at
the SVGs in tests/tui/__snapshots__/ before committing them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from tests.tui.helpers import (
    SIZE,
    advised_workspace,
    app_with,
    long_line_workspace,
    make_app,
    missing_source_workspace,
    mnist_workspace,
    quick_of,
    wait_loaded,
)
from tuneadvisor.workspace.load import Workspace

SnapCompare = Callable[..., bool]


async def loaded(pilot: Pilot[Any]) -> None:
    await wait_loaded(pilot)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Holds a slow loader until the test ends."""
    event = threading.Event()
    try:
        yield event
    finally:
        event.set()


def test_main_screen(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = make_app(mnist_workspace(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded)


def test_help_screen(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = make_app(mnist_workspace(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded, press=["question_mark"])


def test_missing_source(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = make_app(missing_source_workspace(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded)


def test_profile_with_advice(snap_compare: SnapCompare, tmp_path: Path) -> None:
    """The top finding in one line over the profile; the count in the Findings tab."""
    app = make_app(advised_workspace(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded)


def test_findings_tab(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = make_app(advised_workspace(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded, press=["2"])


def test_job_script_tab_with_changes(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = make_app(advised_workspace(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded, press=["3"])


def test_job_script_tab_long_lines_at_100_columns(
    snap_compare: SnapCompare, tmp_path: Path
) -> None:
    """The launch line wraps in both panes; the changed word is marked in the diff."""
    app = make_app(long_line_workspace(tmp_path))
    assert snap_compare(app, terminal_size=(100, 30), run_before=loaded, press=["3"])


def test_apply_confirmation(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = make_app(advised_workspace(tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded, press=["3", "a"])


def test_quick_stage(snap_compare: SnapCompare, tmp_path: Path, release: threading.Event) -> None:
    """Numbers only while the source and the advice are read: no "source not found"."""
    full = advised_workspace(tmp_path)

    def slow_full() -> Workspace:
        release.wait(timeout=30)
        return full

    app = app_with(slow_full, quick=lambda: quick_of(full, tmp_path))
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded)


def test_steps_tab_at_100_columns(snap_compare: SnapCompare) -> None:
    from tests.trace_sets import ddp_resnet

    app = make_app(Workspace(analysis=None, job=None, traces=ddp_resnet()))
    assert snap_compare(app, terminal_size=(100, 30), run_before=loaded)
