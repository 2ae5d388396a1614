"""Hand-made workspaces for the TUI tests: real analyses of real source files.

Line kinds are pinned by `pinned_kinds` (see conftest) so the screens do not change when the
AST classifier changes; the TUI only shows what the analysis says.
"""

from __future__ import annotations

import asyncio
import difflib
import functools
import io
import shutil
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ParamSpec

from rich.console import Console
from rich.text import Text
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Static

from tuneadvisor.advisor.advice import Advice
from tuneadvisor.advisor.findings import Evidence, Finding, Severity, Suggestion
from tuneadvisor.advisor.plan import Change, Plan
from tuneadvisor.profile.analysis import analyze
from tuneadvisor.profile.model import FunctionTiming, LineTiming, Profile, ProfileSet
from tuneadvisor.profile.source import SourceFinder
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.trainscript.kinds import LineKind
from tuneadvisor.tui.app import TuneAdvisorApp
from tuneadvisor.tui.screens import MainScreen
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import JobScriptText, Workspace
from tuneadvisor.workspace.tuned_files import TunedFiles

SIZE = (120, 36)
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "mnist"
EXAMPLE_FILES = ("24752610.lprof", "mnist.sbatch", "mnist_classify.py")

P = ParamSpec("P")


def async_test(test: Callable[P, Coroutine[Any, Any, None]]) -> Callable[P, None]:
    """Run an async test with asyncio.run (no pytest async plugin needed)."""

    @functools.wraps(test)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


TRAIN_PY = """\
import torch
import torch.nn.functional as F


def train(model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % 10 == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}")


def test(model, device, test_loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            correct += output.argmax(dim=1).eq(target).sum().item()
    return correct
"""

# (line number, hits, seconds): the tutorial's shape, the DataLoader line dominates train().
TRAIN_TIMINGS: tuple[tuple[int, int, float], ...] = (
    (6, 1, 0.0021),
    (7, 939, 84.5),
    (8, 938, 3.1),
    (9, 938, 0.9),
    (10, 938, 6.1),
    (11, 938, 0.6),
    (12, 938, 4.1),
    (13, 938, 0.6),
    (14, 938, 0.05),
    (15, 94, 0.04),
)
TEST_TIMINGS: tuple[tuple[int, int, float], ...] = (
    (19, 1, 0.0012),
    (20, 1, 0.000001),
    (21, 1, 0.00002),
    (22, 11, 2.5),
    (23, 10, 0.2),
    (24, 10, 0.3),
    (25, 10, 0.4),
    (26, 1, 0.000001),
)

JOB_SCRIPT = """\
#!/bin/bash
#SBATCH --job-name=mnist
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#SBATCH --mem=8G
#SBATCH --gres=gpu:1
#SBATCH --time=00:30:00

module purge
module load anaconda3/2024.6
conda activate torch-env

kernprof -l -o ${SLURM_JOBID}.lprof mnist_classify.py --epochs=3
"""


def classify_for_tests(text: str) -> dict[int, LineKind]:
    """A fixed stand-in for the AST classifier, by simple text patterns."""
    kinds: dict[int, LineKind] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if s.startswith("for ") and "loader" in s:
            kinds[number] = LineKind.DATALOADER
        elif ".to(device)" in s:
            kinds[number] = LineKind.TRANSFER
        elif "= model(" in s:
            kinds[number] = LineKind.FORWARD
        elif "nll_loss" in s:
            kinds[number] = LineKind.LOSS
        elif ".backward()" in s:
            kinds[number] = LineKind.BACKWARD
        elif s.startswith("optimizer."):
            kinds[number] = LineKind.OPTIMIZER
        elif ".item()" in s:
            kinds[number] = LineKind.SYNC
    return kinds


def _function(
    filename: str, first: int, name: str, timings: Sequence[tuple[int, int, float]], scale: float
) -> FunctionTiming:
    lines = tuple(LineTiming(n, hits, t * scale) for n, hits, t in timings)
    return FunctionTiming(filename, first, name, lines)


def mnist_profile(filename: str, origin: str = "24752610.lprof", scale: float = 1.0) -> Profile:
    return Profile(
        origin=origin,
        unit_s=1e-6,
        functions=(
            _function(filename, 5, "train", TRAIN_TIMINGS, scale),
            _function(filename, 18, "test", TEST_TIMINGS, scale),
        ),
        source_format="lprof",
    )


def write_train_py(directory: Path) -> Path:
    path = directory / "train.py"
    path.write_text(TRAIN_PY, encoding="utf-8")
    return path


