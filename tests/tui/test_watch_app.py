"""The live screen through Pilot, fed by a scripted sampler behind a real WatchSession (the
rules, the ring store and the live findings are the real ones; only the readings are
scripted). Tests wait for states, never for durations."""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import replace
from typing import Any

from rich.text import Text
from textual.widgets import DataTable, Static

from tuneadvisor.metrics.model import GpuSample, HostSample
from tuneadvisor.metrics.snapshot import GpuProcess, ProcSample, Snapshot
from tuneadvisor.session.rule_files import default_rules_dir, load_rules
from tuneadvisor.tui.watch_app import WatchApp, tree_rows
from tuneadvisor.watch.session import WatchSession

U0 = "GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"
U1 = "GPU-4404041a-04cf-1ccf-9e70-f139a9b1e23c"
SIZE = (140, 44)
ROUNDS = 12


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
