"""The command line: the list of commands, and the one place where bad input becomes one line
on stderr and exit status 2. Each command lives in tuneadvisor.commands; their heavy imports
load only when they run, so `tuneadvisor --help` stays fast."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from tuneadvisor import __version__
from tuneadvisor.errors import EXIT_BAD_INPUT, InputError


def commands() -> dict[str, ModuleType]:
    """The commands, in the order `--help` lists them (imported inside main's guard, so a
    Ctrl-C while they load exits 130 like any other)."""
    from tuneadvisor.commands import apply, compare, doctor, jobs, report, rules, run, tune, watch
    from tuneadvisor.commands import open as open_

    return {
        "open": open_,
        "report": report,
        "apply": apply,
        "jobs": jobs,
        "watch": watch,
        "run": run,
        "compare": compare,
        "tune": tune,
        "rules": rules,
        "doctor": doctor,
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tuneadvisor",
        description="Profile viewer and tuning advisor for PyTorch training on Slurm.",
    )
    parser.add_argument("--version", action="version", version=f"tuneadvisor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, command in commands().items():
        description = getattr(command, "DESCRIPTION", None)
        command.add_arguments(sub.add_parser(name, help=command.HELP, description=description))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        status: int = commands()[args.command].run(args)
        return status
    except InputError as err:
        print(f"tuneadvisor: {err.one_line()}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # `tuneadvisor report | head`: the reader left; that is not an error.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        return 130
