"""Merging the rounds of several nodes (`watch --job` across nodes), from real streams.

Each "node" is a real `tuneadvisor watch --stream` subprocess (SLURMD_NODENAME names it, as
slurmd does in a step) watching the same real process with the same stand-in A100 GPUs:
the worst case for collisions (same pids, same GPU UUIDs), which the node tags keep apart.
The srun that joins them on a cluster is tested in tests/integration/test_watch_job.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tuneadvisor.errors import InputError
from tuneadvisor.metrics.recording import RecordingHeader, RecordingWriter, parse_recording
from tuneadvisor.metrics.snapshot import ROLE_MAIN, ROLE_WORKER, Snapshot
from tuneadvisor.present.watch_summary import render_summary
from tuneadvisor.watch.merge import (
    MergedSession,
    for_display,
    machines,
    merge_nodes,
    node_of,
    same_machine_note,
)
from tuneadvisor.watch.remote import RemoteSamplers

REPO = Path(__file__).resolve().parents[2]
LOADER = REPO / "tests" / "fixtures" / "watch" / "loader.py"
FAKE = REPO / "tests" / "fixtures" / "nvml" / "fake"
A100 = REPO / "tests" / "fixtures" / "nvml" / "a100-2gpu.json"
U0 = "GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"  # GPU 0 of the A100 fixture
pytestmark = pytest.mark.slow


def env(node: str) -> dict[str, str]:
    return {
        **os.environ,
        "SLURMD_NODENAME": node,
        "PYTHONPATH": f"{FAKE}{os.pathsep}{REPO}",
        "TUNEADVISOR_FAKE_NVML": str(A100),
    }


def stream_args(pid: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "tuneadvisor", "watch", "--pid", str(pid), "--headless",
            "--stream", "--interval", "0.2", *extra]  # fmt: skip


@pytest.fixture(scope="module")
def loader() -> Iterator[int]:
    """A DataLoader stand-in: a main process and one forked worker."""
    main = subprocess.Popen(
        [sys.executable, str(LOADER), "fork", "1", "idle"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert main.stdout is not None and main.stdout.readline().strip() == "ready"
    yield main.pid
    main.kill()
    main.wait()


@pytest.fixture(scope="module")
def streams(loader: int) -> dict[str, str]:
    """Two nodes' streams, recorded from two real samplers run side by side."""
    procs = {
        node: subprocess.Popen(
            stream_args(loader, "--duration", "1.5"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env(node),
            cwd=REPO,
        )
        for node in ("node1", "node2")
    }
    out = {}
    for node, proc in procs.items():
        text, err = proc.communicate(timeout=120)
        assert proc.returncode == 0 and err == "", err
        out[node] = text
    return out


def test_a_stream_is_a_recording_naming_its_node(streams: dict[str, str]) -> None:
    rec = parse_recording(streams["node1"])
    assert rec.header is not None and rec.header.node == "node1"
    assert len(rec.snapshots) >= 5
    assert "Sampler" not in streams["node1"]  # no summary: stdout is the stream
    last = rec.snapshots[-1]
    assert {p.role for p in last.procs} == {ROLE_MAIN, ROLE_WORKER}
    assert last.gpus[0].gpu_key == U0


def merged_rounds(streams: dict[str, str]) -> list[Snapshot]:
    one = parse_recording(streams["node1"]).snapshots
    two = parse_recording(streams["node2"]).snapshots
    return [
        merge_nodes([("node1", a), ("node2", b)], t=float(i))
        for i, (a, b) in enumerate(zip(one, two, strict=False))
    ]


def test_merged_rounds_keep_the_nodes_apart(streams: dict[str, str], loader: int) -> None:
    rounds = merged_rounds(streams)
    last = rounds[-1]
    keys = [g.gpu_key for g in last.gpus]
    assert keys[:2] == [f"node1:{U0}", f"node1:{keys[1].split(':', 1)[1]}"]
    assert len(set(keys)) == 4 and {node_of(g) for g in last.gpus} == {"node1", "node2"}
    assert all(gp.gpu_key in keys for gp in last.gpu_procs)
    mains = [(p.node, p.pid) for p in last.procs if p.role == ROLE_MAIN]
    assert mains == [("node1", loader), ("node2", loader)]  # the same pid on both nodes
    one = parse_recording(streams["node1"]).snapshots[-1]
    assert last.host is not None and one.host is not None
    assert len(last.host.cpu_pct_per_core) == 2 * len(one.host.cpu_pct_per_core)
    assert last.host.proc_count == 2 * (one.host.proc_count or 0)
    assert last.host.workers == 2
    assert all(n.startswith(("node1: ", "node2: ")) for n in last.no_data)


def test_nodes_on_one_machine_count_its_cores_and_memory_once(streams: dict[str, str]) -> None:
    """Both samplers ran here: their headers carry this boot's id, so the merge counts the
    machine once (the multi-node test cluster's nodes are namespaces of one machine too)."""
    headers = {node: parse_recording(text).header for node, text in streams.items()}
    boots = {node: h.boot_id if h else None for node, h in headers.items()}
    here = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert boots == {"node1": here, "node2": here}
    one = parse_recording(streams["node1"]).snapshots[-1]
    two = parse_recording(streams["node2"]).snapshots[-1]
    merged = merge_nodes(
        [("node1", one), ("node2", two)], 0.0, (), machines(["node1", "node2"], boots)
    )
    assert merged.host is not None and one.host is not None and two.host is not None
    assert merged.host.cpu_pct_per_core == one.host.cpu_pct_per_core  # the first node's reading
    assert merged.host.mem_total_mib == one.host.mem_total_mib
    assert merged.host.proc_count == (one.host.proc_count or 0) + (two.host.proc_count or 0)
    note = same_machine_note(["node1", "node2"], boots)
    assert note is not None and note.startswith("node1 and node2 are one machine")
    # two machines: each counted, and nothing to say
    apart = {"node1": "boot-a", "node2": "boot-b"}
    assert same_machine_note(["node1", "node2"], apart) is None
    both = merge_nodes(
        [("node1", one), ("node2", two)], 0.0, (), machines(["node1", "node2"], apart)
    )
    assert both.host is not None and both.host.mem_total_mib == 2 * (one.host.mem_total_mib or 0)


def test_merged_rounds_record_and_read_back(streams: dict[str, str], tmp_path: Path) -> None:
    rounds = merged_rounds(streams)
    path = tmp_path / "merged.jsonl"
    writer = RecordingWriter(path, RecordingHeader(interval_s=0.2, nodes=("node1", "node2")))
    for snap in rounds:
        writer.write(snap)
    writer.close()
    rec = parse_recording(path.read_text())
    assert rec.header is not None and rec.header.nodes == ("node1", "node2")
    last = rec.snapshots[-1]
    # name and command line are written once per (node, pid), and read back for both nodes
    assert [(p.node, p.role, p.cmdline) for p in last.procs if p.role == ROLE_MAIN] == [
        ("node1", ROLE_MAIN, f"{sys.executable} {LOADER} fork 1 idle"),
        ("node2", ROLE_MAIN, f"{sys.executable} {LOADER} fork 1 idle"),
    ]
    assert {gp.node for gp in last.gpu_procs} <= {"node1", "node2"}
    facts = rec.series().facts()
    assert facts["gpu.count"] == 4
    assert facts["host.proc.workers.max"] == 2


def test_the_screen_sees_the_node_beside_names(streams: dict[str, str]) -> None:
    shown = for_display(merged_rounds(streams)[-1])
    assert shown.gpus[0].name == "node1 · NVIDIA A100-SXM4-40GB"
    assert all(p.cmdline.startswith(("[node1] ", "[node2] ")) for p in shown.procs)


def test_two_live_streams_merged_into_one_session(loader: int) -> None:
    """RemoteSamplers reading two live samplers on one pipe, labelled as srun --label
    does (a shell stands in for srun here), feeding a MergedSession."""
    label = "while IFS= read -r line; do printf '%s: %s\\n' {task} \"$line\"; done"
    quoted = " ".join(f"'{a}'" for a in stream_args(loader))
    script = " ".join(
        f"SLURMD_NODENAME={node} {quoted} | ({label.format(task=task)}) &"
        for task, node in enumerate(("node1", "node2"))
    )
    proc = subprocess.Popen(
        ["sh", "-c", f"{script} wait"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in env("x").items() if k != "SLURMD_NODENAME"},
        cwd=REPO,
        start_new_session=True,
    )
    remote = RemoteSamplers(proc, ("node1", "node2"), 0.2)
    try:
        remote.wait_started(60)
        assert set(remote.nodes) == {"node1", "node2"}
        session = MergedSession(remote, (), interval_s=0.2, window_s=10, duration_s=1.5)
        session.run()
        assert session.store.count >= 5
        raw = session.store.recent[-1]
        assert {p.node for p in raw.procs} == {"node1", "node2"}
        assert len({g.gpu_key for g in raw.gpus}) == 4
        shown = session.state().latest
        assert shown is not None and (shown.procs[0].cmdline or "").startswith("[node")
        assert (session.view(None)[-1].gpus[0].name or "").startswith("node")
        summary = render_summary(session, "two nodes", None)
    finally:
        remote.close()
    assert "Node node1: 2 processes (1 main, 1 DataLoader worker)" in summary
    assert "Node node2: 2 processes (1 main, 1 DataLoader worker)" in summary
    assert "the busiest node's sampler thread" in summary
    assert proc.poll() is not None  # closed: the samplers are gone


def test_samplers_that_fail_to_start_are_one_line() -> None:
    """What srun and a node's sampler said reaches the user (here a shell that fails as a
    node's `watch --this-node` does when the job is not there)."""
    script = (
        "echo '0: tuneadvisor: --job 7: the job runs on n2, not on this node (n1)' >&2; "
        "echo 'srun: error: n1: task 0: Exited with exit code 2' >&2; exit 1"
    )
    proc = subprocess.Popen(
        ["sh", "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    remote = RemoteSamplers(proc, ("n1",), 0.2)
    with pytest.raises(InputError) as caught:
        remote.wait_started(60)
    assert str(caught.value) == (
        "watch: no sampler started on the job's nodes (srun said: n1: tuneadvisor: --job 7: "
        "the job runs on n2, not on this node (n1) | srun: error: n1: task 0: Exited with "
        "exit code 2)"
    )
