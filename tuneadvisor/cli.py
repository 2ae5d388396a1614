"""The command line: the list of commands, and the one place where bad input becomes one line
on stderr and exit status 2. Each command lives in tuneadvisor.commands; their heavy imports
load only when they run, so `tuneadvisor --help` stays fast."""

from __future__ import annotations

# signal's C module: one C call each, no Python frame of signal.py or enum a Ctrl-C could land
# in while the quiet handler goes in
import _signal  # type: ignore[import-not-found]  # (no stubs: it is signal.py's C half)
import os
import sys

# The exit status of a run interrupted by Ctrl-C (128 + SIGINT), as a shell reports it.
EXIT_INTERRUPTED = 130


def _interrupted_while_starting(signum: int, frame: object) -> None:
    """Ctrl-C before main's guard: exit 130 at once, with nothing printed. The console
    script imports this module and calls main outside any handler of ours, a signal can land
    on main's very first line, before its try, and an exception raised here can land in a
    callback of the import machinery, which prints it and goes on. Nothing is written before
    the guard, so there is nothing to flush or undo."""
    os._exit(EXIT_INTERRUPTED)


def _interrupts_as_usual() -> None:
    """Inside main's guard: Ctrl-C is KeyboardInterrupt again (watch forwards it to its
    program, run stops its ranks)."""
    try:
        if _signal.getsignal(_signal.SIGINT) is _interrupted_while_starting:
            _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    except ValueError:
        pass


try:  # at module level: a Ctrl-C before this line is the interpreter's to report
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, _interrupted_while_starting)
except ValueError:  # imported from another thread: signals are the main thread's
    pass

from tuneadvisor import __version__  # noqa: E402 - after the quiet handler is in place
from tuneadvisor.errors import EXIT_BAD_INPUT, InputError  # noqa: E402
from tuneadvisor.present.terminal_safe import one_line_safe  # noqa: E402

TYPE_CHECKING = False  # typing's own constant would load typing (milliseconds) unguarded
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from types import ModuleType

# Nothing heavier than sys and os loads before main's guard: the console script imports this
# module outside any handler of ours, so a Ctrl-C while argparse or typing loads would be a
# traceback. argparse is imported inside build_parser, which runs inside the guard.

# The commands, in the order `--help` lists them; each is the module of that name in
# tuneadvisor.commands.
COMMANDS = ("open", "report", "apply", "jobs", "watch", "run", "compare", "tune", "rules", "doctor")


def command(name: str) -> ModuleType:
    """One command's module (imported inside main's guard, so a Ctrl-C while it loads exits
    130 like any other)."""
    # __import__ rather than importlib.import_module, which `-X importtime` (and so the
    # import-hygiene test) does not see
    return __import__(f"tuneadvisor.commands.{name}", fromlist=["run"])


def commands() -> dict[str, ModuleType]:
    """Every command, in the order `--help` lists them."""
    return {name: command(name) for name in COMMANDS}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``only`` that one (what it accepts and says is the
    same: a subcommand's usage and errors do not name the others)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="tuneadvisor",
        description="Profile viewer and tuning advisor for PyTorch training on Slurm.",
        formatter_class=_formatter(),
    )
    parser.add_argument("--version", action="version", version=f"tuneadvisor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS if only is None else (only,):
        module = command(name)
        description = getattr(module, "DESCRIPTION", None)
        module.add_arguments(
            sub.add_parser(
                name, help=module.HELP, description=description, formatter_class=_formatter()
            )
        )
    return parser


def _formatter() -> type[argparse.HelpFormatter]:
    """argparse's help formatter, measuring the terminal as it does but without importing
    shutil for it (which loads bz2 and lzma: a tenth of `report`'s start-up): every parser
    makes a formatter as its arguments are added, not only for --help."""
    import argparse

    class Formatter(argparse.HelpFormatter):
        def __init__(
            self,
            prog: str,
            indent_increment: int = 2,
            max_help_position: int = 24,
            width: int | None = None,
        ) -> None:
            if width is None:
                width = terminal_columns() - 2  # as argparse does
            super().__init__(prog, indent_increment, max_help_position, width)

    return Formatter


def terminal_columns() -> int:
    """shutil.get_terminal_size().columns: $COLUMNS, else stdout's terminal, else 80."""
    from tuneadvisor.present.terminal_width import terminal_columns as columns

    return columns(80)


def main(argv: Sequence[str] | None = None) -> int:
    previous_hook = sys.unraisablehook

    def pass_on_interrupts(unraisable: sys.UnraisableHookArgs) -> None:
        """A Ctrl-C that lands in a finalizer (``__del__``, run by the garbage collector
        anywhere) is sent again to the main thread, instead of printed as "Exception ignored
        ... KeyboardInterrupt" and lost. From another thread: raised here, in the hook, it
        would be ignored the same way."""
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            import _thread

            _thread.start_new_thread(_thread.interrupt_main, ())
            return
        previous_hook(unraisable)

    sys.unraisablehook = pass_on_interrupts
    try:
        return _main(argv)
    finally:
        sys.unraisablehook = previous_hook


def _main(argv: Sequence[str] | None) -> int:
    try:
        _interrupts_as_usual()
        argv = sys.argv[1:] if argv is None else list(argv)
        # `tuneadvisor report ...` imports the report command alone, not every command's
        # module: start-up pays only for what runs.
        only = argv[0] if argv and argv[0] in COMMANDS else None
        args = build_parser(only).parse_args(argv)
        # argparse drops a lone `--`: `watch --` with nothing after it is a missing command,
        # not the whole node (only what follows the command's name counts)
        args.end_of_options = "--" in argv[argv.index(args.command) + 1 :]
        status: int = command(args.command).run(args)
        return status
    except InputError as err:
        # the file's own bytes may be in the message: one line, no control character
        print(f"tuneadvisor: {one_line_safe(err.one_line())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # `tuneadvisor report | head`: the reader left; that is not an error.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except RuntimeError as err:
        # a Ctrl-C while a class is made (functools' __set_name__ during an import) comes
        # wrapped: "Error calling __set_name__", caused by the KeyboardInterrupt
        if isinstance(err.__cause__, KeyboardInterrupt):
            return EXIT_INTERRUPTED
        raise
