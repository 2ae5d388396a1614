"""Each panel of the watch screen alone: mounted in a bare app with the screen's stylesheet
and handed a ``ScreenState`` built here, with no session, sampler or WatchApp behind it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rich.text import Text
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import DataTable, Static

import tuneadvisor.tui
from tests.tui.test_watch_app import async_test
from tuneadvisor.advisor.findings import Evidence, Finding, Severity, Suggestion
from tuneadvisor.metrics.model import GpuSample, HostSample
from tuneadvisor.metrics.snapshot import GpuProcess, ProcSample, Snapshot
from tuneadvisor.tui.level_chart import LevelChart
from tuneadvisor.tui.watch_panels import (
    CorePanel,
    GpuPanel,
    LiveFindingsPanel,
    MarksLine,
    ProcessPanel,
    RequestsLine,
    StatePanel,
    StatusLine,
)
from tuneadvisor.tui.watch_state import ScreenState, status_text
from tuneadvisor.watch.replay import Playback
from tuneadvisor.watch.session import LiveFinding, LiveState, WatchSpan

CSS = Path(tuneadvisor.tui.__file__).parent / "watch.tcss"


class OnePanel(App[None]):
    """A bare app holding one panel, styled as on the watch screen."""

    CSS_PATH = CSS

    def __init__(self, panel: Widget) -> None:
        super().__init__()
        self.panel = panel

    def compose(self) -> ComposeResult:
        yield self.panel


def state_of(
    rounds: list[Snapshot],
    *,
    job: Mapping[str, object] | None = None,
    findings: tuple[LiveFinding, ...] = (),
    window_s: float = 60.0,
    zoom_label: str = "last 1 min",
    gpu_index: int = 0,
    paused: bool = False,
    ended: bool = False,
    playback: Playback | None = None,
) -> ScreenState:
    """The screen's state after ``rounds`` (a watch started at t=100), all in the window."""
    live = LiveState(latest=rounds[-1] if rounds else None, findings=findings,
                     rounds=len(rounds), started=100.0, job=job or {}, interval_s=0.5,
                     window_s=window_s)  # fmt: skip
    return ScreenState(live=live, span=WatchSpan.of(rounds), zoom_label=zoom_label,
                       gpu_index=gpu_index, paused=paused, ended=ended,
                       playback=playback)  # fmt: skip


def text_of(widget: Static) -> str:
    content = widget.content
    return content.plain if isinstance(content, Text) else str(content)


def gpu(index: int, util: float, mem: float) -> GpuSample:
    return GpuSample(index=index, uuid=f"GPU-{index}", name="A100", util_pct=util,
                     mem_used_mib=mem, mem_total_mib=40000.0, power_w=100.0,
                     power_limit_w=400.0, temp_c=40.0, sm_clock_mhz=1410.0)  # fmt: skip


async def shown(pilot: Pilot[None], panel: StatePanel, state: ScreenState) -> None:
    panel.state = state
    await pilot.pause()


@async_test
async def test_gpu_panel_draws_each_gpu_over_the_window_and_marks_the_selected_one() -> None:
    # GPU 0 busy, then idle; GPU 1 half full of memory throughout
    rounds = [Snapshot(t=float(i), gpus=(gpu(0, 100.0 if i < 2 else 0.0, 0.0),
                                         gpu(1, 0.0, 20000.0))) for i in range(4)]  # fmt: skip
    panel = GpuPanel(id="gpus")
    async with OnePanel(panel).run_test(size=(80, 12)) as pilot:
        await shown(pilot, panel, state_of(rounds, gpu_index=1))
        labels = list(panel.query(".gpu-label").results(Static))
        assert [text_of(s)[:8] for s in labels] == ["  GPU 0 ", "▶ GPU 1 "]
        assert "0/40000 MiB  100/400 W  40°C  SM 1410 MHz" in text_of(labels[0])
        assert [s.has_class("selected") for s in labels] == [False, True]
        util0, mem0, util1, mem1 = (c.render().plain for c in panel.query(LevelChart))
        assert util0.endswith(" ██▁▁   0%")  # two busy rounds, then two idle, newest at right
        assert mem1.endswith(" ▅▅▅▅  50%") and util1.endswith(" ▁▁▁▁   0%")
        assert mem0.startswith("mem ")
        assert panel.border_title == "GPUs"


