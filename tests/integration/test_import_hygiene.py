"""What each command and module imports at start-up, in a fresh interpreter per case.

Heavy or optional packages stay out until they are needed: textual only for a screen, pynvml
only when NVML is opened, torch never (only the bundled training scripts use it), rich,
plotext and matplotlib not for `--help`. A case runs one command line under `-X importtime`,
which lists every module imported, and names the packages that must not be among them; the
cases that name packages that must be there show the check can see a lazy import happen.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

import pytest

from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "mnist" / "24752610.lprof"
EXAMPLE_JOB = REPO / "examples" / "mnist" / "mnist.sbatch"
DDP_SCRIPT = REPO / "tests" / "fixtures" / "scan_scripts" / "torchrun_ddp.py"
TORCH = ("torch", "torchvision")


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]  # after `python -X importtime`
    absent: tuple[str, ...]  # top-level packages it must not import
    present: tuple[str, ...] = ()  # ... and those it must (the lazy import happens)


CASES = {
    "tuneadvisor --help": Case(
        ("-m", "tuneadvisor", "--help"),
        ("textual", "pynvml", "rich", "plotext", "matplotlib", *TORCH),
    ),
    "the parser of every command": Case(
        ("-c", "from tuneadvisor.cli import build_parser; build_parser()"),
        ("textual", "pynvml", "rich", "plotext", "matplotlib", *TORCH),
    ),
    "tuneadvisor report PROFILE --job SCRIPT": Case(
        ("-m", "tuneadvisor", "report", str(EXAMPLE), "--job", str(EXAMPLE_JOB)),
        ("textual", "pynvml", "psutil", *TORCH),
    ),
    # the metrics model (statistics, decimal, fractions) loads only when there are metrics
    "tuneadvisor report PROFILE, no metrics": Case(
        ("-m", "tuneadvisor", "report", str(EXAMPLE)), ("statistics", "decimal", "fractions")
    ),
    "watch's headless modules": Case(
        (
            "-c",
            "import tuneadvisor.cli, tuneadvisor.watch.start, tuneadvisor.present.watch_summary",
        ),
        ("textual", "pynvml"),
    ),
    "the replay of a recording": Case(("-c", "import tuneadvisor.watch.replay"), ("textual",)),
    "the TUI package": Case(("-c", "import tuneadvisor.tui"), ("textual",)),
    "the TUI's entry point": Case(("-c", "from tuneadvisor.tui import run_open"), (), ("textual",)),
    "the NVML module": Case(("-c", "import tuneadvisor.metrics.nvml"), ("pynvml",)),
    "opening NVML": Case(
        ("-c", "from tuneadvisor.metrics.nvml import NvmlSampler; NvmlSampler().open()"),
        (),
        ("pynvml",),
    ),
    # doctor must run where only nvidia-ml-py, psutil and rich are there besides torch, and
    # torch only in the probe's own interpreter
    "tuneadvisor doctor": Case(
        ("-m", "tuneadvisor", "doctor", "--format", "json"),
        ("textual", "plotext", "matplotlib", "simpleeval", "line_profiler", *TORCH),
        ("pynvml",),
    ),
    "scanning a training script": Case(
        (
            "-c",
            "import sys; from tuneadvisor.trainscript.scan import scan_script; "
            "scan_script(open(sys.argv[1]).read()).facts()",
            str(DDP_SCRIPT),
        ),
        TORCH,
    ),
}


def imported(stderr: str) -> set[str]:
    """The top-level packages in `-X importtime`'s list (`import time: self | cumulative |
    name`, the name indented by nesting)."""
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "package":  # the header line
                names.add(name.split(".")[0])
    return names


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_start_up_imports(case: Case) -> None:
    result = subprocess.run(  # from the checkout: its package comes first on the path
        [sys.executable, "-X", "importtime", *case.args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    loaded = imported(result.stderr)
    assert "tuneadvisor" in loaded  # the list was read
    assert sorted(loaded.intersection(case.absent)) == []
    assert sorted(loaded.intersection(case.present)) == sorted(case.present)
