"""Ctrl-C ends every screen with exit status 130, as a shell reports it (issue 33, point 2):
`open` of a profile (Textual's own binding only said "press ctrl+q"), `open` of a recording
(the replay) and `watch --job`/`--pid` (no program of ours to interrupt; they ended with 0).
`watch -- CMD` forwards Ctrl-C to its program instead (tests/tui/test_watch_app.py)."""

from __future__ import annotations

from pathlib import Path

from tests.tui.helpers import SIZE, async_test, make_app, mnist_workspace, wait_loaded
from tests.tui.test_watch_app import quiet_session, wait_rounds
from tests.tui.test_watch_replay import FIXTURE, replay, until
from tuneadvisor.tui.watch_app import WatchApp
from tuneadvisor.watch.live_run import LiveRun


@async_test
async def test_ctrl_c_ends_open_with_130(tmp_path: Path) -> None:
    app = make_app(mnist_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await pilot.press("slash")  # also from the search prompt, which has a Ctrl-C of its own
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running
    assert app.return_code == 130


@async_test
async def test_ctrl_c_ends_the_replay_with_130() -> None:
    session = replay(FIXTURE, speed=1.0)
    app = WatchApp(session, title="replay")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: session.state().rounds >= 1, "a round")
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running
    assert app.return_code == 130


@async_test
async def test_ctrl_c_ends_a_watch_of_a_job_with_130() -> None:
    session, sampler = quiet_session()
    app = WatchApp(session, title="tuneadvisor watch: job 42", run=LiveRun())  # no program
    async with app.run_test(size=(140, 44)) as pilot:
        await wait_rounds(app, pilot, 2)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running
        sampler.gate.set()
    assert app.return_code == 130


@async_test
async def test_q_still_ends_them_with_0(tmp_path: Path) -> None:
    app = make_app(mnist_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code in (0, None)