@async_test
async def test_gpu_panel_shows_sm_activity_beside_utilization_where_the_gpu_gives_it() -> None:
    """The H200's recorded CUDA graph of tiny kernels: utilization 100 %, SM activity 0.3 %;
    the SM chart appears with the first round that has it, and the subtitle says which is
    which. A GPU without GPM keeps its two charts."""
    from dataclasses import replace

    busy = replace(gpu(0, 100.0, 0.0), name="NVIDIA H200", sm_active_pct=0.31,
                   tensor_active_pct=0.0, dram_active_pct=0.0)  # fmt: skip
    rounds = [Snapshot(t=0.0, gpus=(gpu(0, 100.0, 0.0), gpu(1, 50.0, 0.0)))]
    rounds += [Snapshot(t=float(i), gpus=(busy, gpu(1, 50.0, 0.0))) for i in (1, 2, 3)]
    panel = GpuPanel(id="gpus")
    async with OnePanel(panel).run_test(size=(100, 12)) as pilot:
        await shown(pilot, panel, state_of(rounds[:1]))
        assert len(panel.query(LevelChart)) == 4 and panel.border_subtitle == ""
        await shown(pilot, panel, state_of(rounds))
        util0, sm0, mem0, util1, mem1 = (c.render().plain for c in panel.query(LevelChart))
        assert util0.startswith("util ") and util0.endswith(" 100%")
        assert sm0.startswith("SM ") and sm0.endswith("   0%")  # 0.31 % of the SMs busy
        assert mem0.startswith("mem ") and util1.startswith("util ") and mem1.startswith("mem ")
        assert panel.border_subtitle == "util: time a kernel ran · SM: SMs busy"
        label = text_of(next(iter(panel.query(".gpu-label").results(Static))))
        assert label.endswith("tensor 0%  DRAM 0%")


@async_test
async def test_a_narrow_gpu_panel_breaks_between_fields_and_spaces_its_charts() -> None:
    """At 100x30 the panel is half the screen: the GPU's line wraps between its fields
    ("410/700 W" stays whole) and the SM chart stands apart from util's value."""
    from dataclasses import replace

    busy = replace(gpu(0, 100.0, 0.0), name="NVIDIA H200", sm_active_pct=0.31, power_w=410.0,
                   power_limit_w=700.0, tensor_active_pct=0.0, dram_active_pct=0.0)  # fmt: skip
    rounds = [Snapshot(t=float(i), gpus=(busy,)) for i in range(3)]
    panel = GpuPanel(id="gpus")
    async with OnePanel(panel).run_test(size=(48, 12)) as pilot:
        await shown(pilot, panel, state_of(rounds))
        label = text_of(next(iter(panel.query(".gpu-label").results(Static))))
        lines = label.splitlines()
        assert len(lines) > 1 and all(len(line) <= panel.content_region.width for line in lines)
        assert any("410/700 W" in line for line in lines), label
        util, sm, _mem = panel.query(LevelChart)
        assert sm.region.x >= util.region.right + 2


@async_test
async def test_gpu_panel_without_gpus_says_why_and_gives_way_when_they_come() -> None:
    panel = GpuPanel(id="gpus")
    async with OnePanel(panel).run_test(size=(80, 12)) as pilot:
        await shown(pilot, panel, state_of([Snapshot(t=0.0)]))
        assert [text_of(s) for s in panel.query(".gpu-none").results(Static)] == ["no GPU data"]
        # A reason without the prefix gets it once; one with it is not doubled
        await shown(pilot, panel, state_of([Snapshot(t=1.0, no_data=("GPU: NVML failed",))]))
        assert text_of(panel.query_one(".gpu-none", Static)) == "no GPU data: GPU: NVML failed"
        await shown(pilot, panel, state_of([Snapshot(t=2.0, gpus=(gpu(0, 50.0, 0.0),))]))
        assert not panel.query(".gpu-none") and len(panel.query(".gpu-label")) == 1


@async_test
async def test_core_panel_shows_the_cores_the_height_leaves_room_for() -> None:
    cores = tuple(100.0 if i == 0 else 0.0 for i in range(20))
    rounds = [Snapshot(t=float(i), host=HostSample(cpu_pct_per_core=cores)) for i in range(3)]
    panel = CorePanel(id="cores")
    async with OnePanel(panel).run_test(size=(60, 30)) as pilot:  # 30 rows: 30 - 22 = 8 cores
        await shown(pilot, panel, state_of(rounds))
        charts = [c.render().plain for c in panel.query(LevelChart)]
        assert len(charts) == 8
        assert charts[0].startswith("cpu0") and charts[0].endswith("███  100%")
        assert charts[7].startswith("cpu7") and charts[7].endswith("▁▁▁    0%")
        assert text_of(panel.query_one(".note", Static)) == "(first 8 of 20 cores)"


