"""The main screen and the replay at 100x30 (issue 24, point 14), checked again at 220x60,
and no control character of an input reaching the screen (issue 23, point 11).

What the screen shows is read from the app's own screenshot (every cell as drawn), so a
cut title, a wrapped unit or a row without its diff prefix is seen as the user sees it."""

from __future__ import annotations

import html
import io
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.app import App
from textual.widgets import Static
from textual.widgets._footer import FooterKey

from tests.tui.helpers import (
    JOB_SCRIPT,
    advised_workspace,
    async_test,
    copy_example,
    long_line_workspace,
    make_app,
    mnist_profile,
    static_text,
    wait_for,
    wait_loaded,
    workspace_of,
    write_train_py,
)
from tuneadvisor.commands.open import screen_title
from tuneadvisor.tui.advice_widgets import DiffView
from tuneadvisor.tui.dialogs import ApplyScreen
from tuneadvisor.tui.widgets import FunctionsTable, JobScriptView, KindSummary, LinesTable
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import JobScriptText

SIZES = [(100, 30), (220, 60)]
REPO = Path(__file__).resolve().parents[2]
REPLAY = REPO / "tests" / "fixtures" / "watch" / "replay-a100.jsonl"
JOB_PATH = "examples/mnist/mnist.sbatch"  # as a user types it, from the checkout
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def screen_lines(app: App[Any]) -> list[str]:
    """The screen as drawn, one string a row (from the SVG screenshot's text runs)."""
    svg = app.export_screenshot()
    rows: dict[float, list[tuple[float, str]]] = {}
    for match in re.finditer(r'<text[^>]*?x="([\d.]+)"[^>]*?y="([\d.]+)"[^>]*>(.*?)</text>', svg):
        x, y, text = float(match[1]), float(match[2]), html.unescape(match[3])
        rows.setdefault(y, []).append((x, text))
    drawn = ["".join(t for _, t in sorted(row)) for _, row in sorted(rows.items())]
    return [line.replace("\xa0", " ") for line in drawn]


def example_like(tmp_path: Path) -> Any:
    """The hand-made MNIST workspace with advice, its job named as the README's commands do."""
    workspace = advised_workspace(tmp_path)
    return replace(workspace, job=JobScriptText(JOB_PATH, JOB_SCRIPT))


@pytest.mark.parametrize("size", SIZES)
@async_test
async def test_the_title_and_time_by_kind_fit(tmp_path: Path, size: tuple[int, int]) -> None:
    inputs = Inputs(profiles=("examples/mnist/24752610.lprof",), job=JOB_PATH)
    app = make_app(example_like(tmp_path), title=screen_title(inputs))
    async with app.run_test(size=size) as pilot:
        screen = await wait_loaded(pilot)
        header = screen_lines(app)[0]
        assert "tuneadvisor: 24752610.lprof" in header
        assert "job mnist.sbatch" in header and "…" not in header  # not cut
        summary = screen.query_one(KindSummary)
        function = screen.current_function
        assert function is not None
        # At the pane's width, one row a kind below the heading, each whole with its unit: a
        # row that wrapped would leave "55.80" on one line and "s" on the next.
        console = Console(width=summary.content_size.width, file=io.StringIO(), color_system=None)
        with console.capture() as capture:
            console.print(summary.render())
        rows = capture.get().rstrip("\n").splitlines()
        assert len(rows) == len(function.kinds) + 1
        assert all(re.search(r"\d+\.\d %\s+\d+(\.\d+)? (s|ms|µs)$", row) for row in rows[1:])
        # and as drawn: the rows in view end with their unit too
        drawn = [line for line in screen_lines(app) if re.search(r"\d+\.\d %  ", line)]
        assert drawn and all(re.search(r"\d (s|ms|µs)\s*.?│$", line) for line in drawn), drawn


@pytest.mark.parametrize("size", SIZES)
@async_test
async def test_a_function_opens_on_its_hottest_line(tmp_path: Path, size: tuple[int, int]) -> None:
    app = make_app(example_like(tmp_path))
    async with app.run_test(size=size) as pilot:
        screen = await wait_loaded(pilot)
        lines = screen.query_one(LinesTable)
        function = screen.current_function
        assert function is not None
        hottest = max(function.lines, key=lambda line: line.time_s)
        assert lines.row_key_at_cursor() == str(hottest.lineno)
        # and it is on screen, not below the fold
        numbers = [int(m[1]) for m in (re.match(r"│\s+(\d+) ", row) for row in screen_lines(app))
                   if m]  # fmt: skip
        assert hottest.lineno in numbers


@async_test
async def test_the_examples_hot_line_opens_mid_view_below_its_signature(tmp_path: Path) -> None:
    """The bundled example at 100x30: train()'s signature is ten lines; its DataLoader line
    (204) opens under the cursor with the lines after it in sight."""
    from tuneadvisor.workspace.load import load_workspace

    example = copy_example(tmp_path)
    inputs = Inputs(profiles=(str(example / "24752610.lprof"),), job=str(example / "mnist.sbatch"))
    app = make_app(load_workspace(inputs))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.pause()
        assert screen.query_one(LinesTable).row_key_at_cursor() == "204"
        numbers = [int(m[1]) for m in (re.match(r"│\s+(\d+) ", row) for row in screen_lines(app))
                   if m]  # fmt: skip
        assert 204 in numbers and numbers[-1] >= 206  # not the view's last row


