"""The reader protocol of gathering (workspace/readers/): every reader module is registered
once, gathering walks the registry in order (a later reader's facts win), an input not given
says what it would add, and what a reader could not read is kept, with why, for the report's
"Not read" part; each kind of metrics file is recognised by its first lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO
from tuneadvisor.advisor.evidence import NotRead
from tuneadvisor.workspace.gather import gather
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.read_measured import METRICS_FORMATS
from tuneadvisor.workspace.readers.base import Gathering, Reader
from tuneadvisor.workspace.readers.registry import READERS

READERS_DIR = REPO / "tuneadvisor" / "workspace" / "readers"
NOT_READERS = {"__init__", "base", "registry"}


def _readers_defined(path: Path) -> set[str]:
    """The module-level names bound to a Reader(...) call in one reader module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "Reader"
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def test_every_reader_written_is_registered_once() -> None:
    """The recipe's second step cannot be forgotten: a reader module not in the registry,
    or a reader in it twice, fails here."""
    import importlib

    written = []
    for path in sorted(READERS_DIR.glob("*.py")):
        if path.stem in NOT_READERS:
            continue
        module = importlib.import_module(f"tuneadvisor.workspace.readers.{path.stem}")
        names = _readers_defined(path)
        assert names, f"{path.name}: no Reader defined"
        written += [getattr(module, name) for name in sorted(names)]
    assert sorted(map(id, written)) == sorted(map(id, READERS))
    assert len({r.name for r in READERS}) == len(READERS), "two readers of one name"


def _reader(name: str, facts: dict[str, object], given: bool = True) -> Reader:
    def read(state: Gathering) -> None:
        state.facts.update(facts)
        state.cannot_read(f"{name}.txt", "line 3 not understood")

    return Reader(name, read, given=lambda state: given, missing=f"the {name} file")


def test_gathering_walks_the_readers_in_order_and_keeps_what_they_could_not_read() -> None:
    first = _reader("first", {"job.nodes": 1, "job.gpus": 1})
    second = _reader("second", {"job.gpus": 4})
    absent = _reader("third", {"job.nodes": 9}, given=False)
    gathered = gather(Inputs(), None, env={}, readers=(first, second, absent))
    assert gathered.facts == {"job.nodes": 1, "job.gpus": 4}  # the later reader's wins
    assert gathered.not_read == (
        NotRead("first.txt", "line 3 not understood"),
        NotRead("second.txt", "line 3 not understood"),
    )
    assert not gathered.notes  # said once, in the "Not read" part
    assert gathered.sharpen == ("the third file",)  # not given: what it would add


def test_a_seff_line_not_understood_is_not_read(tmp_path: Path) -> None:
    seff = tmp_path / "seff.txt"
    text = (REPO / "tests" / "fixtures" / "seff" / "one-busy-core.txt").read_text()
    seff.write_text(text + "GPU Frobnication: 12 widgets\n")
    gathered = gather(Inputs(seff=str(seff)), None, env={})
    (not_read,) = gathered.not_read
    assert not_read.what == str(seff)
    assert not_read.why.startswith("lines not understood, left out: line 11:")
    assert "GPU Frobnication: 12 widgets" in not_read.why
    assert gathered.facts.get("seff.cores") is not None  # the rest was read


def test_a_launch_line_that_names_no_script_here_is_not_read(tmp_path: Path) -> None:
    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --cpus-per-task=2\npython elsewhere/train.py\n")
    gathered = gather(Inputs(job=str(job)), None, env={})
    (what,) = [n.line() for n in gathered.not_read if "elsewhere/train.py" in n.line()]
    assert "--script" in what
    assert "the training script (--script, or a job script that runs it)" in gathered.sharpen


def test_every_input_read_cleanly_leaves_nothing_not_read(tmp_path: Path) -> None:
    seff = REPO / "tests" / "fixtures" / "seff" / "one-busy-core.txt"
    gathered = gather(Inputs(seff=str(seff)), None, env={})
    assert gathered.not_read == ()


FIXTURES = REPO / "tests" / "fixtures"


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        (FIXTURES / "watch" / "replay-a100.jsonl", "tuneadvisor watch recording"),
        (FIXTURES / "realworld" / "dcgm" / "h800-dmon-nvlink-4gpu.txt", "dcgmi dmon output"),
        (FIXTURES / "realworld" / "dcgm" / "a30-mig-exporter-two-scrapes.txt",
         "dcgm-exporter text"),
        (FIXTURES / "nvidia-smi" / "a100-2gpu-one-idle.csv", "nvidia-smi --query-gpu CSV log"),
        (FIXTURES / "nvidia-smi" / "noheader-nounits.csv", "nvidia-smi --query-gpu CSV log"),
        (FIXTURES / "slurm-22.05" / "05-sacct.json", "JSON or XML of another kind"),
    ],
)  # fmt: skip
def test_each_kind_of_metrics_file_is_recognised_by_its_first_lines(path: Path, kind: str) -> None:
    """The first format of METRICS_FORMATS that claims a real file is its own kind."""
    text = path.read_text(encoding="utf-8")
    assert next(f.name for f in METRICS_FORMATS if f.sniff(text)) == kind


def test_a_profiled_file_whose_source_is_not_here_is_not_read(tmp_path: Path) -> None:
    from tests.conftest import tutorial_profile
    from tuneadvisor.profile.analysis import analyze
    from tuneadvisor.profile.model import ProfileSet
    from tuneadvisor.profile.source import SourceFinder

    gone = "/no-such-cluster/home/alice/train.py"
    analysis = analyze(ProfileSet.of([tutorial_profile(gone)]), SourceFinder(cwd=tmp_path))
    gathered = gather(Inputs(profiles=("x.lprof",)), analysis, env={})
    (not_read,) = [n for n in gathered.not_read if n.what == gone]
    assert "source not found" in not_read.why and "--source-root" in not_read.why


def test_what_a_trace_could_not_show_is_not_read() -> None:
    from tuneadvisor.profile.trace.model import RankTrace, TraceSet

    note = "no ProfilerStep#N in the trace: no step breakdown"
    traces = TraceSet(ranks=(RankTrace(path="rank0.json", rank=0, notes=(note,)),))
    gathered = gather(Inputs(traces=("rank0.json",)), None, env={}, traces=traces)
    assert NotRead("rank0.json", note) in gathered.not_read
    # said once, in the trace section's "Cannot show", not again as an advice note
    assert f"rank0.json: {note}" not in gathered.notes
