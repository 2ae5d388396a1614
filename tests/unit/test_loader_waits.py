"""The loop's wait for its DataLoader workers, from the process tree (issue 33 §3): the bundled
replay, recorded on a machine without a GPU, leads to a finding from what it holds; workers that
sleep (a full queue, or disk reads) do not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuneadvisor.metrics.loader_waits import loader_facts
from tuneadvisor.metrics.recording import parse_recording
from tuneadvisor.metrics.snapshot import ROLE_MAIN, ROLE_WORKER, ProcSample, Snapshot
from tuneadvisor.watch.session import SnapshotSession
from tuneadvisor.workspace.rule_files import load_rules, rule_dirs

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "examples" / "mnist" / "watch-24752610.jsonl"
FIXTURES = ROOT / "tests" / "fixtures" / "watch"
RULE = "loader-workers-busy-live"


def _replayed(path: Path) -> dict[float, set[str]]:
    """The live findings after each round, as the replay screen evaluates them."""
    recording = parse_recording(path.read_text())
    window = recording.header.window_s if recording.header else None
    session = SnapshotSession(load_rules(rule_dirs([])), interval_s=1.0, window_s=window or 60.0)
    seen: dict[float, set[str]] = {}
    for snap in recording.snapshots:
        session.add(snap)
        seen[snap.t] = {f.finding.id for f in session.state().findings}
    return seen


def test_the_bundled_cpu_only_replay_shows_the_loop_waiting_for_its_worker() -> None:
    seen = _replayed(BUNDLED)
    firing = [t for t, ids in seen.items() if RULE in ids]
    assert firing, "the first hour's replay shows no finding"
    # not before the worker has run 10 rounds (it starts at 6 s), then to the end
    assert 15.0 <= min(firing) <= 20.0
    assert max(firing) == max(seen)
    # and nothing from a GPU: none was sampled
    assert all(ids <= {RULE} for ids in seen.values())


@pytest.mark.parametrize("name", ["storage-a100.jsonl", "replay-a100.jsonl"])
def test_workers_waiting_on_storage_are_not_the_loop_waiting_on_their_cpu(name: str) -> None:
    seen = _replayed(FIXTURES / name)
    assert not any(RULE in ids for ids in seen.values())
    assert any("input-waits-on-storage" in ids for ids in seen.values())


def _round(t: float, worker_states: list[str], main_cpu: float = 3.0) -> Snapshot:
    procs = [ProcSample(pid=1, role=ROLE_MAIN, state="sleeping", cpu_pct=main_cpu, affinity="0-3")]
    procs += [
        ProcSample(pid=10 + i, role=ROLE_WORKER, state=s, cpu_pct=40.0, affinity="0-3")
        for i, s in enumerate(worker_states)
    ]
    return Snapshot(t=t, procs=tuple(procs))


def test_the_facts_count_each_worker_in_each_round() -> None:
    window = [
        _round(0.0, []),  # before the workers: not a round of theirs
        _round(1.0, ["running", "sleeping"]),
        _round(2.0, ["running", "running"]),
        _round(3.0, ["disk-sleep", "running"]),  # a disk read is not running
    ]
    facts = loader_facts(window)
    assert facts["host.proc.workers.rounds"] == 3
    assert facts["host.proc.workers.running_share"] == pytest.approx(4 / 6)
    assert facts["host.proc.workers.cores.mean"] == pytest.approx(0.8)
    assert facts["host.proc.cpus_allowed"] == 4


def test_no_worker_seen_gives_no_worker_facts() -> None:
    facts = loader_facts([_round(0.0, []), _round(1.0, [])])
    assert "host.proc.workers.running_share" not in facts
    assert "host.proc.workers.rounds" not in facts
