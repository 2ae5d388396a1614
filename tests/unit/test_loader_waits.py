"""The loop's wait for its DataLoader workers, from the process tree (issue 33 §3): the bundled
replay, recorded on a machine without a GPU, leads to a finding from what it holds; workers that
sleep (a full queue, or disk reads) do not. Workers that waited for a CPU other processes held
are told from workers that need company, from the rounds' per-core readings; and a report of
the recording shows what its replay shows (issue 33, round three)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tuneadvisor.cli import main
from tuneadvisor.metrics.loader_waits import loader_facts
from tuneadvisor.metrics.model import HostSample
from tuneadvisor.metrics.recording import parse_recording
from tuneadvisor.metrics.snapshot import ROLE_MAIN, ROLE_WORKER, ProcSample, Snapshot
from tuneadvisor.watch.session import SnapshotSession
from tuneadvisor.workspace.rule_files import load_rules, rule_dirs

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "examples" / "mnist" / "watch-24752610.jsonl"
FIXTURES = ROOT / "tests" / "fixtures" / "watch"
RULE = "loader-workers-busy-live"
STARVED = "loader-workers-starved-live"


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


def test_the_bundled_cpu_only_replay_shows_the_loop_waiting_for_its_starved_worker() -> None:
    """Recorded on a shared 2-CPU machine: the worker ran in every round at a third of a core
    while other processes kept most of both CPUs busy, so the finding is the starved one, not
    "more workers"."""
    seen = _replayed(BUNDLED)
    firing = [t for t, ids in seen.items() if STARVED in ids]
    assert firing, "the first hour's replay shows no finding"
    # not before the worker has run 10 rounds (it starts at 6 s), then to the end
    assert 15.0 <= min(firing) <= 20.0
    assert max(firing) == max(seen)
    # never "more workers" beside it, and nothing from a GPU: none was sampled
    assert all(ids <= {STARVED} for ids in seen.values())


def test_a_report_of_the_bundled_recording_shows_what_its_replay_shows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`report --metrics REC` once said "Findings: none" where the replay showed the finding:
    the process facts were read by the replay only."""
    shown_at_end = _replayed(BUNDLED)[max(_replayed(BUNDLED))]
    assert main(["report", "--metrics", str(BUNDLED)]) == 0
    out = capsys.readouterr().out
    assert "Findings: none" not in out
    for finding in shown_at_end:
        assert f"] {finding}: " in out
    assert f"] {RULE}: " not in out


@pytest.mark.parametrize("name", ["storage-a100.jsonl", "replay-a100.jsonl"])
def test_workers_waiting_on_storage_are_not_the_loop_waiting_on_their_cpu(name: str) -> None:
    seen = _replayed(FIXTURES / name)
    assert not any(RULE in ids for ids in seen.values())
    assert any("input-waits-on-storage" in ids for ids in seen.values())


def _round(
    t: float,
    worker_states: list[str],
    main_cpu: float = 3.0,
    per_core: tuple[float, ...] = (),
    affinity: str | None = "0-3",
) -> Snapshot:
    procs = [
        ProcSample(pid=1, role=ROLE_MAIN, state="sleeping", cpu_pct=main_cpu, affinity=affinity)
    ]
    procs += [
        ProcSample(pid=10 + i, role=ROLE_WORKER, state=s, cpu_pct=40.0, affinity=affinity)
        for i, s in enumerate(worker_states)
    ]
    tree = main_cpu + 40.0 * len(worker_states)
    host = HostSample(
        t=t,
        cpu_pct_per_core=per_core,
        proc_cpu_pct=tree,
        main_cpu_pct=main_cpu,
        workers=len(worker_states),
    )
    return Snapshot(t=t, procs=tuple(procs), host=host)


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


def test_what_other_processes_held_is_read_on_the_cpus_the_tree_may_use() -> None:
    """Busy CPUs the job may not run on are nobody's fault of the job's; a round without an
    affinity or a per-core reading says nothing about others."""
    own = [
        _round(float(t), ["running"], per_core=(100.0, 100.0, 10.0, 10.0), affinity="2-3")
        for t in range(3)
    ]
    facts = loader_facts(own)
    # CPUs 2-3 busy 0.2 cores in all, the tree used 0.43: nobody else on them
    assert facts["host.proc.cpus_allowed.others_cores.mean"] == pytest.approx(0.0)
    assert facts["host.proc.workers.cores_each.mean"] == pytest.approx(0.4)
    shared = [
        _round(float(t), ["running", "running"], per_core=(100.0, 100.0), affinity="0-1")
        for t in range(3)
    ]
    # both CPUs full, the tree used 0.83 of them: others 1.17
    assert loader_facts(shared)["host.proc.cpus_allowed.others_cores.mean"] == pytest.approx(1.17)
    unknown = [
        _round(float(t), ["running"], per_core=(100.0, 100.0), affinity=None) for t in range(3)
    ] + [_round(3.0, ["running"], per_core=(), affinity="0-1")]
    assert "host.proc.cpus_allowed.others_cores.mean" not in loader_facts(unknown)
    beyond = [_round(0.0, ["running"], per_core=(100.0, 100.0), affinity="0-3")]
    assert "host.proc.cpus_allowed.others_cores.mean" not in loader_facts(beyond)


def _finding_ids(window: list[Snapshot]) -> set[str]:
    session = SnapshotSession(load_rules(rule_dirs([])), interval_s=1.0, window_s=60.0)
    for snap in window:
        session.add(snap)
    return {f.finding.id for f in session.state().findings}


def test_busy_workers_are_called_starved_only_where_others_held_their_cpus() -> None:
    """The same workers' states and CPU: "more workers" where the job's CPUs were its own,
    the starved finding where other processes kept them busy; never both."""
    alone = [_round(float(t), ["running"], per_core=(45.0, 2.0), affinity="0-1") for t in range(15)]
    crowded = [
        _round(float(t), ["running"], per_core=(100.0, 100.0), affinity="0-1") for t in range(15)
    ]
    assert _finding_ids(alone) == {RULE}
    assert _finding_ids(crowded) == {STARVED}


@settings(max_examples=200)
@given(
    per_core=st.lists(st.floats(0.0, 100.0), min_size=1, max_size=8),
    cpus=st.sets(st.integers(0, 9), min_size=1, max_size=6),
    worker_cpu=st.floats(0.0, 400.0),
)
def test_what_others_held_is_within_the_cpus_the_tree_may_use(
    per_core: list[float], cpus: set[int], worker_cpu: float
) -> None:
    """Never negative, never more than the tree's CPUs; absent where the reading does not
    cover them."""
    text = ",".join(map(str, sorted(cpus)))
    worker = ProcSample(pid=2, role=ROLE_WORKER, state="running", cpu_pct=worker_cpu, affinity=text)
    host = HostSample(t=0.0, cpu_pct_per_core=tuple(per_core), proc_cpu_pct=worker_cpu)
    facts = loader_facts([Snapshot(t=0.0, procs=(worker,), host=host)])
    held = facts.get("host.proc.cpus_allowed.others_cores.mean")
    if max(cpus) >= len(per_core):
        assert held is None
    else:
        assert isinstance(held, float)
        assert 0.0 <= held <= len(cpus) + 1e-9
        assert held <= sum(per_core[c] for c in cpus) / 100.0 + 1e-9
