"""A whole-node watch does not call PID 1 (or any process with no parent read) a "child"
(issue 33 §4): a child is some process's."""

from __future__ import annotations

from tuneadvisor.metrics.proc_roles import ProcStatic, role_of
from tuneadvisor.metrics.snapshot import ROLE_CHILD, ROLE_MAIN, ROLE_OTHER


def _static(*cmd: str) -> ProcStatic:
    return ProcStatic(cmd[0], cmd, " ".join(cmd), "root", None, ())


def test_init_is_no_child() -> None:
    assert role_of(_static("systemd", "--system"), None) == (ROLE_OTHER, None)


def test_a_child_has_a_parent() -> None:
    parent = _static("python", "train.py")
    assert role_of(_static("sleep", "600"), parent) == (ROLE_CHILD, None)
    assert role_of(_static("python", "train.py"), None) == (ROLE_MAIN, None)