@async_test
async def test_one_function_is_one_function(tmp_path: Path) -> None:
    profile = mnist_profile(str(write_train_py(tmp_path)))
    one = replace(profile, functions=profile.functions[:1])
    app = make_app(workspace_of([one], tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.query_one(FunctionsTable).border_subtitle == "1 function"
        assert any("1 function " in line for line in screen_lines(app))


@pytest.mark.parametrize("size", SIZES)
@async_test
async def test_wrapped_rows_of_a_changed_line_keep_their_prefix(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    app = make_app(long_line_workspace(tmp_path))
    async with app.run_test(size=size) as pilot:
        await wait_loaded(pilot)
        await pilot.press("3")
        await pilot.pause()
        view = app.screen.query_one("#job-diff", DiffView)
        width = view.content_size.width
        console = Console(width=width, file=io.StringIO(), color_system=None)
        with console.capture() as capture:
            console.print(view.content)
        rows = capture.get().splitlines()
        changed = [line for line in view.shown if line.plain[:1] in "-+"][2:]  # not ---/+++
        # every row is a diff row: none starts with the text of a line wrapped under it
        assert all(row[:1] in " -+@" for row in rows), rows
        assert sum(row[:1] in "-+" for row in rows) >= len(changed)
        if size == (100, 30):  # the launch line is longer than the pane: its rows wrap
            assert sum(row[:1] in "-+" for row in rows) > len(changed)
        # a continued row is its marker and a space, never "---..." or "+++..." inside a hunk
        body = rows[2:]  # after the ---/+++ headers
        assert not any(row.startswith(("---", "+++")) for row in body), rows


@async_test
async def test_the_apply_question_names_the_launch_line_it_changes(tmp_path: Path) -> None:
    workspace = long_line_workspace(tmp_path)
    job = tmp_path / "mnist.sbatch"
    job.write_text(workspace.job.text if workspace.job else "")
    workspace = replace(workspace, job=JobScriptText(str(job), job.read_text()))
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_loaded(pilot)
        await pilot.press("3")
        await pilot.pause()
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, ApplyScreen))
        writes = " ".join(static_text(app.screen.query_one("#apply-writes", Static)).split())
        assert "--cpus-per-task=4" in writes
        assert "the launch line (num_workers=3)" in writes


@pytest.mark.parametrize("size", SIZES)
@async_test
async def test_the_replay_footer_shows_every_key(size: tuple[int, int]) -> None:
    from tuneadvisor.tui.watch_app import WatchApp
    from tuneadvisor.watch.replay import load_replay
    from tuneadvisor.workspace.rule_files import load_rules, rule_dirs

    session = load_replay(REPLAY, load_rules(rule_dirs([])), speed=0.25)
    app = WatchApp(session, title="tuneadvisor open: replay-a100.jsonl (replay)")
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        keys = {key.description: key for key in app.screen.query(FooterKey)}
        assert "Restart" in keys
        for key in keys.values():  # each whole on the screen
            assert key.region.right <= size[0], key.description
        assert any(" r Restart" in line for line in screen_lines(app)[-1:])


# -- control characters from the inputs (issue 23, point 11) ---------------------------

HOSTILE_JOB = JOB_SCRIPT.replace(
    "#!/bin/bash\n", "#!/bin/bash\n#SBATCH --job-name=\x1b]0;pwned\x07[bold]x[/bold]\x1b[2J\n", 1
)


@async_test
async def test_no_escape_of_a_job_script_reaches_the_screen(tmp_path: Path) -> None:
    assert "\x1b" in HOSTILE_JOB
    workspace = workspace_of(
        [mnist_profile(str(write_train_py(tmp_path)))],
        tmp_path,
        JobScriptText("[red]job\x1b[2J.sbatch", HOSTILE_JOB),
    )
    app = make_app(workspace, title="tuneadvisor: \x1b]0;title\x07x.lprof")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("3")
        await pilot.pause()
        drawn = "\n".join(screen_lines(app))
        assert not CONTROL.search(drawn)
        assert not CONTROL.search(app.title) and not CONTROL.search(app.sub_title)
        view = static_text(screen.query_one(JobScriptView))
        assert not CONTROL.search(view)
        # shown, visibly, and the markup in it is text: it restyles nothing
        assert "--job-name=\\x1b]0;pwned\\x07[bold]x[/bold]\\x1b[2J" in view
        assert "[red]job\\x1b[2J.sbatch" in drawn


@pytest.mark.parametrize(
    "line",
    ["epoch 1 \x1b]0;pwned\x07loss 0.5", "\x1b[2Jcleared", "a\x9b2Jb", "tqdm\r 50%|█████", "\x07"],
)
def test_a_programs_output_line_runs_no_control_sequence(line: str) -> None:
    from tuneadvisor.tui.watch_app import output_text

    assert not CONTROL.search(output_text(line).plain.replace("\t", ""))


def test_a_programs_colours_are_kept_in_its_output_pane() -> None:
    from tuneadvisor.tui.watch_app import output_text

    text = output_text("\x1b[32mINFO\x1b[0m step 5 loss 0.31")
    assert text.plain == "INFO step 5 loss 0.31"
    assert [(s.start, s.end) for s in text.spans] == [(0, 4)]
