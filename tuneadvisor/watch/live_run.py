"""What the live screen shows besides the session's rounds: the program ``watch -- COMMAND``
started (its output, Ctrl-C, its end), or the output file of a ``--job``, and the summary the
headless watch prints (shown when the run ends)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tuneadvisor.watch.output import OutputLines
from tuneadvisor.watch.program import Program


@dataclass
class LiveRun:
    program: Program | None = None  # watch -- COMMAND: signals, exit status, wall time
    output: OutputLines | None = None  # the lines for the output pane
    output_title: str = ""  # what the pane shows, and where all of it is
    output_missing: str = ""  # why there is no pane for this target ("" : none expected)
    summary: Callable[[], str] | None = None  # the headless summary of the run so far

    @classmethod
    def of_program(cls, program: Program, summary: Callable[[], str] | None = None) -> LiveRun:
        where = f" · all of it in {program.log_path}" if program.log_path else ""
        return cls(program, program.output, f"Output of pid {program.pid}{where}", "", summary)
