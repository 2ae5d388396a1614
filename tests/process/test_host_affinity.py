"""The host sampler reads each watched process's CPU affinity from the kernel: a real child
pinned to one CPU by ``os.sched_setaffinity`` under a shell that keeps the whole set is a
rank bound short; the whole-node view reads none (other jobs' pinning is not this one's)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tuneadvisor.metrics.affinity import affinity_facts, cpu_list, rank_bindings
from tuneadvisor.metrics.host import HostReading, HostSampler
from tuneadvisor.metrics.snapshot import ROLE_MAIN, Snapshot

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs sched_setaffinity and two CPUs to pin one",
)

# Pins itself to one CPU, says so, then waits for its input to close.
PINNED = (
    "import os, sys; cpu = min(os.sched_getaffinity(0)); os.sched_setaffinity(0, {cpu}); "
    "print(cpu, flush=True); sys.stdin.read()"
)


@pytest.fixture
def shell() -> Iterator[subprocess.Popen[str]]:
    """bash (all of this process's CPUs) running the pinned python: a launcher and a rank."""
    proc = subprocess.Popen(
        ["bash", "-c", f'{sys.executable} -c "{PINNED}"; true'],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    yield proc
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def _until_rank(sampler: HostSampler) -> HostReading:
    end = time.monotonic() + 30  # a deadline so a broken test ends, never a speed check
    while True:
        reading = sampler.sample()
        if any(p.role == ROLE_MAIN and p.affinity for p in reading.procs):
            return reading
        if time.monotonic() > end:
            raise AssertionError(f"no rank with its affinity: {reading.procs!r}")
        time.sleep(0.05)


def test_a_child_pinned_to_one_cpu_is_a_rank_bound_short(shell: subprocess.Popen[str]) -> None:
    assert shell.stdout is not None
    pinned_to = int(shell.stdout.readline())
    mine = frozenset(os.sched_getaffinity(0))
    reading = _until_rank(HostSampler([shell.pid]))
    by_pid = {p.pid: p for p in reading.procs}
    assert cpu_list(by_pid[shell.pid].affinity or "") == mine  # the shell keeps them all
    rank = next(p for p in reading.procs if p.role == ROLE_MAIN)
    assert rank.affinity == str(pinned_to)
    [binding] = rank_bindings(reading.procs)
    assert binding.pid == rank.pid and binding.share == len(mine) and binding.short
    facts = affinity_facts([Snapshot(t=0.0, procs=reading.procs)])
    assert facts["host.proc.affinity.short_ranks"] == 1
    assert facts["host.proc.affinity.min_cpus"] == 1


def test_the_whole_node_view_reads_no_affinity(shell: subprocess.Popen[str]) -> None:
    assert shell.stdout is not None
    shell.stdout.readline()
    sampler = HostSampler()
    sampler.sample()
    reading = sampler.sample()
    assert reading.procs and all(p.affinity is None for p in reading.procs)
