"""Shared test helpers: build real analyses from hand-made timings and real source files."""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import Any

import pytest

from tuneadvisor.profile.analysis import ProfileAnalysis, analyze
from tuneadvisor.profile.model import FunctionTiming, LineTiming, Profile, ProfileSet
from tuneadvisor.profile.source import SourceFinder

REPO = Path(__file__).resolve().parent.parent
# seff of the tutorial job: one busy core, 1.31 GB of 8 GB (the advice fixtures' job)
TUTORIAL_SEFF = REPO / "tests" / "fixtures" / "advice" / "tutorial" / "seff.txt"
# seff of a short job on the local cluster: one busy core, 316 MB of 8 GB
BUSY_CORE_SEFF = REPO / "tests" / "fixtures" / "seff" / "one-busy-core.txt"
# the multi-node jobs, shared by the `multinode` test modules (run once per session),
# and every JSON report a test writes, checked against its schema (tests/report_schema.py)
pytest_plugins = ["tests.integration.multinode_jobs", "tests.report_schema"]

TRAIN_SOURCE = """\
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader


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
            print(loss.item())
"""


def line_of(source: str, needle: str) -> int:
    """1-based number of the first line containing ``needle`` (tests never hard-code it)."""
    for number, text in enumerate(source.splitlines(), start=1):
        if needle in text:
            return number
    raise AssertionError(f"{needle!r} not in source")


def tutorial_profile(filename: str, scale: float = 1.0, origin: str = "24752610.lprof") -> Profile:
    """The tutorial's shape: the DataLoader line dominates train()."""
    src = TRAIN_SOURCE
    timings = [
        ("model.train()", 1, 0.001),
        ("for batch_idx", 939, 38.0),
        ("data, target =", 938, 0.9),
        ("optimizer.zero_grad()", 938, 0.4),
        ("output = model(data)", 938, 3.0),
        ("loss = F.nll_loss", 938, 0.3),
        ("loss.backward()", 938, 2.1),
        ("optimizer.step()", 938, 0.8),
        ("if batch_idx % 10", 938, 0.01),
        ("print(loss.item())", 94, 0.05),
    ]
    lines = tuple(LineTiming(line_of(src, needle), hits, t * scale) for needle, hits, t in timings)
    func = FunctionTiming(filename, line_of(src, "def train"), "train", lines)
    return Profile(origin=origin, unit_s=1e-6, functions=(func,), source_format="lprof")


@pytest.fixture
def tutorial_analysis(tmp_path: Path) -> ProfileAnalysis:
    script = tmp_path / "mnist_classify.py"
    script.write_text(TRAIN_SOURCE)
    profile = tutorial_profile("/no-such-cluster/home/alice/mnist/mnist_classify.py")
    finder = SourceFinder(profile_dirs=(tmp_path,), cwd=tmp_path)
    return analyze(ProfileSet.of([profile]), finder)


def tutorial_seff(
    *,
    cores: int = 1,
    state: str = "COMPLETED",
    used: str = "1.31 GB",
    requested: str = "8.00 GB",
    cpu_efficiency: str = "94.64",
) -> str:
    """The tutorial job's seff (``TUTORIAL_SEFF``) with the lines a test varies replaced; the
    defaults give the file as it is."""
    text = TUTORIAL_SEFF.read_text()
    for pattern, line in (
        (r"^State: \S+", f"State: {state}"),
        (r"^Cores: \d+$", f"Cores: {cores}"),
        (r"^CPU Efficiency: [\d.]+%", f"CPU Efficiency: {cpu_efficiency}%"),
        (r"^Memory Utilized: .*$", f"Memory Utilized: {used}"),
        (r"^(Memory Efficiency: [\d.]+% of ).*$", rf"\g<1>{requested}"),
    ):
        text, count = re.subn(pattern, line, text, flags=re.MULTILINE)
        assert count == 1, pattern
    return text


# What a developer's own setup would add to every test's evidence: their rules and site file
# (also what processes started by a test inherit), and a runs folder of their own.
USER_SETTINGS = ("TUNEADVISOR_SITE", "TUNEADVISOR_RULES", "TUNEADVISOR_RUNS_DIR")


def pytest_configure(config: pytest.Config) -> None:
    """pytest itself (the xdist controller included) takes Ctrl-C as at a terminal too, so
    scripts/test's timeout (SIGINT) ends it with its summary, whatever CI started it with."""
    del config
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _ctrl_c_as_at_a_terminal() -> None:
    """Each test starts with the SIGINT handler an interactive user has.

    A shell without job control starts a background command with SIGINT ignored, and CI
    starts the suite that way; Python then keeps it ignored, and so does every child a test
    starts. The Ctrl-C tests then saw no KeyboardInterrupt (one killed its xdist worker), and
    a child meant to be stopped with SIGINT ran on. Setting a handler here also gives each
    child the default action, since exec resets a handled signal."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _no_user_config(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every test runs without the user's config: $XDG_CONFIG_HOME (rules and site.toml) is an
    empty folder and the variables naming rules, a site or a runs folder are unset, so a new
    test file cannot pick up a developer's own rules. The compiled rule pack is cached in
    $XDG_CACHE_HOME: tests keep theirs out of the user's home too (one folder per test
    session; the cache is keyed by content). A test that wants any of these sets it."""
    base = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "no-user-config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(base / "xdg-cache"))
    for name in USER_SETTINGS:
        monkeypatch.delenv(name, raising=False)


def without_tuned_from(text: str) -> str:
    """A tuned job script less its one `# tuneadvisor: tuned from` line (asserted there is
    exactly one): the rest compared byte for byte."""
    lines = text.splitlines(keepends=True)
    stamps = [line for line in lines if line.startswith("# tuneadvisor: tuned from ")]
    assert len(stamps) == 1, f"expected one tuned-from line, found {stamps}"
    return "".join(line for line in lines if line not in stamps)


EXAMPLE_INPUTS = ["examples/mnist/24752610.lprof", "--job", "examples/mnist/mnist.sbatch"]


@pytest.fixture
def example_report(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """`report --format json` of the bundled example (profile and job script), parsed; the
    user's own rules and site are kept out by the autouse fixture above."""
    import json

    from tuneadvisor.cli import main

    monkeypatch.chdir(REPO)
    assert main(["report", *EXAMPLE_INPUTS, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def torch_python() -> str:
    """The Python that has torch and torchvision (the train extra), or the test skips
    (the integration and process tests that run the bundled training)."""
    from tests.integration.test_training_mnist import _need

    return _need("torch", "torchvision")
