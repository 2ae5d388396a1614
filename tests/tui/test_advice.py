"""The advice in the TUI: the Findings tab, the top finding on the Profile tab, the suggested
changes on the Job script tab, and writing the tuned job script behind a confirmation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import App
from textual.notifications import Notification
from textual.pilot import Pilot
from textual.widgets import Static, TabbedContent

from tests.tui.helpers import (
    LONG_LAUNCH,
    SIZE,
    advised_workspace,
    async_test,
    copy_example,
    long_line_workspace,
    make_app,
    static_text,
    wait_for,
    wait_loaded,
)
from tuneadvisor.tui.advice_widgets import DiffView, FindingCard, FindingsPanel
from tuneadvisor.tui.dialogs import ApplyScreen
from tuneadvisor.tui.screens import MainScreen
from tuneadvisor.workspace.apply import tuned_name
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import load_workspace


def example_inputs(directory: Path) -> Inputs:
    return Inputs(
        profiles=(str(directory / "24752610.lprof"),), job=str(directory / "mnist.sbatch")
    )


def tab_label(screen: MainScreen, pane: str) -> str:
    return screen.query_one(TabbedContent).get_tab(pane).label.plain


def cards(screen: MainScreen) -> list[FindingCard]:
    return list(screen.query(FindingCard))


def notifications(app: App[Any]) -> list[Notification]:
    return list(app._notifications)


async def show_tab(pilot: Pilot[Any], key: str) -> None:
    await pilot.press(key)
    await pilot.pause()


@async_test
async def test_findings_of_the_example_with_evidence_and_suggestions(tmp_path: Path) -> None:
    workspace = load_workspace(example_inputs(copy_example(tmp_path)))
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        assert tab_label(screen, "findings") == "Findings (1)"
        await show_tab(pilot, "2")
        assert screen.query_one(TabbedContent).active == "findings"
        (card,) = cards(screen)
        assert app.focused is card  # the first finding has the keyboard
        assert card.border_title == "warning · dataloader-bound"
        assert card.has_class("-warning")
        text = static_text(card)
        assert text.startswith("Training waits for the DataLoader\n")
        assert "\nDataLoader share of the training function (%): 80.1\n" in text
        assert "\ncores per task of the measured run: 1 core\n" in text
        # sized in one step by the step-time model
        assert "\nsuggest  --cpus-per-task=8  num_workers=7\n" in text
        # The rationale is one paragraph for the widget to wrap, not the rule file's lines.
        assert "the GPU waits while the DataLoader decodes" in text
        assert "see https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html" in text

        groups = [static_text(w) for w in screen.query(".findings-group").results(Static)]
        assert groups == ["input-pipeline"]
        assert static_text(screen.query_one("#findings-view", Static)) == "1 finding: 1 warning"
        plan = static_text(screen.query_one("#plan", Static))
        assert "#SBATCH --cpus-per-task=8  because dataloader-bound" in plan
        assert "num_workers = 7" in plan
        # and what the plan is expected to buy, with where each figure came from
        prediction = screen.query_one("#prediction", Static)
        assert prediction.border_title == "Prediction"
        shown = static_text(prediction)
        assert shown.startswith("expected ") and "samples/s" in shown
        assert "num_workers=7, --cpus-per-task=8" in shown
        assert "measured, the profile" in shown and "estimated" in shown
        # The launch line passes --num-workers, so the change goes there: no manual note.
        assert not screen.query("#advice-notes")
        sharpen = screen.query_one("#sharpen", Static)
        assert sharpen.border_title == "Inputs that would sharpen the advice"
        assert "(--seff or --sacct)" in static_text(sharpen)


@async_test
async def test_the_top_finding_shows_on_the_profile_tab(tmp_path: Path) -> None:
    app = make_app(advised_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.query_one(TabbedContent).active == "profile"
        bar = screen.query_one("#advice-bar", Static)
        assert bar.display
        # The error outranks the warning, though the warning comes first by cause.
        # the keys before the title: a narrow screen cuts the line's end, never "press 2"
        assert static_text(bar).startswith(
            "error tasks-gpus-mismatch (1 more, press 2): More tasks than GPUs"
        )
        assert bar.has_class("-error")
        assert tab_label(screen, "findings") == "Findings (2)"


@async_test
async def test_findings_are_grouped_by_cause_and_j_k_move_between_them(tmp_path: Path) -> None:
    app = make_app(advised_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await show_tab(pilot, "2")
        panel = screen.query_one(FindingsPanel)
        order = [
            w.border_title if isinstance(w, FindingCard) else static_text(w)
            for w in panel.query_children(".findings-group, FindingCard").results(Static)
        ]
        assert order == [
            "distributed",
            "error · tasks-gpus-mismatch",
            "input-pipeline",
            "warning · dataloader-bound",
        ]
        first, second = cards(screen)
        assert "suggest  export NCCL_DEBUG=INFO" in static_text(first)
        assert "references" not in static_text(first)  # none given: no "see" lines
        assert app.focused is first
        await pilot.press("j")
        assert app.focused is second
        await pilot.press("j")  # stays on the last one
        assert app.focused is second
        await pilot.press("k")
        assert app.focused is first
        await pilot.press("tab")  # tab moves on too
        assert app.focused is second
        assert static_text(screen.query_one("#findings-view", Static)) == (
            "2 findings: 1 error, 1 warning"
        )
        plan = static_text(screen.query_one("#plan", Static))
        assert "export NCCL_DEBUG=INFO" in plan and "because tasks-gpus-mismatch" in plan


@async_test
async def test_no_findings_still_lists_what_would_sharpen_the_advice(tmp_path: Path) -> None:
    app = make_app(advised_workspace(tmp_path, findings=()))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        assert tab_label(screen, "findings") == "Findings (0)"
        assert "no findings" in static_text(screen.query_one("#advice-bar", Static))
        await show_tab(pilot, "2")
        assert static_text(screen.query_one("#findings-view", Static)) == "no findings"
        assert cards(screen) == []
        assert not screen.query("#plan")
        assert "GPU metrics" in static_text(screen.query_one("#sharpen", Static))
        assert app.focused is screen.query_one(FindingsPanel)
        await pilot.press("j")  # no finding to go to: no crash
        # Nothing to write: the job tab says so and offers no apply.
        await show_tab(pilot, "3")
        assert static_text(screen.query_one("#diff-status", Static)) == "no changes suggested"
        assert screen.check_action("apply", ()) is False
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


@async_test
async def test_job_tab_shows_the_diff_beside_the_script_and_the_patch(tmp_path: Path) -> None:
    app = make_app(advised_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        await show_tab(pilot, "3")
        script = screen.query_one("#job-pane")
        diff = screen.query_one("#diff-pane")
        assert diff.display
        assert diff.region.x > script.region.x and diff.region.y == script.region.y
        job_diff = static_text(screen.query_one("#job-diff", DiffView)).splitlines()
        assert job_diff[0] == "--- a/mnist.sbatch"
        assert "-#SBATCH --cpus-per-task=1" in job_diff
        assert "+#SBATCH --cpus-per-task=4" in job_diff
        patch_title = static_text(screen.query_one("#patch-title", Static))
        assert patch_title.startswith("Training-script patch (train.py)")
        assert "+import os" in static_text(screen.query_one("#script-patch", DiffView))
        assert diff.border_subtitle == "a: write the tuned job script"


@async_test
async def test_diff_lines_are_coloured_by_kind(tmp_path: Path) -> None:
    app = make_app(advised_workspace(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        view = screen.query_one("#job-diff", DiffView)
        added = view.get_component_rich_style("diff--added", partial=True)
        removed = view.get_component_rich_style("diff--removed", partial=True)
        assert added != removed and added.color is not None
        styled = {line.plain: line.style for line in view.shown}
        assert styled["+#SBATCH --cpus-per-task=4"] == added
        assert styled["-#SBATCH --cpus-per-task=1"] == removed
        assert styled[" #SBATCH --nodes=1"] == ""  # context lines keep the default
        # Within the changed lines, the changed word stands out: "1" went, "4" came.
        for line, word in (
            ("-#SBATCH --cpus-per-task=1", "1"),
            ("+#SBATCH --cpus-per-task=4", "4"),
        ):
            shown = next(t for t in view.shown if t.plain == line)
            marked = [shown.plain[s.start : s.end] for s in shown.spans]
            assert marked == [word], marked


@async_test
async def test_changed_lines_wrap_and_context_is_cut_at_100_columns(tmp_path: Path) -> None:
    """A launch line longer than the pane: the changed word is on screen at 100 columns,
    and nothing needs scrolling sideways (the script wraps under its own text)."""
    app = make_app(long_line_workspace(tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await wait_loaded(pilot)
        await show_tab(pilot, "3")
        view = screen.query_one("#job-diff", DiffView)
        pane = screen.query_one("#diff-pane")
        width = view.content_region.width
        assert width < len(LONG_LAUNCH)  # the line does not fit: it must wrap
        changed = [t for t in view.shown if t.plain.startswith(("-srun", "+srun"))]
        assert [t.plain[1:] for t in changed] == [LONG_LAUNCH.format(workers=w) for w in (1, 4)]
        assert all(not t.no_wrap and t.overflow == "fold" for t in changed)
        context = [t for t in view.shown if t.plain.startswith(" #SBATCH --job-name")]
        assert context and context[0].no_wrap and context[0].overflow == "ellipsis"
        assert pane.virtual_size.width <= pane.size.width  # no sideways scrolling
        script = screen.query_one("#job-pane")
        assert script.virtual_size.width <= script.size.width
        for line, word in zip(changed, ("1", "4"), strict=True):
            assert [line.plain[s.start : s.end] for s in line.spans] == [word]


@async_test
async def test_narrow_terminal_stacks_the_diff_under_the_script(tmp_path: Path) -> None:
    app = make_app(advised_workspace(tmp_path))
    async with app.run_test(size=(70, 40)) as pilot:
        screen = await wait_loaded(pilot)
        await show_tab(pilot, "3")
        script = screen.query_one("#job-pane")
        diff = screen.query_one("#diff-pane")
        assert diff.region.y > script.region.y and diff.region.x == script.region.x


@async_test
async def test_apply_asks_first_and_n_writes_nothing(tmp_path: Path) -> None:
    example = copy_example(tmp_path)
    workspace = load_workspace(example_inputs(example))
    before = sorted(p.name for p in example.iterdir())
    app = make_app(workspace)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.check_action("apply", ()) is False  # only on the Job script tab
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        await show_tab(pilot, "3")
        assert screen.check_action("apply", ()) is True
        await pilot.press("a")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ApplyScreen)
        tuned = tuned_name(example / "mnist.sbatch")
        question = static_text(dialog.query_one("#apply-question", Static))
        assert question == f"Write tuned job script to {tuned}? (y/n)"
        writes = static_text(dialog.query_one("#apply-writes", Static))
        assert f"{tuned}: the tuned job script: --cpus-per-task=8" in writes
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ApplyScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        await pilot.pause(0.2)
    assert sorted(p.name for p in example.iterdir()) == before
    assert notifications(app) == []


@async_test
async def test_apply_y_writes_the_tuned_job_beside_the_job(tmp_path: Path) -> None:
    example = copy_example(tmp_path)
    job = example / "mnist.sbatch"
    original = job.read_bytes()
    app = make_app(load_workspace(example_inputs(example)))
    tuned = tuned_name(job)
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await show_tab(pilot, "3")
        await pilot.press("a")
        await pilot.pause()
        await pilot.press("y")
        await wait_for(pilot, lambda: bool(notifications(app)))
        assert isinstance(app.screen, MainScreen)
        (note,) = notifications(app)
        assert note.title == "Written" and note.severity == "information"
        assert note.message == f"wrote {tuned}"
    assert tuned.exists()
    assert "#SBATCH --cpus-per-task=8 " in tuned.read_text()
    assert job.read_bytes() == original  # never in place


@async_test
async def test_apply_failure_is_one_line_in_a_notification(tmp_path: Path) -> None:
    example = copy_example(tmp_path)
    tuned = tuned_name(example / "mnist.sbatch")
    tuned.mkdir()  # something that is not a file is in the way
    app = make_app(load_workspace(example_inputs(example)))
    async with app.run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await show_tab(pilot, "3")
        await pilot.press("a", "y")
        await wait_for(pilot, lambda: bool(notifications(app)))
        (note,) = notifications(app)
        assert note.severity == "error" and note.title == "Not written"
        assert note.message.startswith(f"{tuned}: cannot write")
        assert "\n" not in note.message
        assert app.return_code is None  # the app goes on
    assert tuned.is_dir()
