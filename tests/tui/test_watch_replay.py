"""`tuneadvisor open REC.jsonl`: a watch recording replayed on the watch screen.

The recordings are real: one made here by `watch --headless --record` of the DataLoader
stand-in (GPUs from the A100 fixture through the stand-in pynvml, with the runner of
tests/integration/test_watch_cli.py), whose printed summary the replay must agree with; and
tests/fixtures/watch/replay-a100.jsonl, recorded the same way with a mark
(make_replay_recording.py), for the snapshot. Tests wait for states, not durations, except
where they check that nothing moves (pause).
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from tests.integration.test_watch_cli import tuneadvisor as run_tuneadvisor
from tests.tui.test_watch_app import async_test
from tuneadvisor.cli import main
from tuneadvisor.metrics.recording import parse_recording
from tuneadvisor.tui.watch_app import WatchApp
from tuneadvisor.tui.watch_state import replay_position
from tuneadvisor.watch.replay import DEFAULT_SPEED, SPEEDS, ReplaySession, load_replay
from tuneadvisor.workspace.rule_files import load_rules, rule_dirs

REPO = Path(__file__).resolve().parent.parent.parent
WATCH = REPO / "tests" / "fixtures" / "watch"
FIXTURE = WATCH / "replay-a100.jsonl"
SIZE = (140, 44)
SnapCompare = Callable[..., bool]


@dataclass(frozen=True)
class Recorded:
    path: Path
    summary: str  # what `watch --headless` printed at the end


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """A real headless watch of the stand-in (main busy, two workers) for three seconds."""
    path = tmp_path_factory.mktemp("rec") / "watch.jsonl"
    # No Slurm variables reach the target: the live job facts come from its environment,
    # which a recording does not keep (the replay has none).
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    loader = subprocess.Popen(
        [sys.executable, str(WATCH / "loader.py"), "fork", "2", "busy"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert loader.stdout is not None and loader.stdout.readline().strip() == "ready"
        result = run_tuneadvisor(
            "watch", "--headless", "--pid", str(loader.pid), "--interval", "0.1",
            "--duration", "3", "--record", str(path), fake_gpu=True,
        )  # fmt: skip
    finally:
        loader.kill()
        loader.wait()
    assert result.returncode == 0, result.stderr
    return Recorded(path, result.stdout)


@dataclass(frozen=True)
class Printed:
    """A finding as the headless summary printed it (times in s since the watch started)."""

    severity: str
    id: str
    window: tuple[float, float]
    rounds: int
    since: float


def summary_findings(summary: str) -> list[Printed]:
    heads = re.findall(
        r"^  \[(\w+)\] ([\w-]+): .*\n\s+window: ([\d.]+)-([\d.]+) s, (\d+) rounds; "
        r"firing since ([\d.]+) s",
        summary,
        re.M,
    )
    return [
        Printed(sev, fid, (float(a), float(b)), int(n), float(since))
        for sev, fid, a, b, n, since in heads
    ]


def cut_line(text: str, number: int) -> str:
    lines = text.splitlines(keepends=True)
    lines[number - 1] = lines[number - 1][:30] + "\n"
    return "".join(lines)


def replay(path: Path, speed: float = DEFAULT_SPEED) -> ReplaySession:
    return load_replay(path, load_rules(rule_dirs([])), speed=speed)


async def until(pilot: Pilot[Any], done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert time.monotonic() < deadline, f"never: {what}"
        await pilot.pause(0.05)


def drawn_end(app: WatchApp) -> bool:
    shown = app._shown_playback
    return shown is not None and shown.ended


def shown(app: WatchApp, selector: str = "#status") -> str:
    """A widget's text as drawn (markup applied)."""
    return str(app.query_one(selector, Static).render())


