"""Each rank's CPU affinity in a watch: the kernel's list text, the share of a rank on its
node, the live finding, the recording (old recordings still load) and the summary line."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tuneadvisor.advisor.engine import evaluate
from tuneadvisor.metrics.affinity import affinity_facts, cpu_list, cpu_list_text, rank_bindings
from tuneadvisor.metrics.recording import RecordingHeader, RecordingWriter, parse_recording
from tuneadvisor.metrics.snapshot import (
    ROLE_LAUNCHER,
    ROLE_MAIN,
    ROLE_WORKER,
    ProcSample,
    Snapshot,
)
from tuneadvisor.present.watch_summary import binding_lines
from tuneadvisor.tui.watch_state import binding_text, short_ranks
from tuneadvisor.watch.session import live_facts
from tuneadvisor.workspace.rule_files import default_rules_dir, load_rules


@given(st.frozensets(st.integers(min_value=0, max_value=511)))
def test_cpu_list_text_round_trips(cpus: frozenset[int]) -> None:
    text = cpu_list_text(cpus)
    assert cpu_list(text) == cpus
    assert " " not in text and text.count("-") <= len(cpus)


def test_cpu_list_reads_the_kernels_text_and_leaves_out_the_rest() -> None:
    assert cpu_list_text({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11"
    assert cpu_list("0-3,8") == {0, 1, 2, 3, 8}
    assert cpu_list("x,2,4-a,0-99999999") == {2}  # a crafted recording


def _ddp(*ranks: str, launcher: str = "0-31", node: str | None = None) -> tuple[ProcSample, ...]:
    """srun's tasks on a node: a launcher holding the allocation, one main per rank."""
    procs = [ProcSample(pid=100, role=ROLE_LAUNCHER, affinity=launcher, node=node)]
    for rank, cpus in enumerate(ranks):
        procs.append(
            ProcSample(pid=200 + rank, role=ROLE_MAIN, rank=rank, affinity=cpus, node=node)
        )
        procs.append(ProcSample(pid=300 + rank, ppid=200 + rank, role=ROLE_WORKER, affinity=cpus))
    return tuple(procs)


def test_ranks_bound_to_one_core_of_their_eight_are_short() -> None:
    """--ntasks-per-node=4 --cpus-per-task=8, srun binding each task to one core."""
    bindings = rank_bindings(_ddp("0", "1", "2", "3"))
    assert [(b.rank, len(b.cpus), b.share, b.short) for b in bindings] == [
        (0, 1, 8.0, True),
        (1, 1, 8.0, True),
        (2, 1, 8.0, True),
        (3, 1, 8.0, True),
    ]
    assert bindings[0].text() == "rank 0: 1 CPU (0) of a share of 8"


def test_ranks_with_their_share_or_sharing_the_node_are_not_short() -> None:
    bound = rank_bindings(_ddp("0-7", "8-15", "16-23", "24-31"))
    shared = rank_bindings(_ddp("0-31", "0-31", "0-31", "0-31"))  # auto binding off
    assert not any(b.short for b in bound + shared)
    # 10 CPUs for 4 ranks: 2 each is half a CPU short, no fault
    assert not any(b.short for b in rank_bindings(_ddp("0-1", "2-3", "4-5", "6-9", launcher="0-9")))


def test_each_node_has_its_own_share() -> None:
    procs = _ddp("0", "1", node="a") + _ddp("0-15", "16-31", node="b")
    assert {(b.node, b.rank): b.short for b in rank_bindings(procs)} == {
        ("a", 0): True,
        ("a", 1): True,
        ("b", 0): False,
        ("b", 1): False,
    }


def test_no_affinity_no_bindings_no_facts() -> None:
    procs = (ProcSample(pid=1, role=ROLE_MAIN), ProcSample(pid=2, role=ROLE_LAUNCHER))
    assert rank_bindings(procs) == []
    assert affinity_facts([Snapshot(t=0.0, procs=procs)]) == {}
    assert binding_lines([Snapshot(t=0.0, procs=procs)]) == []


def test_the_live_finding_fires_on_short_ranks_only() -> None:
    rules = load_rules([default_rules_dir()])
    short = [Snapshot(t=float(t), procs=_ddp("0", "1", "2-9", "3")) for t in range(3)]
    facts = live_facts(short, {})
    assert facts["host.proc.affinity.short_ranks"] == 3
    assert facts["host.proc.affinity.min_cpus"] == 1
    finding = next(f for f in evaluate(rules, facts).findings if f.id == "rank-cpus-bound-live")
    where = next(e.value for e in finding.evidence if e.label == "where")
    assert where == (
        "rank 0: 1 CPU (0) of a share of 8; rank 1: 1 CPU (1) of a share of 8; "
        "rank 3: 1 CPU (3) of a share of 8"
    )
    right = [Snapshot(t=0.0, procs=_ddp("0-7", "8-15", "16-23", "24-31"))]
    ids = evaluate(rules, live_facts(right, {})).ids()
    assert "rank-cpus-bound-live" not in ids


def test_summary_and_screen_say_each_ranks_cpus() -> None:
    procs = _ddp("0", "8-15")
    # the last round came after the processes ended: the newest one with affinity is shown
    snaps = [Snapshot(t=0.0, procs=procs), Snapshot(t=1.0)]
    assert binding_lines(snaps) == [
        "CPU binding: rank 0: 1 CPU (0) of a share of 16 (bound short); "
        "rank 1: 8 CPUs (8-15) of a share of 16 (bound short)"
    ]
    assert short_ranks(procs) == {(None, 200), (None, 201)}
    assert binding_text(procs[1], procs) == "CPUs 0 (1) of a share of 16: bound short"
    assert binding_text(procs[0], procs) == "CPUs 0-31 (32)"  # the launcher: no share


def test_recording_keeps_affinity_and_old_recordings_load(tmp_path: Path) -> None:
    path = tmp_path / "rec.jsonl"
    writer = RecordingWriter(path, RecordingHeader(interval_s=1.0, target="job 7"))
    writer.write(Snapshot(t=5.0, procs=_ddp("0", "1-7", launcher="0-7")))
    writer.close()
    lines = path.read_text().splitlines()
    assert json.loads(lines[1])["procs"][1]["affinity"] == "0"
    back = parse_recording(path.read_text()).snapshots[0]
    assert [p.affinity for p in back.procs] == ["0-7", "0", "0", "1-7", "1-7"]
    assert [b.short for b in rank_bindings(back.procs)] == [True, False]
    # A recording written before the field: every process loads, its affinity unknown.
    old = [json.loads(line) for line in lines]
    for proc in old[1]["procs"]:
        del proc["affinity"]
    text = "\n".join(json.dumps(obj) for obj in old) + "\n"
    procs = parse_recording(text).snapshots[0].procs
    assert len(procs) == 5 and all(p.affinity is None for p in procs)
    assert affinity_facts(parse_recording(text).snapshots) == {}
