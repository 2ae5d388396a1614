"""The watched tree's storage reads as a host fact (issue 31 §4): the sampler's per-process
read MiB/s (/proc/PID/io read_bytes) summed over the tree each round, its mean and peak as
``host.proc.storage_read.*``, shown in the report's "Metrics read"; absent, never 0, where a
process's /proc/PID/io could not be read. Real processes, their I/O counters given."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from tuneadvisor.advisor.fact_view import view
from tuneadvisor.metrics.host import MIB, HostSampler
from tuneadvisor.metrics.model import HostSample, MetricsSeries
from tuneadvisor.metrics.proc_readers import DEFAULT
from tuneadvisor.metrics.snapshot import ProcSample, Snapshot
from tuneadvisor.present.metrics_read import metrics_lines
from tuneadvisor.watch.merge import merge_nodes


@pytest.fixture
def child() -> Iterator[int]:
    """A sleeping child of this test: the tree is this process and it."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)  # fmt: skip
    yield proc.pid
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(10)


def _sampler(io: Callable[[int], tuple[int, int] | None], pid: int) -> HostSampler:
    clock = iter(float(t) for t in range(100))
    readers = dataclasses.replace(DEFAULT, io=io)
    return HostSampler([os.getpid()], clock=lambda: next(clock), readers=readers)


def _reading(sampler: HostSampler, pid: int) -> HostSample:
    """The first round the child is in the tree with a rate (the walk sees it at once)."""
    for _ in range(20):
        reading = sampler.sample()
        if any(p.pid == pid and p.cpu_pct is not None for p in reading.procs):
            return reading.host
    raise AssertionError("the child never had a rate")


def test_the_trees_storage_reads_are_summed_each_round_into_a_host_fact(child: int) -> None:
    reads: dict[int, int] = {}

    def io(pid: int) -> tuple[int, int]:  # each process reads 3 MiB a round (1 s)
        reads[pid] = reads.get(pid, 0) + 3 * MIB
        return reads[pid], 0

    sampler = _sampler(io, child)
    hosts = [_reading(sampler, child), sampler.sample().host]
    assert [h.proc_count for h in hosts] == [2, 2]
    assert [h.proc_read_mib_s for h in hosts] == [6.0, 6.0]  # 3 MiB/s, 2 processes
    facts = MetricsSeries.from_samples((), hosts).facts()
    assert facts["host.proc.storage_read.mean_mib_s"] == 6.0
    assert facts["host.proc.storage_read.max_mib_s"] == 6.0
    typed = view(facts).host
    assert typed.proc__storage_read__mean_mib_s == 6.0
    assert typed.proc__storage_read__max_mib_s == 6.0
    (host_line,) = [line for line in metrics_lines(MetricsSeries.from_samples((), hosts))
                    if line.startswith("host:")]  # fmt: skip
    assert "read from storage 6.0 MiB/s (mean), 6.0 peak" in host_line


def test_a_tree_that_reads_nothing_reads_zero(child: int) -> None:
    """Counters read and unchanged: 0 MiB/s is a measurement, not a missing value."""
    host = _reading(_sampler(lambda pid: (5 * MIB, 0), child), child)
    assert host.proc_read_mib_s == 0.0
    assert MetricsSeries.from_samples((), [host]).facts()["host.proc.storage_read.max_mib_s"] == 0


@pytest.mark.parametrize("why", ["another user's /proc/PID/io", "no I/O accounting here"])
def test_an_unreadable_io_leaves_the_read_rate_absent_never_zero(child: int, why: str) -> None:
    def io(pid: int) -> tuple[int, int] | None:
        if why == "no I/O accounting here":
            return None
        if pid == child:
            raise PermissionError(pid)
        return 7 * MIB, 0  # this process's own: read, but only a part of the tree

    host = _reading(_sampler(io, child), child)
    assert host.proc_count == 2 and host.proc_read_mib_s is None
    series = MetricsSeries.from_samples((), [host])
    assert not any(k.startswith("host.proc.storage_read") for k in series.facts())
    assert "storage" not in " ".join(metrics_lines(series))


def test_several_nodes_add_up_only_where_every_node_was_read() -> None:
    def node(rate: float | None) -> Snapshot:
        host = HostSample(t=0.0, proc_count=2, proc_read_mib_s=rate)
        return Snapshot(t=0.0, host=host, procs=(ProcSample(pid=1),))

    both = merge_nodes([("a", node(2.0)), ("b", node(3.5))], 0.0)
    assert both.host is not None and both.host.proc_read_mib_s == 5.5
    one_unread = merge_nodes([("a", node(2.0)), ("b", node(None))], 0.0)
    assert one_unread.host is not None and one_unread.host.proc_read_mib_s is None
