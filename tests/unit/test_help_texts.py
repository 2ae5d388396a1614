"""What `--help` says matches what the command does (issue 24, point 12): `tune` has no
--submit, so its help does not name it; every option of `tune` with a default says it."""

from __future__ import annotations

import argparse
import re

import pytest

from tuneadvisor.cli import build_parser


def subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser(name)
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    chosen: argparse.ArgumentParser = sub.choices[name]
    return chosen


def test_tune_help_names_no_option_tune_lacks() -> None:
    tune = subparser("tune")
    options = {o for a in tune._actions for o in a.option_strings}
    assert "--submit" not in options
    # --submit-winner (tune --job) is another option: the bare --submit is what tune lacks
    assert re.search(r"--submit(?![-\w])", tune.format_help()) is None
    assert "--submit" in subparser("run").format_help()  # run has it, and says so


@pytest.mark.parametrize("name", ["tune"])
def test_every_default_is_shown(name: str) -> None:
    parser = subparser(name)
    hidden = [
        a.dest
        for a in parser._actions
        if a.default not in (None, False, [], argparse.SUPPRESS) and "default" not in (a.help or "")
    ]
    assert hidden == []
    text = parser.format_help()
    for value in ("300 s", "(default: 10)", "(default: 3)", "(default: 1;"):
        assert value in " ".join(text.split())