@pytest.mark.slow
def test_replay_ends_with_the_findings_of_the_headless_summary(recorded: Recorded) -> None:
    expected = summary_findings(recorded.summary)
    assert expected, recorded.summary  # the A100 fixture has an idle GPU: something fires
    rounds = int(re.match(r".*?: (\d+) rounds", recorded.summary).group(1))  # type: ignore[union-attr]

    async def scenario() -> None:
        session = replay(recorded.path)
        app = WatchApp(session, title="replay")
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: drawn_end(app), "the end of the recording")
            state = session.state()
            assert state.rounds == rounds
            assert [(f.finding.severity.value, f.finding.id, f.rounds) for f in state.findings] == [
                (p.severity, p.id, p.rounds) for p in expected
            ]
            # The same rounds evaluated: the same times, but for the few ms the watch took
            # to its first round (its clock starts before; a recording's at that round).
            for live, printed in zip(state.findings, expected, strict=True):
                assert abs(live.window_start - printed.window[0]) < 0.25
                assert abs(live.window_end - printed.window[1]) < 0.25
                assert abs(live.since - printed.since) < 0.25, (live, printed)
            drawn = shown(app, "#findings")
            for printed in expected:
                assert f"[{printed.severity}] {printed.id}:" in drawn  # as drawn, not markup
            assert "end of recording" in shown(app) and "whole run" in shown(app)
            assert "x10" in shown(app)

    asyncio.run(scenario())


@async_test
async def test_pause_stops_the_playback_and_resume_goes_on() -> None:
    session = replay(FIXTURE, speed=1.0)  # a round every 0.5 s
    app = WatchApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: session.state().rounds >= 2, "two rounds")
        await pilot.press("p")
        assert session.paused and "PAUSED REPLAY" in shown(app)
        at = session.playback().t, session.state().rounds
        await pilot.pause(1.5)  # three rounds would have played
        assert (session.playback().t, session.state().rounds) == at
        await pilot.press("p")
        assert not session.paused
        await until(pilot, lambda: session.state().rounds > at[1], "the playback resumed")
        await pilot.press("p", "r")  # restart and end work while paused, and show
        await until(pilot, lambda: app.shown_rounds == 1, "the first round again")
        await pilot.press("e")
        await until(pilot, lambda: drawn_end(app), "the end, paused")
        assert "PAUSED REPLAY end of recording" in shown(app)


@async_test
async def test_speed_keys_end_and_restart() -> None:
    session = replay(FIXTURE, speed=0.25)  # 80 s for the whole file unless sped up
    app = WatchApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("right_square_bracket")
        assert session.speed == 0.5 and "x0.5" in shown(app)
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert session.speed == SPEEDS[0] == 0.25  # the slowest stays the slowest
        for _ in SPEEDS:
            await pilot.press("right_square_bracket")
        assert session.speed == SPEEDS[-1] and f"x{SPEEDS[-1]:g}" in shown(app)
        await until(pilot, lambda: drawn_end(app), "the end at the top speed")
        total = session.state().rounds
        assert total == len(parse_recording(FIXTURE.read_text()).snapshots)
        assert "end of recording, 10.0 s" in shown(app)
        assert shown(app, "#marks") == "Marks: 4.5 s warm-up done"  # the recorded mark
        await pilot.press("m")  # not silently nothing (the README documents m)
        await until(pilot, lambda: any("m marks a live watch" in str(n.message)
                                       for n in app._notifications), "m's answer")  # fmt: skip
        assert shown(app, "#marks") == "Marks: 4.5 s warm-up done"  # no mark added
        for _ in SPEEDS:
            await pilot.press("left_square_bracket")
        assert session.speed == SPEEDS[0]
        await pilot.press("r")
        await until(pilot, lambda: session.state().rounds < total, "back to the start")
        assert not session.playback().ended
        await pilot.press("e")
        await until(pilot, lambda: drawn_end(app), "the end, at once")
        assert session.state().rounds == total