def test_status_says_paused_replay_position_zoom_and_the_samplers_cost() -> None:
    rounds = [Snapshot(t=float(i), sampler_cpu_pct=pct) for i, pct in enumerate((0.4, 0.6))]
    playback = Playback(t=12.34, duration=60.0, speed=10.0, paused=True, ended=False, part=1,
                        parts=1, target="pid 7")  # fmt: skip
    state = state_of(rounds, paused=True, playback=playback, zoom_label="last 30 s")
    assert status_text(state) == (
        "PAUSED REPLAY t=12.3 s of 60.0 s, x10 · last 30 s · 2 rounds every 0.5 s · "
        "sampler 0.5 % of a core · window 60 s"
    )
    ended = state_of(rounds, ended=True, zoom_label="whole run")
    assert status_text(ended).startswith("ENDED · whole run · 2 rounds")


def test_status_after_one_round_is_singular_and_has_no_sampler_figure_yet() -> None:
    state = state_of([Snapshot(t=0.0)])
    assert status_text(state) == (
        "last 1 min · 1 round every 0.5 s · sampler: from round 2 · window 60 s"
    )


@async_test
async def test_status_and_requests_lines_alone() -> None:
    host = HostSample(proc_cpu_pct=150.0, workers=2)
    rounds = [Snapshot(t=float(i), host=HostSample(proc_rss_mib=rss)) for i, rss in
              enumerate((1000.0, 3000.0))] + [Snapshot(t=2.0, host=host)]  # fmt: skip
    job = {"job.cpus_per_task": 4, "job.mem_mib": 8192.0}
    status, requests = StatusLine("", id="status"), RequestsLine("", id="requests")
    async with OnePanel(status).run_test() as pilot:
        await shown(pilot, status, state_of(rounds, job=job))
        assert text_of(status).startswith("last 1 min · 3 rounds every 0.5 s")
    async with OnePanel(requests).run_test() as pilot:
        await shown(pilot, requests, state_of(rounds, job=job))
        assert text_of(requests) == (
            "Requests vs use: cores used 1.50 of 4 requested · memory peak 3000 MiB of "
            "8192 MiB requested · up to 2 DataLoader workers"
        )
        await shown(pilot, requests, state_of([Snapshot(t=0.0)]))
        assert text_of(requests) == "Requests vs use: no process tree"


@async_test
async def test_requests_line_keeps_the_workers_the_run_had_after_it_ended() -> None:
    """The last round of a run that ended sees no worker: the line says the most seen, not
    "0 DataLoader workers" (issue 24, point 12)."""
    had = HostSample(proc_cpu_pct=120.0, proc_rss_mib=900.0, workers=1)
    ended = HostSample(proc_cpu_pct=0.0, proc_rss_mib=0.0, workers=0)
    rounds = [Snapshot(t=0.0, host=had), Snapshot(t=1.0, host=ended)]
    requests = RequestsLine("", id="requests")
    async with OnePanel(requests).run_test() as pilot:
        await shown(pilot, requests, state_of(rounds))
        assert text_of(requests).endswith(" · up to 1 DataLoader worker")
        await shown(pilot, requests, state_of([Snapshot(t=0.0, host=ended)]))
        assert text_of(requests).endswith(" · no DataLoader workers")


@async_test
async def test_marks_line_shows_the_newest_six_and_hides_without_marks() -> None:
    rounds = [Snapshot(t=100.0 + i, mark=f"m{i}" if i % 2 else None) for i in range(16)]
    panel = MarksLine("", id="marks")
    async with OnePanel(panel).run_test() as pilot:
        await shown(pilot, panel, state_of(rounds))  # 8 marks, at 1, 3, ... 15 s
        assert panel.display
        assert text_of(panel) == (
            "Marks: (2 earlier) 5.0 s m5 · 7.0 s m7 · 9.0 s m9 · 11.0 s m11 · 13.0 s m13 · "
            "15.0 s m15"
        )
        await shown(pilot, panel, state_of(rounds[:1]))
        assert not panel.display


def procs(cpu: float) -> tuple[ProcSample, ...]:
    return (
        ProcSample(pid=7, ppid=1, name="python", cmdline="python train.py", role="main",
                   cpu_pct=cpu, rss_mib=2048.0, state="running", threads=9, user="ann"),
        ProcSample(pid=8, ppid=7, name="python", role="worker", cpu_pct=5.0, rss_mib=300.0,
                   denied=("io",)),
        ProcSample(pid=3, ppid=1, name="[watcher]", role="other"),
    )  # fmt: skip


