"""The live screen through Pilot, fed by a scripted sampler behind a real WatchSession (the
rules, the ring store and the live findings are the real ones; only the readings are
scripted). Tests wait for states, never for durations."""

from __future__ import annotations

import asyncio
import functools
import re
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import Any, cast

from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import DataTable, RichLog, Static

from tuneadvisor.metrics.model import GpuSample, HostSample
from tuneadvisor.metrics.snapshot import GpuProcess, ProcSample, Snapshot
from tuneadvisor.tui.dialogs import QuitScreen
from tuneadvisor.tui.level_chart import LevelChart
from tuneadvisor.tui.watch_app import WatchApp
from tuneadvisor.tui.watch_state import tree_rows
from tuneadvisor.watch.live_run import LiveRun
from tuneadvisor.watch.output import OutputLines
from tuneadvisor.watch.program import Program
from tuneadvisor.watch.session import WatchSession
from tuneadvisor.workspace.rule_files import default_rules_dir, load_rules

U0 = "GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"
U1 = "GPU-4404041a-04cf-1ccf-9e70-f139a9b1e23c"
SIZE = (140, 44)
ROUNDS = 12
SnapCompare = Callable[..., bool]


def async_test(test: Callable[[], Coroutine[Any, Any, None]]) -> Callable[[], None]:
    """asyncio.run (no pytest async plugin); own copy so these tests do not depend on the
    `open` TUI's helpers."""

    @functools.wraps(test)
    def run() -> None:
        asyncio.run(test())

    return run


def reading(i: int) -> Snapshot:
    gpus = tuple(
        GpuSample(
            index=n,
            uuid=u,
            name="NVIDIA A100-SXM4-40GB",
            util_pct=util,
            mem_used_mib=mem,
            mem_total_mib=40960.0,
            power_w=w,
            power_limit_w=400.0,
            temp_c=41.0,
            sm_clock_mhz=1410.0,
        )
        for n, (u, util, mem, w) in enumerate(
            [(U0, 60.0 + (i % 3), 17935.0, 150.0), (U1, 0.0, 4.0, 52.3)]
        )
    )
    procs = (
        ProcSample(
            pid=100,
            ppid=1,
            name="python",
            cmdline="python train.py --epochs 3",
            role="main",
            cpu_pct=99.0,
            rss_mib=2100.0,
            state="running",
            threads=12,
            user="alice",
        ),
        ProcSample(
            pid=101,
            ppid=100,
            name="python",
            cmdline="python train.py --epochs 3",
            role="worker",
            cpu_pct=3.0,
            rss_mib=400.0,
            state="sleeping",
            threads=1,
            user="alice",
            denied=("io",),
        ),
    )
    return Snapshot(
        t=0.0,
        gpus=gpus,
        gpu_procs=(GpuProcess(gpu_key=U0, pid=100, used_mib=17920.0),),
        host=HostSample(
            cpu_pct_per_core=(100.0, 20.0, 5.0, 0.0),
            mem_used_mib=9000.0,
            proc_cpu_pct=102.0,
            proc_rss_mib=2500.0,
            proc_count=2,
            main_cpu_pct=99.0,
            workers=1,
        ),
        procs=procs,
        sampler_cpu_pct=0.5,
    )


class ScriptedSampler:
    """``ROUNDS`` readings, then one more when the test opens the gate, then the end."""

    def __init__(self) -> None:
        self.i = 0
        self.gate = threading.Event()
        self.roots_alive = True
        self.clock = 0.0

    def sample(self) -> Snapshot:
        if self.i == ROUNDS:
            self.gate.wait(60)
            self.roots_alive = False
        snap = reading(self.i)
        self.i += 1
        t = time.monotonic()
        return replace(
            snap,
            t=t,
            gpus=tuple(replace(g, t=t) for g in snap.gpus),
            host=replace(snap.host, t=t) if snap.host else None,
        )

    def close(self) -> None:
        pass


def session() -> tuple[WatchSession, ScriptedSampler]:
    sampler = ScriptedSampler()
    s = WatchSession(
        sampler,
        load_rules([default_rules_dir()]),
        interval_s=0.1,
        window_s=30,
        job={"job.cpus_per_task": 1, "job.mem_mib": 16384.0},
    )
    return s, sampler


async def wait_rounds(app: WatchApp, pilot, n: int) -> None:  # type: ignore[no-untyped-def]
    while app.source.state().rounds < n or app.shown_rounds < n:
        await pilot.pause(0.05)


