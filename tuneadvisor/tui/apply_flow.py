"""The apply of the main screen: ask, write the tuned files in a thread, say what was written.

The same apply as `tuneadvisor apply` (``workspace.apply``), never over the job script: the
target is worked out first (a bad one is said, nothing asked), the dialog lists every write,
and the write runs in a thread worker of the screen (which outlives a recompose of its tabs)
so the screen keeps drawing.
"""

from __future__ import annotations

from functools import partial

from textual.widget import Widget
from textual.worker import Worker, WorkerState

from tuneadvisor.errors import InputError
from tuneadvisor.present.terminal_safe import one_line_safe, terminal_safe
from tuneadvisor.tui.dialogs import ApplyScreen
from tuneadvisor.workspace.apply import (
    ApplyTarget,
    apply_target,
    apply_workspace,
    can_apply,
    planned_writes,
)
from tuneadvisor.workspace.load import Workspace

APPLY_WORKER = "apply-outputs"


def can_apply_now(workspace: Workspace) -> bool:
    """A job script, and something to write into its tuned copy."""
    return workspace.job is not None and can_apply(workspace)


def _write(workspace: Workspace, target: ApplyTarget) -> list[str] | InputError:
    """Runs in a thread worker: the apply of `tuneadvisor apply` (never in place here),
    what it says it wrote, or the InputError it raised."""
    try:
        return apply_workspace(workspace, target)
    except InputError as error:
        return error


class ApplyFlow:
    """The apply of one screen (``node``): ``start`` asks, the write is its worker, and
    ``finished`` (from the screen's ``on_worker_state_changed``) says how it went."""

    def __init__(self, node: Widget) -> None:
        self._node = node

    def start(self, workspace: Workspace) -> None:
        """Ask, then write the tuned job script beside the job (never over it)."""
        if not can_apply_now(workspace):
            return
        try:
            target = apply_target(workspace.inputs, force=True)  # the dialog asks first
        except InputError as error:
            self._not_written(error)
            return
        self._node.app.push_screen(
            ApplyScreen(target.out, planned_writes(workspace, target.out)),
            callback=partial(self._answered, workspace, target),
        )

    def _answered(self, workspace: Workspace, target: ApplyTarget, confirmed: bool | None) -> None:
        if confirmed:
            self._node.run_worker(
                partial(_write, workspace, target),
                name=APPLY_WORKER,
                group="apply",
                thread=True,
            )

    def finished(self, event: Worker.StateChanged) -> None:
        """What was written, or why nothing was (other workers' events are not ours)."""
        worker = event.worker
        if worker.name != APPLY_WORKER or event.state is not WorkerState.SUCCESS:
            return
        result = worker.result
        if isinstance(result, InputError):
            self._not_written(result)
        elif isinstance(result, list):
            self._node.notify(terminal_safe("\n".join(result)), title="Written", timeout=15,
                              markup=False)  # fmt: skip

    def _not_written(self, error: InputError) -> None:
        self._node.notify(one_line_safe(error.one_line()), title="Not written", severity="error",
                          timeout=15, markup=False)  # fmt: skip