def workspace_of(
    profiles: Sequence[Profile], directory: Path, job: JobScriptText | None = None
) -> Workspace:
    finder = SourceFinder(profile_dirs=(directory,), cwd=directory)
    # As load_workspace would have it: the inputs it was read from (apply protects them).
    inputs = Inputs(job=job.path if job is not None else None)
    return Workspace(analysis=analyze(ProfileSet.of(profiles), finder), job=job, inputs=inputs)


def mnist_workspace(directory: Path, with_job: bool = True) -> Workspace:
    """train() and test() of a real train.py written to ``directory``; the job script."""
    source = write_train_py(directory)
    job = JobScriptText("mnist.sbatch", JOB_SCRIPT) if with_job else None
    return workspace_of([mnist_profile(str(source))], directory, job)


def missing_source_workspace(directory: Path) -> Workspace:
    """The same timings, recorded under a cluster path that does not exist here."""
    return workspace_of([mnist_profile("/cluster/home/alice/mnist/train.py")], directory)


def ranks_workspace(directory: Path) -> Workspace:
    """Two files (one per rank): merged, and each kept for comparison."""
    source = str(write_train_py(directory))
    parts = [
        mnist_profile(source, origin="/scratch/alice/job/rank0.lprof", scale=1.0),
        mnist_profile(source, origin="/scratch/alice/job/rank1.lprof", scale=0.5),
    ]
    return workspace_of(parts, directory)


def make_app(workspace: Workspace, title: str = "tuneadvisor: 24752610.lprof") -> TuneAdvisorApp:
    return TuneAdvisorApp(load=lambda: workspace, title=title)


def app_with(
    load: Callable[[], Workspace], quick: Callable[[], Workspace] | None = None
) -> TuneAdvisorApp:
    return TuneAdvisorApp(load=load, title="tuneadvisor: test", quick=quick)


# -- advice -------------------------------------------------------------------------------


def copy_example(directory: Path) -> Path:
    """The bundled MNIST example (profile, job script, training script) copied to
    ``directory``/mnist, so writing next to the job never touches the checkout."""
    target = directory / "mnist"
    target.mkdir()
    for name in EXAMPLE_FILES:
        shutil.copy2(EXAMPLE / name, target / name)
    return target


def quick_of(workspace: Workspace, directory: Path) -> Workspace:
    """What the quick first stage gives for ``workspace``'s profile: numbers only (no
    source looked for, no advice), partial."""
    assert workspace.analysis is not None

    class NoSource(SourceFinder):
        def read_lines(self, filename: str) -> tuple[Path, list[str]] | None:
            return None

    parts = [mnist_profile(str(directory / "train.py"))]
    analysis = replace(analyze(ProfileSet.of(parts), NoSource()), notes=(), missing_sources=())
    return Workspace(analysis=analysis, job=workspace.job, partial=True)


LOADER_RATIONALE = """
Most of the training function's time is spent on the line that fetches the next batch: the
GPU waits while the DataLoader decodes and augments images. Give the loader worker
processes (num_workers) and the cores they run on (--cpus-per-task).
"""

SCRIPT_PATCH = """\
--- a/train.py
+++ b/train.py
@@ -1,3 +1,4 @@
+import os
 import torch
 import torch.nn.functional as F
"""


def sample_findings() -> tuple[Finding, ...]:
    """Two findings under two causes: a warning first in the rules' order, then an error."""
    loader = Finding(
        id="dataloader-bound",
        title="Training waits for the DataLoader",
        severity=Severity.WARNING,
        group="input-pipeline",
        evidence=(
            Evidence("DataLoader share of the training function", 84.5, "fraction"),
            Evidence("threshold (%)", 10),
            Evidence("cores requested", 1, "cores"),
        ),
        suggest=Suggestion(sbatch={"cpus-per-task": 4}, script={"num_workers": 3}),
        rationale=LOADER_RATIONALE,
        references=("https://pytorch.org/docs/stable/data.html",),
        rule_path="rules/dataloader-bound.toml",
    )
    mismatch = Finding(
        id="tasks-gpus-mismatch",
        title="More tasks than GPUs on the node",
        severity=Severity.ERROR,
        group="distributed",
        evidence=(Evidence("tasks per node", 2), Evidence("GPUs per node", 1)),
        suggest=Suggestion(env={"NCCL_DEBUG": "INFO"}),
        rationale="Each rank needs its own GPU.",
        references=(),
        rule_path="rules/tasks-gpus-mismatch.toml",
    )
    return (loader, mismatch)


def sample_advice(
    findings: tuple[Finding, ...] | None = None, script_patch: str = SCRIPT_PATCH
) -> Advice:
    """Advice as the advisor builds it, by hand: fixed text for stable screens."""
    return sample_plan_written(findings, script_patch)[0]


def sample_tuned(
    findings: tuple[Finding, ...] | None = None, script_patch: str = SCRIPT_PATCH
) -> TunedFiles:
    """The sample advice's plan written, as the session writes it, by hand."""
    return sample_plan_written(findings, script_patch)[1]