@async_test
async def test_m_in_the_bundled_replay_leaves_the_finding_readable_at_100x30() -> None:
    """The README's step 4 at 100x30: `m`'s notice once covered the findings panel."""
    session = replay(REPO / "examples" / "mnist" / "watch-24752610.jsonl")
    app = WatchApp(session)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await pilot.press("e")
        await until(pilot, lambda: drawn_end(app), "the end")
        finding = "loader-workers-starved-live"
        await until(pilot, lambda: finding in shown(app, "#findings"), "the finding")
        await pilot.press("m")
        await until(pilot, lambda: bool(app.screen.query("Toast")), "m's notice on screen")
        await pilot.pause()
        findings = app.query_one("#findings").region
        for toast in app.screen.query("Toast"):
            assert toast.region.area and not toast.region.overlaps(findings), toast.region
        assert finding in shown(app, "#findings")


def test_pacing_follows_the_recorded_clock_times_the_speed() -> None:
    """Driven step by step with a clock of our own: no thread, no sleeping."""
    now = [100.0]
    rec = parse_recording(FIXTURE.read_text())
    session = ReplaySession(rec, load_rules(rule_dirs([])), speed=1.0, clock=lambda: now[0])

    def play() -> int:
        while session.step() == 0.0:
            pass
        return session.state().rounds

    def due(recorded_s: float) -> int:  # (each round came a few ms after its 0.5 s)
        return sum(1 for snap in rec.snapshots if snap.t <= recorded_s)

    assert play() == 1  # the first round at once; the next one is 0.5 s away
    now[0] += 1.25
    assert play() == due(1.25) == 3
    session.set_speed(10.0)
    now[0] += 0.1  # one recorded second
    assert play() == due(2.25) == 5
    session.set_paused(True)
    now[0] += 100.0
    assert play() == 5
    session.set_paused(False)
    now[0] += 0.05
    assert play() == due(2.75) == 6
    session.to_end()
    assert play() == len(rec.snapshots) and session.playback().ended


def test_appended_recordings_play_one_after_the_other_each_on_its_own(tmp_path: Path) -> None:
    path = tmp_path / "twice.jsonl"
    text = FIXTURE.read_text()
    path.write_text(text + text)  # `watch --record` to the same file twice
    session = replay(path)
    assert len(session.parts) == 2
    session.to_end()
    while not session.playback().ended:
        session.step()
    one = len(parse_recording(text).snapshots)
    assert session.state().rounds == one  # the second run's store: nothing of the first
    assert all(f.rounds <= one for f in session.state().findings)
    playback = session.playback()
    assert (playback.part, playback.parts, round(playback.duration, 1)) == (2, 2, 10.0)
    assert replay_position(playback) == "recording 2 of 2 (pid 557), end of recording, 10.0 s, x10"


def test_the_window_of_the_recorded_watch_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    lines = FIXTURE.read_text().splitlines(keepends=True)
    path.write_text(
        lines[0].replace('"interval_s":0.5', '"interval_s":0.5,"window_s":3') + "".join(lines[1:])
    )
    session = replay(path)
    session.to_end()
    while not session.playback().ended:
        session.step()
    assert session.window_s == 3.0
    assert {f.rounds for f in session.state().findings} <= {7}  # 3 s at 0.5 s


def test_replay_screen_at_the_end(snap_compare: SnapCompare) -> None:
    app = WatchApp(replay(FIXTURE), title="tuneadvisor open: replay-a100.jsonl (replay)")

    async def at_the_end(pilot: Pilot[Any]) -> None:
        await pilot.press("e")
        await until(pilot, lambda: drawn_end(app), "the end")

    assert snap_compare(app, terminal_size=SIZE, run_before=at_the_end)


# ---------------------------------------------------------------------- the command line