def screen_text(app: WatchApp) -> str:
    """What the widgets show, as plain text: every Static, then the process table's rows."""
    parts = []
    for widget in app.screen.query(Static):
        content = widget.content
        parts.append(content.plain if isinstance(content, Text) else str(content))
    parts += [chart.render().plain for chart in app.screen.query(LevelChart)]
    table: DataTable[str] = app.query_one("#procs", DataTable)
    for row in range(table.row_count):
        parts.append(" ".join(str(cell) for cell in table.get_row_at(row)))
    return "\n".join(parts)


@async_test
async def test_live_screen_shows_gpus_cores_tree_requests_and_findings() -> None:
    s, sampler = session()
    app = WatchApp(s, title="tuneadvisor watch: pid 100")
    async with app.run_test(size=SIZE) as pilot:
        await wait_rounds(app, pilot, ROUNDS)
        # The session re-evaluates about once a second; the sampler now waits at the gate,
        # so evaluate here (what the next second would do) and draw.
        s.evaluate()
        app.refresh_view(force=True)
        await pilot.pause()
        text = screen_text(app)
        assert "GPU 0 NVIDIA A100-SXM4-40GB" in text and "GPU 1" in text
        assert "cpu0" in text and "cpu3" in text
        assert "python train.py --epochs 3" in text
        assert "worker" in text and "17920" in text  # GPU memory of the main process
        assert "cores used 1.02 of 1 requested" in text
        assert "memory peak 2500 MiB of 16384 MiB requested" in text
        # GPU 1 idle pulls the pooled mean to ~30 %: some-gpus-idle names it, and GPU 0's
        # own ~61 % is not low
        assert "some-gpus-idle" in text and "dataloader-bound-live" in text
        assert "low-gpu-util" not in text
        assert "rounds)" in text and "since" in text  # the evidence window
        sampler.gate.set()


@async_test
async def test_pause_zoom_pick_gpu_and_process_and_mark() -> None:
    s, sampler = session()
    app = WatchApp(s)
    async with app.run_test(size=SIZE) as pilot:
        await wait_rounds(app, pilot, ROUNDS)
        await pilot.press("p")
        assert app.paused and "PAUSED" in screen_text(app)
        await pilot.press("p")
        assert not app.paused
        assert "last 1 min" in screen_text(app)
        await pilot.press("plus")
        assert "last 30 s" in screen_text(app)
        for _ in range(6):
            await pilot.press("minus")
        assert "whole run" in screen_text(app)
        assert app.gpu_index == 0
        await pilot.press("g")
        assert app.gpu_index == 1 and "▶ GPU 1" in screen_text(app)
        await pilot.press("g")
        assert app.gpu_index == 0
        await pilot.press("down")
        await pilot.pause()
        assert "not readable: io" in screen_text(app)  # the worker's detail line
        await pilot.press("m")
        sampler.gate.set()  # the next round carries the mark
        while s.state().rounds <= ROUNDS:
            await pilot.pause(0.05)
        assert [x.mark for x in s.view(None) if x.mark] == ["mark 1"]


def test_tree_rows_indent_children_under_parents() -> None:
    procs = reading(0).procs
    assert [(d, p.pid) for d, p in tree_rows(procs)] == [(0, 100), (1, 101)]


def test_tree_rows_keep_nodes_apart_when_pids_repeat() -> None:
    # A merged watch of two nodes: both run pid 100 with its worker 101.
    procs = [
        ProcSample(pid=pid, ppid=ppid, node=node)
        for node in ("node2", "node1")
        for pid, ppid in ((101, 100), (100, 1))
    ]
    rows = [(d, p.node, p.pid) for d, p in tree_rows(procs)]
    assert rows == [
        (0, "node1", 100), (1, "node1", 101), (0, "node2", 100), (1, "node2", 101)
    ]  # fmt: skip


class NoGpuSampler(ScriptedSampler):
    """A node without GPUs: every round says why there is no GPU data."""

    def sample(self) -> Snapshot:
        snap = super().sample()
        why = "no GPU data: NVML did not start: NVML Shared Library Not Found"
        return replace(snap, gpus=(), gpu_procs=(), no_data=(why,))


