"""The Steps tab of `open` (issue 22, point 6): a torch.profiler trace's breakdown per rank and
per step as stacked bars with a legend, the straggler, one rank's tables (``r``: the next), at
the smallest and a large terminal; and no such tab without a trace."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import Static, TabbedContent

from tests.trace_sets import cpu_only, ddp_resnet
from tests.tui.helpers import (
    app_with,
    async_test,
    make_app,
    mnist_workspace,
    static_text,
    wait_for,
    wait_loaded,
)
from tuneadvisor.present.trace_text import (
    CPU_ONLY_NOTE,
    KIND_LABELS,
    SHOWN_KINDS,
    breakdown,
    kind_cells,
)
from tuneadvisor.profile.trace.model import TraceSet
from tuneadvisor.tui.steps import BAR, GapsTable, NamedTable, StackedBars, StepsPane
from tuneadvisor.workspace.load import Workspace

SIZES = [(100, 30), (220, 60)]


def _traced(traces: TraceSet) -> Workspace:
    return Workspace(analysis=None, job=None, traces=traces)


def _bar_lines(bars: StackedBars) -> list[str]:
    return bars.render().plain.split("\n")


@pytest.mark.parametrize("size", SIZES)
@async_test
async def test_a_trace_alone_opens_on_steps_with_a_bar_per_rank(size: tuple[int, int]) -> None:
    app = make_app(_traced(ddp_resnet()))
    async with app.run_test(size=size) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.query_one(TabbedContent).active == "steps"
        bars = screen.query_one("#rank-bars", StackedBars)
        lines = _bar_lines(bars)
        width = bars.content_size.width
        assert all(len(line) <= width for line in lines), (width, lines)
        rows = [line for line in lines if line.startswith("rank ")]
        assert [r.split(" ", 2)[1] for r in rows] == ["0", "1", "2", "3"]
        assert all(r.endswith("120.00 ms a step") for r in rows)
        # the bars fill the width the labels and notes leave, at either size
        assert all(r.count(BAR) == width - len("rank 0 ") - len(" 120.00 ms a step") for r in rows)
        legend = " ".join(lines[len(rows) :])
        for kind in SHOWN_KINDS:
            assert f"{BAR} {KIND_LABELS[kind]} " in legend  # every kind of the DDP trace
        assert "communication 20.4 %" in legend  # 24.5 of 120 ms over the four ranks


@async_test
async def test_each_kind_has_its_own_colour_in_a_bar() -> None:
    app = make_app(_traced(ddp_resnet()))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await wait_loaded(pilot)
        text = screen.query_one("#rank-bars", StackedBars).render()
        first_row = text.plain.split("\n")[0]
        spans = [s for s in text.spans if s.end <= len(first_row)]
        drawn = [s for s in spans if set(first_row[s.start : s.end]) == {BAR}]
        styles = [str(s.style) for s in drawn]
        rank0 = breakdown(ddp_resnet().ranks[0])
        assert rank0 is not None
        cells = kind_cells(rank0.shares, first_row.count(BAR))
        assert len(cells) >= 7  # at 100 columns memset's 0.25 % may get no cell
        assert [s.end - s.start for s in drawn] == [n for _, n in cells]
        assert len(set(styles)) == len(styles), styles


@async_test
async def test_the_tables_start_on_the_straggler_and_r_moves_to_the_next_rank() -> None:
    app = make_app(_traced(ddp_resnet()))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await wait_loaded(pilot)
        said = static_text(screen.query_one("#steps-said", Static))
        assert said.startswith("straggler: rank 2 works 28 % longer a step")
        assert "pin_memory did not take effect" in said
        kernels = screen.query_one("#top-kernels", NamedTable)
        assert kernels.border_title == "Top kernels · rank 2" and kernels.row_count == 4
        assert str(kernels.get_row_at(0)[0]) == "158.46 ms"  # rank 2's slower GEMM
        assert screen.query_one("#host-gaps", GapsTable).row_count == 3
        await pilot.press("r")
        assert kernels.border_title == "Top kernels · rank 3"
        assert str(kernels.get_row_at(0)[0]) == "118.00 ms"
        await pilot.press("r")
        assert kernels.border_title == "Top kernels · rank 0"


@pytest.mark.parametrize(("size", "side_by_side"), [((100, 30), False), ((220, 60), True)])
@async_test
async def test_kernels_and_ops_sit_side_by_side_only_where_names_have_room(
    size: tuple[int, int], side_by_side: bool
) -> None:
    app = make_app(_traced(ddp_resnet()))
    async with app.run_test(size=size) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.pause()
        kernels = screen.query_one("#top-kernels").region
        ops = screen.query_one("#top-ops").region
        assert (kernels.y == ops.y and ops.x >= kernels.right) is side_by_side
        assert (ops.y >= kernels.bottom) is not side_by_side


@async_test
async def test_every_step_has_a_bar() -> None:
    app = make_app(_traced(ddp_resnet()))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await wait_loaded(pilot)
        steps = screen.query_one("#step-bars", StackedBars)
        rows = [line for line in _bar_lines(steps) if "#" in line]
        assert len(rows) == 12 and rows[7].startswith("rank 2 #13 ")


@async_test
async def test_a_cpu_only_trace_says_what_it_cannot_show() -> None:
    app = make_app(_traced(cpu_only()))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await wait_loaded(pilot)
        assert screen.query_one("#top-kernels").display is False  # no device: no kernels
        assert screen.query_one("#top-ops").display is True
        notes = static_text(screen.query_one("#steps-notes", Static))
        assert CPU_ONLY_NOTE in " ".join(notes.split())
        legend = _bar_lines(screen.query_one("#rank-bars", StackedBars))[-1]
        assert "kernel" not in legend and "CPU op 78.9 %" in legend
        assert screen.check_action("next_rank", ()) is False  # one rank: no `r`


@async_test
async def test_a_workspace_without_traces_has_no_steps_tab(tmp_path: Path) -> None:
    app = make_app(mnist_workspace(tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await wait_loaded(pilot)
        assert not screen.query(StepsPane)
        assert [p.id for p in screen.query_one(TabbedContent).query("TabPane")] == [
            "profile", "findings", "job",
        ]  # fmt: skip
        await pilot.press("4")
        assert screen.query_one(TabbedContent).active == "profile"
        # not silently nothing: the key says why there is no Steps tab
        await wait_for(pilot, lambda: any("no Steps tab" in str(n.message)
                                          for n in app._notifications))  # fmt: skip


@async_test
async def test_a_trace_alone_says_where_its_steps_are_on_the_profile_tab() -> None:
    app = make_app(_traced(cpu_only()))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await wait_loaded(pilot)
        await pilot.press("1")
        said = " ".join(static_text(screen.query_one("#empty", Static)).split())
        assert "Steps tab (4)" in said and "no profile given" not in said


@async_test
async def test_a_profile_and_a_trace_together_keep_profile_first(tmp_path: Path) -> None:
    app = make_app(replace(mnist_workspace(tmp_path), traces=ddp_resnet()))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await wait_loaded(pilot)
        tabs = screen.query_one(TabbedContent)
        assert tabs.active == "profile"
        await pilot.press("4")
        assert tabs.active == "steps"
        assert screen.query_one(StepsPane).has_focus


@async_test
async def test_a_trace_read_after_the_quick_stage_brings_its_steps_tab_forward() -> None:
    quick = Workspace(analysis=None, job=None, partial=True)  # the quick stage reads no trace
    app = app_with(load=lambda: _traced(ddp_resnet()), quick=lambda: quick)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await wait_loaded(pilot)
        await wait_for(pilot, lambda: bool(screen.query(StepsPane)))
        await pilot.pause()
        assert screen.query_one(TabbedContent).active == "steps"


NAMES_FROM_A_FILE = ("\x1b]52;c;cHduZWQ=\x07copy", "\x1b[2J\x1b[Hclear", "\x1b]0;title\x07",
                     "a\nFindings: none", "\r\x9b2Jk", "[bold]x[/]")  # fmt: skip


@async_test
async def test_names_from_the_trace_reach_the_terminal_only_as_visible_text() -> None:
    """Issue 34, point 7: kernel, op, gap and file names drawn by the Steps tab are the
    shared sanitiser's (name_safe): an OSC 52, a clear-screen, a title or a line break in a
    trace is shown as \\xNN, never sent to the terminal."""
    ranks = []
    for i, rank in enumerate(ddp_resnet().ranks):
        bad = NAMES_FROM_A_FILE[i % len(NAMES_FROM_A_FILE)]
        ranks.append(replace(
            rank,
            rank=None,
            path=f"/t/{bad}.pt.trace.json",
            top_kernels=tuple(replace(k, name=bad + k.name) for k in rank.top_kernels),
            top_ops=tuple(replace(o, name=o.name + bad) for o in rank.top_ops),
            host_gaps=tuple(replace(g, before=bad, after=bad) for g in rank.host_gaps),
        ))  # fmt: skip
    app = make_app(_traced(TraceSet(ranks=tuple(ranks), ordered_by="file")))
    async with app.run_test(size=(220, 60)) as pilot:
        screen = await wait_loaded(pilot)
        for _ in ranks:
            shown = [
                str(screen.query_one(f"#{t}").border_title) for t in ("top-kernels", "top-ops")
            ]
            for table in (NamedTable, GapsTable):
                for grid in screen.query(table):
                    shown += [str(c) for r in range(grid.row_count) for c in grid.get_row_at(r)]
            shown += [static_text(screen.query_one("#steps-said", Static))]
            assert shown and not any("\x1b" in s or "\r" in s or "\x9b" in s for s in shown)
            assert not any("\nFindings" in s for s in shown)
            await pilot.press("r")
