"""What each command and module imports at start-up, in a fresh interpreter per case.

Heavy or optional packages stay out until they are needed: textual only for a screen, pynvml
only when NVML is opened, torch never (only the bundled training scripts use it), rich,
plotext and matplotlib not for `--help`. A case runs one command line under `-X importtime`,
which lists every module imported, and names the packages that must not be among them; the
cases that name packages that must be there show the check can see a lazy import happen. The
last test pins every tuneadvisor module `report X.lprof` imports (the lean set).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

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
    # the console script imports cli outside main's guard against Ctrl-C (issue 24, point 9):
    # nothing that takes milliseconds to load may come with it
    "the console script's import of cli": Case(
        ("-c", "import tuneadvisor.cli"), ("argparse", "typing", "gettext")
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


# every reader of workspace/readers/ loads for every report: each imports its parser inside
# its read (docs/ARCHITECTURE.md, "Add an input")
READERS = sorted(p.stem for p in (REPO / "tuneadvisor" / "workspace" / "readers").glob("*.py"))

# `tuneadvisor report X.lprof` with the rule pack cached: every tuneadvisor module it imports.
# A module added here is start-up time for every report: import it where it is needed instead
# (a text table, a job script, Slurm, metrics and the other commands each load their own).
LEAN_REPORT = {
    "tuneadvisor",
    "tuneadvisor.cli",
    "tuneadvisor.errors",
    "tuneadvisor.numbers",  # numbers read from the inputs (the run window, the seff figures)
    "tuneadvisor.records",  # @record: the report's value classes, no code generated per class
    "tuneadvisor.files",
    "tuneadvisor.commands",
    "tuneadvisor.commands.inputs",
    "tuneadvisor.commands.report",
    "tuneadvisor.workspace",
    "tuneadvisor.workspace.inputs",
    "tuneadvisor.workspace.load",
    "tuneadvisor.workspace.gather",
    "tuneadvisor.workspace.rule_files",
    # gather's steps and the workspace's tuned files (its editors load only with a job
    # script or a training script)
    "tuneadvisor.workspace.gpu_source",
    "tuneadvisor.workspace.read_files",
    "tuneadvisor.workspace.read_measured",
    "tuneadvisor.workspace.site_file",
    "tuneadvisor.workspace.readers",  # the readers gather walks over
    *(f"tuneadvisor.workspace.readers.{name}" for name in READERS if name != "__init__"),
    "tuneadvisor.workspace.tuned_files",
    "tuneadvisor.runrecord",  # the record's file name, looked for beside the profile
    "tuneadvisor.advisor",
    "tuneadvisor.advisor.advice",
    "tuneadvisor.advisor.measured_allocation",
    "tuneadvisor.advisor.engine",
    "tuneadvisor.advisor.evidence",
    "tuneadvisor.advisor.expressions",
    "tuneadvisor.advisor.facts",
    "tuneadvisor.advisor.fact_view",  # the typed view the model and the plan read (issue 29)
    "tuneadvisor.advisor.findings",
    "tuneadvisor.advisor.plan",
    "tuneadvisor.advisor.rules",
    # the step-time model sizes dataloader-bound's workers and says what they buy (issue 21):
    # part of the advice of a profile alone, about 5 ms of imports together
    "tuneadvisor.advisor.forecast",
    "tuneadvisor.advisor.finish",  # the run's length as written and tuned (issue 32)
    "tuneadvisor.advisor.prediction",
    "tuneadvisor.advisor.sizing",
    "tuneadvisor.advisor.steptime",
    "tuneadvisor.profile",
    "tuneadvisor.profile.trace",  # what names a trace (PROFILE split): its reader stays out
    # which kind of GPU figure the metrics read are (a few lines, no imports)
    "tuneadvisor.metrics",
    "tuneadvisor.metrics.figures",
    "tuneadvisor.present.gpu_figures",
    "tuneadvisor.profile.alignment",
    "tuneadvisor.profile.analysis",
    "tuneadvisor.profile.facts",
    "tuneadvisor.profile.lprof",
    "tuneadvisor.profile.model",
    "tuneadvisor.profile.safe_pickle",
    "tuneadvisor.profile.skew",
    "tuneadvisor.profile.source",
    "tuneadvisor.trainscript",
    "tuneadvisor.trainscript.fact_rows",
    "tuneadvisor.trainscript.kinds",
    "tuneadvisor.trainscript.names",
    "tuneadvisor.trainscript.parsed",
    "tuneadvisor.trainscript.pyast",
    "tuneadvisor.trainscript.roles",
    "tuneadvisor.trainscript.scopes",
    "tuneadvisor.slurm",
    "tuneadvisor.slurm.states",  # advisor.evidence: which job states are unfinished
    "tuneadvisor.report",
    "tuneadvisor.report.text",
    "tuneadvisor.present",
    "tuneadvisor.present.advice_text",
    "tuneadvisor.present.findings",
    "tuneadvisor.present.metrics_read",
    "tuneadvisor.present.not_read",
    "tuneadvisor.present.number_text",
    "tuneadvisor.present.plan_rows",
    "tuneadvisor.present.prediction_text",
    "tuneadvisor.present.requests_use",
    # what an input holds is printed without its control characters (issue 23, point 11),
    # and the training script's line is the text and markdown reports' one
    "tuneadvisor.present.terminal_safe",
    # the text report's table fits the terminal's width (os and sys only)
    "tuneadvisor.present.terminal_width",
    "tuneadvisor.present.training_script",
}
# ... and what it never needs: the TOML parser (the pack is cached), OpenSSL's hashes, a
# process (nothing asks Slurm), the statistics of metrics, shutil (with bz2 and lzma: only
# where srun is looked for on the PATH), signal.py (its enums: cli and __main__ use _signal).
LEAN_REPORT_ABSENT = {
    "tomllib", "hashlib", "subprocess", "statistics", "decimal", "fractions", "shutil", "signal",
}  # fmt: skip


def modules(stderr: str) -> set[str]:
    """Every module in `-X importtime`'s list, by its full name."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    } - {"package"}


def test_report_of_a_profile_imports_only_the_lean_set(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    command = [sys.executable, "-X", "importtime", "-m", "tuneadvisor", "report", str(EXAMPLE)]
    runs = [
        subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=60)
        for _ in range(2)  # the first compiles the rule pack and caches it; the second reads it
    ]
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr[-2000:]
    assert runs[0].stdout == runs[1].stdout
    assert "tomllib" in modules(runs[0].stderr)  # the check sees a compile happen
    loaded = modules(runs[1].stderr)
    ours = {name for name in loaded if name.split(".")[0] == "tuneadvisor"}
    assert sorted(ours - LEAN_REPORT) == []
    assert sorted(LEAN_REPORT - ours) == []  # a module gone: take it off the list too
    assert sorted(loaded & LEAN_REPORT_ABSENT) == []