@pytest.fixture
def screens(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Which screen `open` would run, and with what (no terminal needed)."""
    seen: dict[str, Any] = {}

    def watch_screen(session: ReplaySession, title: str, **refusal: str) -> int:
        seen.update(watch=session, title=title)
        return 0

    def run_open(load: Callable[[], Any], title: str, quick: Any = None) -> int:
        seen.update(open=load, title=title)
        return 0

    monkeypatch.setattr("tuneadvisor.commands.watch.show_screen", watch_screen)
    monkeypatch.setattr("tuneadvisor.tui.app.run_open", run_open)
    return seen


def test_open_a_recording_replays_it(screens: dict[str, Any]) -> None:
    assert main(["open", str(FIXTURE)]) == 0
    session = screens["watch"]
    assert isinstance(session, ReplaySession) and session.speed == DEFAULT_SPEED
    assert screens["title"] == f"tuneadvisor open: {FIXTURE} (replay)"
    assert "open" not in screens


def test_open_metrics_recording_alone_replays_it_at_the_speed_asked(
    screens: dict[str, Any],
) -> None:
    assert main(["open", "--metrics", str(FIXTURE), "--speed", "50"]) == 0
    assert isinstance(screens["watch"], ReplaySession) and screens["watch"].speed == 50.0


def test_with_a_job_script_the_recording_is_metrics_of_the_main_screen(
    screens: dict[str, Any],
) -> None:
    job = REPO / "tests" / "fixtures" / "jobscripts" / "single_gpu_kernprof.sh"
    assert main(["open", str(FIXTURE), "--job", str(job)]) == 0
    assert "watch" not in screens
    workspace = screens["open"]()  # loads: the recording was not read as a profile
    assert workspace.advice is not None and workspace.advice.facts["gpu.samples"] == 21


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda t: cut_line(t, 3),
            "broken tuneadvisor watch recording: line 3",
        ),
        (
            lambda t: t.splitlines(keepends=True)[0],
            "nothing to replay: the recording has no rounds",
        ),
    ],
)
def test_a_broken_recording_is_one_line_and_status_2(
    tmp_path: Path,
    screens: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    make: Callable[[str], str],
    message: str,
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(make(FIXTURE.read_text()))
    assert main(["open", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tuneadvisor: {bad}: {message}") and err.count("\n") == 1
    assert screens == {}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--speed", "0"], "--speed 0: must be a positive number"),
        ([str(FIXTURE)], "open: one watch recording at a time to replay it"),
    ],
)
def test_bad_replay_options(
    args: list[str], message: str, screens: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["open", str(FIXTURE), *args]) == 2
    assert capsys.readouterr().err == f"tuneadvisor: {message}\n"
    assert screens == {}


def test_a_last_line_cut_short_is_replayed_without_it_and_said(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_text(FIXTURE.read_text()[:-40])  # the node died writing the last round
    session = replay(path)
    app = WatchApp(session)

    async def scenario() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("e")
            await until(pilot, lambda: drawn_end(app), "the end")
            notes = [n.message for n in app._notifications]
            assert notes == ["line 22: cut short (the run was killed?); dropped"]

    asyncio.run(scenario())
    assert session.state().rounds == len(parse_recording(FIXTURE.read_text()).snapshots) - 1


def test_the_jobs_requests_travel_in_the_recording(tmp_path: Path) -> None:
    """A watched process that Slurm gave 2 cores and 4 GiB: the replay compares use with
    those requests as the live screen did."""
    path = tmp_path / "watch.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env |= {"SLURM_CPUS_PER_TASK": "2", "SLURM_MEM_PER_NODE": "4096"}
    loader = subprocess.Popen(
        [sys.executable, str(WATCH / "loader.py"), "fork", "1", "busy"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert loader.stdout is not None and loader.stdout.readline().strip() == "ready"
        result = run_tuneadvisor(
            "watch", "--headless", "--pid", str(loader.pid), "--interval", "0.2",
            "--duration", "1", "--window", "7", "--record", str(path),
        )  # fmt: skip
    finally:
        loader.kill()
        loader.wait()
    assert result.returncode == 0, result.stderr
    session = replay(path)
    assert session.job == {"job.cpus_per_task": 2, "job.mem_mib": 4096.0}
    assert session.window_s == 7.0
