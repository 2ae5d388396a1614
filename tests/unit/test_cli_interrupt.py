"""A Ctrl-C that lands in a finalizer while a command runs (seen: simpleeval's
`SimpleEval.__del__` run by the garbage collector during `report`) ends the command with 130
like any other, instead of "Exception ignored ... KeyboardInterrupt" on stderr and the
command running on (issue 24, point 9)."""

from __future__ import annotations

import argparse
import time
import types

import pytest

from tuneadvisor import cli


class InterruptedWhileCollected:
    def __del__(self) -> None:
        raise KeyboardInterrupt  # as the SIGINT handler does, inside the finalizer


def _run(args: argparse.Namespace) -> int:
    InterruptedWhileCollected()  # collected at once: its __del__ raises
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # the command goes on working
        time.sleep(0.01)
    return 0


FAKE = types.SimpleNamespace(HELP="a command", add_arguments=lambda parser: None, run=_run)


def test_an_interrupt_inside_a_finalizer_ends_the_command_with_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "command", lambda name: FAKE)
    started = time.monotonic()
    assert cli.main(["report"]) == cli.EXIT_INTERRUPTED
    assert time.monotonic() - started < 4  # ended by the interrupt, not by the loop
    assert "KeyboardInterrupt" not in capsys.readouterr().err


def test_the_hook_is_only_the_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    before = sys.unraisablehook
    monkeypatch.setattr(cli, "command", lambda name: FAKE)
    monkeypatch.setattr(FAKE, "run", lambda args: 0)
    assert cli.main(["report"]) == 0
    assert sys.unraisablehook is before


def test_a_ctrl_c_wrapped_by_a_class_being_made_is_still_130(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Ctrl-C inside ``__set_name__`` (functools.cached_property while a command's module
    loads) reaches main as RuntimeError("Error calling __set_name__") caused by it."""
    from tuneadvisor import cli

    def interrupted_while_loading(name: str) -> object:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as err:
            raise RuntimeError("Error calling __set_name__ on '_lazy'") from err

    monkeypatch.setattr(cli, "command", interrupted_while_loading)
    assert cli.main(["report", "x.lprof"]) == cli.EXIT_INTERRUPTED