async def screen_after(
    sampler: ScriptedSampler, rounds: int, job: dict[str, object] | None = None
) -> str:
    """The screen's text once ``rounds`` rounds of ``sampler`` are drawn."""
    s = WatchSession(sampler, load_rules([default_rules_dir()]), interval_s=0.1, window_s=30,
                     job=job)  # fmt: skip
    app = WatchApp(s)
    async with app.run_test(size=SIZE) as pilot:
        await wait_rounds(app, pilot, rounds)
        text = screen_text(app)
        sampler.gate.set()
    return text


@async_test
async def test_no_gpus_from_the_first_round_says_why() -> None:
    text = await screen_after(NoGpuSampler(), 3)
    assert "no GPU data: NVML did not start: NVML Shared Library Not Found" in text
    assert "no GPU data: no GPU data" not in text


class TwoNodeSampler(ScriptedSampler):
    """A merged watch: the same two processes on nodes a and b."""

    def sample(self) -> Snapshot:
        snap = super().sample()
        procs = tuple(replace(p, node=n) for n in ("a", "b") for p in snap.procs)
        return replace(snap, procs=procs)


@async_test
async def test_a_merged_watch_shows_use_per_node_not_sums_against_per_task_asks() -> None:
    text = await screen_after(TwoNodeSampler(), 3, job={"job.cpus_per_task": 1})
    # 99 % + 3 % CPU and 2100 + 400 MiB on each node
    assert "Use per node (asked: 1 per task): a 1.02 cores, 2500 MiB · b 1.02 cores" in text
    assert "of 1 requested" not in text
    assert text.count("python train.py --epochs 3") >= 4  # same pids, both nodes' rows drawn


# ---------------------------------------------------------------------- the program's run


class FakeProgram:
    """What the screen asks of the program ``watch -- COMMAND`` started (the real one is
    tested in tests/unit/test_watch_program.py and in tmux): it records the signals."""

    def __init__(self) -> None:
        self.pid = 4242
        self.log_path: str | None = "runs/watch.log"
        self.output = OutputLines()
        self.sent: list[str] = []
        self.running = True
        self.left_running = False
        self.wall_s = 12.3

    def _send(self, name: str) -> bool:
        self.sent.append(name)
        return self.running

    def interrupt(self) -> bool:
        return self._send("SIGINT")

    def terminate(self) -> bool:
        return self._send("SIGTERM")

    def kill(self) -> bool:
        return self._send("SIGKILL")

    def describe_end(self) -> str:
        return "still running" if self.running else "exit status 3"


SUMMARY = "tuneadvisor watch: pid 4242 (python train.py): 13 rounds\nFindings: none"


def live_run(program: FakeProgram) -> LiveRun:
    return LiveRun(
        program=cast(Program, program),
        output=program.output,
        output_title="Output of pid 4242 · all of it in runs/watch.log",
        summary=lambda: SUMMARY,
    )


def quiet_session() -> tuple[WatchSession, ScriptedSampler]:
    """No rules: nothing on screen depends on when a finding started (snapshots)."""
    sampler = ScriptedSampler()
    return WatchSession(sampler, (), interval_s=0.1, window_s=30), sampler


