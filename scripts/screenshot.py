"""Regenerate docs/screenshot.svg (the README's picture) from the bundled example.

    .venv/bin/python scripts/screenshot.py [--out docs/screenshot.svg] [--size 120x36]
        [--press KEY ...] [PROFILE.lprof ... --job JOBSCRIPT]

Runs the real app headless (Textual's run_test) on what `scripts/demo` opens, waits for the
loader, presses the given keys, and writes the SVG. Paths are given relative to the
repository, so the picture shows no machine-specific paths.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_PROFILES = ["examples/mnist/24752610.lprof"]
DEFAULT_JOB = "examples/mnist/mnist.sbatch"
LOAD_TIMEOUT_S = 60.0


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT, got {text!r}") from None
    return width, height


async def _shoot(
    profiles: list[str], job: str | None, size: tuple[int, int], press: list[str]
) -> str:
    from tuneadvisor.tui.app import TuneAdvisorApp
    from tuneadvisor.tui.screens import MainScreen
    from tuneadvisor.workspace.inputs import Inputs
    from tuneadvisor.workspace.load import load_workspace

    request = Inputs(profiles=tuple(profiles), job=job)
    title = "tuneadvisor: " + (", ".join(profiles) or job or "")
    app = TuneAdvisorApp(load=lambda: load_workspace(request), title=title)
    async with app.run_test(size=size) as pilot:
        deadline = time.monotonic() + LOAD_TIMEOUT_S
        while not isinstance(app.screen, MainScreen):
            if app.load_error is not None:
                raise SystemExit(f"screenshot: {app.load_error}")
            if time.monotonic() > deadline:
                raise SystemExit("screenshot: timed out waiting for the profile to load")
            await pilot.pause(0.05)
        await pilot.pause()
        if press:
            await pilot.press(*press)
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        svg = app.export_screenshot(title=title)
        app.exit()
    return svg


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("profiles", nargs="*", default=DEFAULT_PROFILES, metavar="PROFILE")
    parser.add_argument("--job", default=DEFAULT_JOB, help="job script ('' for none)")
    parser.add_argument("--out", default="docs/screenshot.svg", help="SVG to write")
    parser.add_argument("--size", type=_size, default=(120, 36), help="WIDTHxHEIGHT")
    parser.add_argument("--press", nargs="*", default=[], help="keys to press first")
    args = parser.parse_args(argv)

    os.chdir(REPO)  # relative paths in the picture, whatever the caller's directory
    sys.path.insert(0, str(REPO))
    job = args.job or None
    for path in [*args.profiles, *([job] if job else [])]:
        if not Path(path).is_file():
            print(f"screenshot: {path} not found", file=sys.stderr)
            return 2
    svg = asyncio.run(_shoot(list(args.profiles), job, args.size, list(args.press)))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(svg, encoding="utf-8")
    tmp.replace(out)
    print(f"wrote {out} ({args.size[0]}x{args.size[1]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