@async_test
async def test_process_panel_draws_the_tree_and_keeps_the_selection_across_rounds() -> None:
    used = (GpuProcess(gpu_key="GPU-0", pid=7, used_mib=1000.0),
            GpuProcess(gpu_key="GPU-1", pid=7, used_mib=500.0))  # fmt: skip
    panel = ProcessPanel(id="proc-box")
    async with OnePanel(panel).run_test(size=(120, 20)) as pilot:
        await shown(pilot, panel, state_of([Snapshot(t=0.0, procs=procs(99.0), gpu_procs=used)]))
        table: DataTable[str] = panel.query_one("#procs", DataTable)
        rows = [[str(c) for c in table.get_row_at(r)] for r in range(table.row_count)]
        # Tree order by pid: 3, then 7 with its worker 8 indented; GPU MiB summed over GPUs
        assert [r[0] for r in rows] == ["3", "7", "8"]
        assert rows[1] == ["7", "main", "99", "2048", "running", "9", "1500", "python train.py"]
        assert rows[2][-1] == "  python" and rows[2][6] == "–"
        # A cell is read as markup: the name's brackets are escaped, shown as they are
        assert Text.from_markup(rows[0][-1]).plain == "[watcher]"
        await pilot.press("down")
        detail = panel.query_one("#proc-detail", Static)
        assert text_of(detail) == (
            "pid 7 (ann) python train.py · read – MiB/s, write – MiB/s · 1 worker"
        )
        # The next round: pid 2 came, so pid 7 moves down a row and stays selected
        newer = (ProcSample(pid=2, ppid=1, name="sshd"), *procs(50.0))
        await shown(pilot, panel, state_of([Snapshot(t=1.0, procs=newer)]))
        assert table.cursor_row == 2 and text_of(detail).startswith("pid 7 (ann)")
        await pilot.press("down")
        assert text_of(detail).endswith("· not readable: io")
        await shown(pilot, panel, state_of([Snapshot(t=2.0)]))
        assert table.row_count == 0 and text_of(detail) == "no processes"


@async_test
async def test_process_panel_marks_a_rank_bound_to_fewer_cpus_than_its_share() -> None:
    """srun's task holds CPUs 0-7; rank 0 is bound to CPU 0 (a share of 4 for 2 ranks)."""
    tree = (
        ProcSample(pid=10, ppid=1, name="bash", cmdline="bash job.sh", role="launcher",
                   affinity="0-7"),
        ProcSample(pid=11, ppid=10, name="python", cmdline="python train.py", role="main",
                   rank=0, affinity="0"),
        ProcSample(pid=12, ppid=10, name="python", cmdline="python train.py", role="main",
                   rank=1, affinity="4-7"),
    )  # fmt: skip
    panel = ProcessPanel(id="proc-box")
    async with OnePanel(panel).run_test(size=(120, 20)) as pilot:
        await shown(pilot, panel, state_of([Snapshot(t=0.0, procs=tree)]))
        table: DataTable[str] = panel.query_one("#procs", DataTable)
        roles = [str(table.get_row_at(r)[1]) for r in range(table.row_count)]
        assert roles == ["launcher", "main r0 !cpu", "main r1"]
        await pilot.press("down")
        detail = text_of(panel.query_one("#proc-detail", Static))
        assert detail.endswith("· CPUs 0 (1) of a share of 4: bound short")
        await pilot.press("down")
        detail = text_of(panel.query_one("#proc-detail", Static))
        assert detail.endswith("· CPUs 4-7 (4) of a share of 4")


@async_test
async def test_findings_panel_lists_the_live_findings_as_text() -> None:
    finding = Finding(id="dataloader-bound-live", title="The DataLoader is the bottleneck",
                      severity=Severity.WARNING, group="input", rationale="", references=(),
                      evidence=(Evidence("GPU util", "31 %"),), suggest=Suggestion(),
                      rule_path="x.toml")  # fmt: skip
    live = LiveFinding(finding, window_start=10.0, window_end=40.0, rounds=60, since=12.0)
    panel = LiveFindingsPanel("Findings: waiting for samples", id="findings")
    async with OnePanel(panel).run_test() as pilot:
        assert text_of(panel) == "Findings: waiting for samples"
        await shown(pilot, panel, state_of([Snapshot(t=0.0)], window_s=30.0))
        # no GPU in the rounds: "none" says why none could show (the bundled replay's case)
        assert text_of(panel) == (
            "Findings: none in the last 30 s; no GPU sampled: the GPU rules cannot fire"
        )
        await shown(pilot, panel, state_of([Snapshot(t=0.0)], findings=(live,), window_s=30.0))
        lines = text_of(panel).splitlines()
        assert lines[0] == "Findings (evidence: the last 30 s):"
        assert lines[1].startswith(
            "[warning] dataloader-bound-live: The DataLoader is the bottleneck · GPU util 31 % "
            "· window 10-40 s (60 rounds)"
        )