async def until_app(pilot: Pilot[Any], done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not done():
        assert time.monotonic() < deadline, f"never: {what}"
        await pilot.pause(0.05)


def pane_lines(app: WatchApp) -> list[str]:
    log = app.query_one("#output-log", RichLog)
    return [strip.text.rstrip() for strip in log.lines]


@async_test
async def test_the_programs_output_goes_to_its_pane_as_it_comes() -> None:
    s, sampler = quiet_session()
    program = FakeProgram()
    program.output.feed("trainer: started\nstep 1 loss 1.0\n")
    app = WatchApp(s, run=live_run(program))
    async with app.run_test(size=(100, 30)) as pilot:
        await until_app(pilot, lambda: len(pane_lines(app)) == 2, "the first lines")
        assert pane_lines(app) == ["trainer: started", "step 1 loss 1.0"]
        program.output.feed("step 2 loss 0.5\nepoch 1:  40%|####      |")
        await until_app(pilot, lambda: len(pane_lines(app)) == 3, "a new line")
        partial = app.query_one("#output-partial", Static)
        assert partial.display and str(partial.render()) == "epoch 1:  40%|####      |"
        output = app.query_one("#output")
        assert output.border_title == "Output of pid 4242 · all of it in runs/watch.log"
        assert output.region.y > app.query_one("#procs").region.y  # narrow: under the table
        await pilot.press("o")  # the pane full screen, and back
        assert app.screen.maximized is app.query_one("#output-log")
        await pilot.press("o")
        assert app.screen.maximized is None
        sampler.gate.set()


@async_test
async def test_the_trainings_progress_records_stay_out_of_the_pane() -> None:
    """Issue 33 §4: half the pane was ``TUNEADVISOR {json}`` records; the readable lines
    beside them stay, the records are said once to be left out."""
    s, sampler = quiet_session()
    program = FakeProgram()
    program.output.feed(
        'TUNEADVISOR {"event": "start", "script": "mnist_single"}\n'
        "Train Epoch: 1 [0/3000 (0%)]\tLoss: 2.299602\n"
        'TUNEADVISOR {"event": "step", "step": 1, "samples_per_s": 29.27}\n'
        "TUNEADVISOR not json: a line of the program's own\n"
    )
    app = WatchApp(s, run=live_run(program))
    async with app.run_test(size=(100, 30)) as pilot:
        await until_app(pilot, lambda: len(pane_lines(app)) == 3, "the lines")
        lines = pane_lines(app)
        assert lines[0].startswith("(the training's TUNEADVISOR {json} progress records")
        assert lines[1].startswith("Train Epoch: 1") and lines[1].endswith("Loss: 2.299602")
        assert lines[2] == "TUNEADVISOR not json: a line of the program's own"
        assert not any('"event"' in line for line in lines)
        sampler.gate.set()


@async_test
async def test_wide_the_output_is_beside_the_processes() -> None:
    s, sampler = quiet_session()
    app = WatchApp(s, run=live_run(FakeProgram()))
    async with app.run_test(size=(220, 60)) as pilot:
        await wait_rounds(app, pilot, 2)
        output, procs = app.query_one("#output").region, app.query_one("#procs").region
        assert output.x > procs.x and output.y == procs.y
        sampler.gate.set()


@async_test
async def test_ctrl_c_is_sent_to_the_program_and_the_screen_records_on() -> None:
    s, sampler = quiet_session()
    program = FakeProgram()
    app = WatchApp(s, run=live_run(program))
    async with app.run_test(size=SIZE) as pilot:
        await wait_rounds(app, pilot, ROUNDS)
        await pilot.press("ctrl+c")
        assert program.sent == ["SIGINT"] and app.is_running and not app.ended
        notes = [n.message for n in app._notifications]
        assert any("SIGINT sent to pid 4242's process group" in n for n in notes), notes
        program.running = False  # it saved its checkpoint and exited
        sampler.gate.set()  # the last round finds its processes gone
        await until_app(pilot, lambda: app.ended, "the end of the session")
        await pilot.press("ctrl+c")  # nothing of ours runs: Ctrl-C quits, as q
        await pilot.pause()
        assert not app.is_running and program.sent == ["SIGINT"]


@async_test
async def test_the_end_shows_the_status_the_summary_and_the_whole_run() -> None:
    s, sampler = quiet_session()
    program = FakeProgram()
    app = WatchApp(s, run=live_run(program))
    async with app.run_test(size=SIZE) as pilot:
        await wait_rounds(app, pilot, ROUNDS)
        assert not app.query_one("#ended").display
        program.running = False
        sampler.gate.set()
        await until_app(pilot, lambda: app._end_shown is not None, "the end drawn")
        ended = app.query_one("#ended")
        assert ended.display and not app.query_one("#proc-box").display
        assert ended.border_title == "The program ended: exit status 3 after 12.3 s · q quits"
        assert str(app.query_one("#ended-text", Static).render()) == SUMMARY
        assert "ENDED · whole run · 13 rounds" in screen_text(app)
        assert app.check_action("mark", ()) is False  # no round will carry it
        await pilot.press("q")  # ended: q quits without asking
        await pilot.pause()
        assert not app.is_running and program.sent == []


@async_test
async def test_q_while_the_program_runs_asks_stay_stop_or_leave() -> None:
    s, sampler = quiet_session()
    program = FakeProgram()
    app = WatchApp(s, run=live_run(program))
    async with app.run_test(size=SIZE) as pilot:
        await wait_rounds(app, pilot, 2)
        await pilot.press("q")
        assert isinstance(app.screen, QuitScreen)
        assert "runs/watch.log" in str(app.screen.query_one("#quit-choices", Static).render())
        await pilot.press("escape")  # stay
        assert not isinstance(app.screen, QuitScreen) and app.is_running
        await pilot.press("q", "s")  # stop: SIGTERM, and the screen waits for the end
        assert program.sent == ["SIGTERM"] and app.is_running
        program.running = False
        await until_app(pilot, lambda: not app.is_running, "the screen to close")
        sampler.gate.set()
    assert not program.left_running

    s, sampler = quiet_session()
    program = FakeProgram()
    app = WatchApp(s, run=live_run(program))
    async with app.run_test(size=SIZE) as pilot:
        await wait_rounds(app, pilot, 2)
        await pilot.press("q", "l")  # leave it running: no signal, the command detaches it
        await pilot.pause()
        assert not app.is_running and program.left_running and program.sent == []
        sampler.gate.set()


@async_test
async def test_a_busy_core_and_a_busy_gpu_are_drawn_full_with_their_values() -> None:
    s, sampler = session()
    app = WatchApp(s)
    async with app.run_test(size=SIZE) as pilot:
        await wait_rounds(app, pilot, ROUNDS)
        charts = list(app.query_one("#cores").query(LevelChart))
        busy, idle = charts[0].render().plain, charts[3].render().plain
        assert busy.startswith("cpu0") and busy.endswith("█" * ROUNDS + "  100%")
        assert idle.endswith("▁" * ROUNDS + "    0%")
        util, mem = app.query_one("#gpus").query(LevelChart)[:2]
        # 60-62 % of the fixed 0-100 scale: bars at 4 of 8 steps, the newest value beside
        assert re.fullmatch(rf"util +▅{{{ROUNDS}}} +6[012]%", util.render().plain)
        assert re.fullmatch(rf"mem +▄{{{ROUNDS}}} +44%", mem.render().plain)  # of 40960 MiB
        sampler.gate.set()


def _snapshot_app(program: FakeProgram) -> tuple[WatchApp, ScriptedSampler]:
    s, sampler = quiet_session()
    return WatchApp(s, title="tuneadvisor watch: pid 4242 (python train.py)",
                    run=live_run(program)), sampler  # fmt: skip


def test_snapshot_output_pane_at_100x30(snap_compare: SnapCompare) -> None:
    program = FakeProgram()
    program.output.feed("".join(f"step {i} loss {1 / i:.4f}\n" for i in range(1, 30)))
    program.output.feed("epoch 1:  40%|####      | 29/72")
    app, sampler = _snapshot_app(program)

    async def running(pilot: Pilot[Any]) -> None:
        await wait_rounds(app, pilot, ROUNDS)
        await until_app(pilot, lambda: len(pane_lines(app)) == 29, "the output")

    try:
        assert snap_compare(app, terminal_size=(100, 30), run_before=running)
    finally:
        sampler.gate.set()


def test_snapshot_finished_at_100x30(snap_compare: SnapCompare) -> None:
    program = FakeProgram()
    program.output.feed("step 1 loss 1.0\nSIGINT at step 1: checkpoint saved, exiting\n")
    app, sampler = _snapshot_app(program)

    async def finished(pilot: Pilot[Any]) -> None:
        await wait_rounds(app, pilot, ROUNDS)
        program.running = False
        sampler.gate.set()
        await until_app(pilot, lambda: app._end_shown is not None, "the end")
        await until_app(pilot, lambda: len(pane_lines(app)) == 2, "the output")

    assert snap_compare(app, terminal_size=(100, 30), run_before=finished)


@async_test
async def test_the_pane_follows_the_newest_line_unless_scrolled_up() -> None:
    s, sampler = quiet_session()
    program = FakeProgram()
    app = WatchApp(s, run=live_run(program))

    async def fed(n: int) -> None:
        program.output.feed("".join(f"line {i}\n" for i in range(n)))
        total = program.output.count
        await until_app(pilot, lambda: app._output_count == total, "the lines in the pane")
        await pilot.pause()

    async with app.run_test(size=(100, 30)) as pilot:
        log = app.query_one("#output-log", RichLog)
        await fed(40)
        assert log.max_scroll_y > 0 and log.scroll_y == log.max_scroll_y
        app.query_one("#output").styles.height = 4  # the pane shrinks (findings came)
        await pilot.pause()
        await fed(5)
        assert log.scroll_y == log.max_scroll_y  # still following
        log.scroll_to(y=3, animate=False, immediate=True)  # the user scrolls up to read
        await fed(10)
        assert log.scroll_y == 3
        log.scroll_end(animate=False, immediate=True)  # and back down: following again
        await fed(10)
        assert log.scroll_y == log.max_scroll_y
        sampler.gate.set()
