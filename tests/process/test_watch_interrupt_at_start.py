"""A Ctrl-C that arrives while the watch starts its node samplers' ``srun`` (before the
object that ends it exists) must still end it: an orphaned ``srun --overlap`` runs its
sampler in the user's job until the job ends (seen in CI: a step left for 7 minutes)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from typing import ClassVar

import pytest

from tuneadvisor.watch import start
from tuneadvisor.watch.deferred_signals import signals_deferred
from tuneadvisor.watch.job_target import JobPlan
from tuneadvisor.watch.request import WatchRequest


def test_a_signal_inside_the_block_arrives_as_it_ends() -> None:
    after: list[str] = []
    with pytest.raises(KeyboardInterrupt), signals_deferred():  # noqa: PT012 - the block must run on past the signal
        os.kill(os.getpid(), signal.SIGINT)
        after.append("the block ran on")
    assert after == ["the block ran on"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored


def test_no_signal_no_interrupt() -> None:
    with signals_deferred():
        pass
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


class _ClientInterruptedAsSrunStarts:
    """SlurmClient whose srun (a real process in its own session) starts just as the user
    presses Ctrl-C: the signal lands before ``overlap_step`` has returned."""

    started: ClassVar[list[subprocess.Popen[str]]] = []
    cancelled: ClassVar[list[tuple[str, str]]] = []

    def __init__(self, timeout_s: float) -> None:
        del timeout_s

    def overlap_step(
        self, job_id: str, nodes: int, command: Sequence[str], name: str
    ) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            ["sleep", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )  # fmt: skip
        self.started.append(proc)
        os.kill(os.getpid(), signal.SIGINT)
        return proc

    def cancel_steps_named(self, job_id: str, name: str) -> tuple[str, ...]:
        self.cancelled.append((job_id, name))
        return ()


def test_ctrl_c_as_srun_starts_leaves_no_srun(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(start, "SlurmClient", _ClientInterruptedAsSrunStarts)
    plan = JobPlan(job_id="7", how="srun", label="job 7", nodes=("n1",))
    with pytest.raises(KeyboardInterrupt):
        start._merged_session(WatchRequest(job="7", interval_s=0.5), plan, ())
    (proc,) = _ClientInterruptedAsSrunStarts.started
    assert proc.poll() is not None, "srun outlived the watch"
    (cancelled,) = _ClientInterruptedAsSrunStarts.cancelled
    assert cancelled[0] == "7" and cancelled[1].startswith("tuneadvisor-watch-")
