"""One headless TUI start: print when the function table is first painted with data.

Run as a fresh process by ``bench/run_bench.py`` (so interpreter start-up and imports count):

    .venv/bin/python bench/tui_first_paint.py PROFILE.lprof [TEXT_EXPECTED_ON_SCREEN]

It imports ``tuneadvisor.tui.app``, builds ``TuneAdvisorApp`` as ``tuneadvisor open`` does:
a quick loader, ``load_quick_workspace(Inputs(profiles=(path,)))`` (the profile's
numbers only, for the first screen), and the full one, ``load_workspace(...)`` (source,
line kinds and advice, swapped in later). It runs the app headless at 160x50 with
``App.run_test`` and polls (every 5 ms) until the function table (``DataTable#functions``)
has rows, then waits for the screen's next refresh (``Screen.wait_for_refresh``: its
``call_after_refresh`` callbacks run once nothing is left to lay out or repaint, i.e. the
rows are composited): that is the first paint, from the quick stage. (``pilot.pause()``
is not used: it waits until the whole process is idle, which it is not while the full
load runs, so it would add up to a second of waiting per call.) ``load_start`` and
``load_end`` time the loader whose result is painted first (the quick one); the full load
goes on in the background and is not waited for. It then prints one JSON line with
``time.perf_counter`` stamps (CLOCK_MONOTONIC on Linux, so the parent can subtract its own
pre-spawn stamp) and exits.
"""

from __future__ import annotations

import time

T_SCRIPT = time.perf_counter()  # first statement: interpreter start-up is already over

import asyncio  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from typing import Any  # noqa: E402

POLL_TIMEOUT_S = 30.0
POLL_S = 0.005
FUNCTION_TABLE_ID = "functions"  # tuneadvisor/tui/screens.py: MainScreen's FunctionsTable


def _function_rows(app: Any) -> int:
    """Rows of the function table (``DataTable#functions``) on the active screen; 0 while
    the loading screen shows. The main screen fills that table in its ``on_mount``."""
    from textual.widgets import DataTable

    tables = app.screen.query(f"DataTable#{FUNCTION_TABLE_ID}")
    return max((t.row_count for t in tables if isinstance(t, DataTable)), default=0)


async def _measure(profile: str, expect: str) -> dict[str, Any]:
    marks: dict[str, Any] = {"script": T_SCRIPT}
    from tuneadvisor.tui.app import TuneAdvisorApp
    from tuneadvisor.workspace.inputs import Inputs
    from tuneadvisor.workspace.load import load_quick_workspace, load_workspace

    marks["imported"] = time.perf_counter()
    request = Inputs(profiles=(profile,))

    def quick() -> Any:
        marks["load_start"] = time.perf_counter()
        workspace = load_quick_workspace(request)
        marks["load_end"] = time.perf_counter()
        return workspace

    def load() -> Any:
        marks["full_load_start"] = time.perf_counter()
        return load_workspace(request)

    app = TuneAdvisorApp(load=load, title=f"tuneadvisor: {profile}", quick=quick)
    marks["constructed"] = time.perf_counter()
    async with app.run_test(size=(160, 50)):
        marks["running"] = time.perf_counter()
        deadline = time.perf_counter() + POLL_TIMEOUT_S
        rows = 0
        # Not pilot.pause(): it waits until the *process* is idle (or 1 s), and with staged
        # loading the full load keeps working in the background, so it would always wait.
        while time.perf_counter() < deadline:
            await asyncio.sleep(POLL_S)
            rows = _function_rows(app)
            if rows or not app.is_running:
                break
        marks["rows_seen"] = time.perf_counter()
        if rows:
            # The screen runs call_after_refresh callbacks once nothing is left to lay out
            # or repaint: the rows are composited.
            await app.screen.wait_for_refresh()
        marks["painted"] = time.perf_counter()
        marks["rows"] = rows
        # Not timed: check the rows really are on screen (a function name is rendered).
        if rows:
            marks["expected_text_on_screen"] = expect in app.export_screenshot()
        app.exit()
    marks["timed_out"] = rows == 0
    marks["return_code"] = app.return_code
    return marks


def main() -> None:
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: tui_first_paint.py PROFILE.lprof [TEXT_EXPECTED_ON_SCREEN]")
    expect = sys.argv[2] if len(sys.argv) == 3 else "train_0"
    marks = asyncio.run(_measure(sys.argv[1], expect))
    print(json.dumps(marks), flush=True)


if __name__ == "__main__":
    main()