def sample_plan_written(
    findings: tuple[Finding, ...] | None, script_patch: str
) -> tuple[Advice, TunedFiles]:
    findings = sample_findings() if findings is None else findings
    job = JobScript.parse(JOB_SCRIPT, "mnist.sbatch")
    plan = Plan()
    diff = ""
    tuned = job
    if findings:
        plan = Plan(
            sbatch={"cpus-per-task": Change(4, ("dataloader-bound",))},
            script={"num_workers": Change(3, ("dataloader-bound",))},
            env={"NCCL_DEBUG": Change("INFO", ("tasks-gpus-mismatch",))},
        )
        tuned = job.with_directive("cpus-per-task", "4")
        diff = "".join(
            difflib.unified_diff(
                JOB_SCRIPT.splitlines(keepends=True),
                tuned.render_text().splitlines(keepends=True),
                fromfile="a/mnist.sbatch",
                tofile="b/mnist.sbatch",
            )
        )
    else:
        script_patch = ""
    script_path = "train.py" if script_patch else None
    advice = Advice(
        findings=findings,
        skipped=(),
        plan=plan,
        facts={},
        sharpen=(
            "Slurm accounting of the finished job (--seff or --sacct)",
            "GPU metrics (--metrics: an nvidia-smi CSV log, a watch recording or DCGM output)",
        ),
        notes=(),
        script_path=script_path,
    )
    written = TunedFiles(
        original_job=job,
        tuned_job=tuned,
        job_diff=diff,
        script_patch=script_patch,
        script_path=script_path,
        notes=("set num_workers=3 where the training DataLoader is built",),
    )
    return advice, written


def advised_workspace(directory: Path, findings: tuple[Finding, ...] | None = None) -> Workspace:
    """The hand-made MNIST workspace with the sample advice (on ``findings``), written."""
    workspace = mnist_workspace(directory)
    advice, tuned = sample_plan_written(findings, SCRIPT_PATCH)
    return replace(workspace, advice=advice, tuned=tuned)


async def wait_for(pilot: Pilot[Any], done: Callable[[], bool], timeout: float = 10.0) -> None:
    """Let the app run until ``done()`` (bounded)."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.01)
        await asyncio.sleep(0)


async def wait_loaded(pilot: Pilot[Any]) -> MainScreen:
    """Wait until the loader has run and the main screen is up, then let it settle."""
    app: App[Any] = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, MainScreen)
    return screen


def static_text(widget: Static) -> str:
    """What a Static shows, as plain text (Rich renderables rendered at 100 columns)."""
    content = widget.content
    if isinstance(content, Text):
        return content.plain
    if isinstance(content, str):
        return content
    console = Console(width=100, file=io.StringIO(), color_system=None)
    with console.capture() as capture:
        console.print(content)
    return capture.get()


LONG_LAUNCH = (
    "srun python /home/alice/projects/mnist/mnist_classify.py --data /scratch/alice/mnist "
    "--epochs 3 --batch-size 64 --num-workers {workers} --pin-memory --log-every 50"
)
LONG_JOB_SCRIPT = f"""\
#!/bin/bash
#SBATCH --job-name=mnist                 # a short name for the job, shown by squeue and sacct
#SBATCH --cpus-per-task=1                # cpu-cores per task (>1 if multi-threaded tasks)
#SBATCH --gres=gpu:1

{LONG_LAUNCH.format(workers=1)}
"""


def long_line_workspace(directory: Path) -> Workspace:
    """A job script whose launch line is longer than a pane at 100 columns, and advice that
    changes one word of it (``--num-workers 1`` -> ``4``) and a commented directive."""
    tuned = LONG_JOB_SCRIPT.replace("--cpus-per-task=1 ", "--cpus-per-task=4 ").replace(
        "--num-workers 1", "--num-workers 4"
    )
    diff = "".join(
        difflib.unified_diff(
            LONG_JOB_SCRIPT.splitlines(keepends=True),
            tuned.splitlines(keepends=True),
            fromfile="a/mnist.sbatch",
            tofile="b/mnist.sbatch",
        )
    )
    workspace = advised_workspace(directory)
    assert workspace.advice is not None
    return replace(
        workspace,
        job=JobScriptText("mnist.sbatch", LONG_JOB_SCRIPT),
        advice=replace(workspace.advice, script_path=None),
        tuned=replace(workspace.tuned, job_diff=diff, script_patch="", script_path=None),
    )


def no_terminal_needed(command: str, instead: str) -> None:
    """Stands in for tui.terminal.require_terminal where a test runs the app headless (its
    stdout is pytest's capture, no terminal)."""
    del command, instead
