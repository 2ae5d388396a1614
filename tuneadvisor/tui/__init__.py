"""The `tuneadvisor open` TUI (Textual).

Importing this package is cheap: textual is imported only when `run_open` or the app class
is first used, so the CLI can import the package without paying for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tuneadvisor.tui.app import TuneAdvisorApp, run_open

__all__ = ["TuneAdvisorApp", "run_open"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from tuneadvisor.tui import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
