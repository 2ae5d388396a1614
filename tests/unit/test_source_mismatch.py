"""A source file on disk that disagrees with the profile must not shift the time onto other
lines: the table's own text decides, and a note says what was done (issue 11)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO
from tuneadvisor.cli import main
from tuneadvisor.profile.analysis import AnnotatedLine, ProfileAnalysis, analyze
from tuneadvisor.profile.model import FunctionTiming, LineTiming, Profile, ProfileSet
from tuneadvisor.profile.source import SourceFinder
from tuneadvisor.profile.text_table import parse_table
from tuneadvisor.trainscript.kinds import LineKind

MNIST = REPO / "examples" / "mnist"
TABLE = MNIST / "24752610.txt"
SCRIPT = MNIST / "mnist_classify.py"
LOADER_TEXT = "for batch_idx, (data, target) in enumerate(train_loader):"


def _case(tmp_path: Path, script_lines: list[str]) -> Path:
    """The table next to a script with these lines; returns the table's path."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    shutil.copy(TABLE, tmp_path / TABLE.name)
    (tmp_path / SCRIPT.name).write_text("\n".join(script_lines) + "\n", encoding="utf-8")
    return tmp_path / TABLE.name


def _without_profile_line() -> list[str]:
    lines = SCRIPT.read_text(encoding="utf-8").splitlines()
    at = lines.index("@profile")
    return lines[:at] + lines[at + 1 :]


def _one_line_inserted() -> list[str]:
    return ["# a comment added after the run", *SCRIPT.read_text(encoding="utf-8").splitlines()]


def _analysis(table: Path) -> ProfileAnalysis:
    profile = parse_table(table.read_text(encoding="utf-8"), str(table))
    return analyze(ProfileSet.of([profile]), SourceFinder(profile_dirs=(table.parent,)))


def _loader(analysis: ProfileAnalysis) -> AnnotatedLine:
    train = analysis.function("train")
    assert train is not None
    return next(ln for ln in train.lines if ln.source and LOADER_TEXT in ln.source)


def test_the_bundled_example_matches_its_script_and_has_no_note(tmp_path: Path) -> None:
    analysis = _analysis(_case(tmp_path, SCRIPT.read_text(encoding="utf-8").splitlines()))
    loader = _loader(analysis)
    assert loader.kind is LineKind.DATALOADER
    assert not [n for n in analysis.notes if "shifted" in n or "differs" in n]


@pytest.mark.parametrize(
    ("script", "words"),
    [
        (_without_profile_line, "shifted by 1 line up"),
        (_one_line_inserted, "shifted by 1 line down"),
    ],
)
def test_a_shifted_script_is_matched_by_content(
    tmp_path: Path, script: Callable[[], list[str]], words: str
) -> None:
    expected = _loader(_analysis(_case(tmp_path / "same", SCRIPT.read_text().splitlines())))
    analysis = _analysis(_case(tmp_path, script()))
    loader = _loader(analysis)
    # The recorded line numbers are kept; kind, share and text follow the content.
    assert loader.lineno == expected.lineno == 204
    assert loader.kind is LineKind.DATALOADER
    assert loader.percent == pytest.approx(expected.percent)
    train = analysis.function("train")
    assert train is not None
    assert dict(train.block)[204].strip() == LOADER_TEXT
    assert train.kinds[0].kind is LineKind.DATALOADER
    (note,) = [n for n in analysis.notes if "shifted" in n]
    assert note.startswith(f"{SCRIPT.name}: the file here is {words} from the profiled source")
    assert "(an @profile line?)" in note


def test_an_unrelated_script_gives_way_to_the_tables_own_text(tmp_path: Path) -> None:
    lines = SCRIPT.read_text(encoding="utf-8").splitlines()
    scrambled = [f"x_{i} = {i}" for i in range(len(lines))]
    analysis = _analysis(_case(tmp_path, scrambled))
    loader = _loader(analysis)
    assert loader.kind is LineKind.DATALOADER
    assert any(
        n == f"{SCRIPT.name} differs from the source the profile recorded; line kinds come "
        "from the table's own text"
        for n in analysis.notes
    )


@pytest.mark.parametrize("script", [_without_profile_line, _one_line_inserted])
def test_report_finds_dataloader_bound_with_a_shifted_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], script: Callable[[], list[str]]
) -> None:
    table = _case(tmp_path, script())
    code = main(["report", str(table), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert "dataloader-bound" in {f["id"] for f in doc["findings"]}


def _lprof_train(first_lineno: int) -> Profile:
    """An .lprof-like profile of mnist's train(): no source text, times on the loader line."""
    func = FunctionTiming(
        filename="/home/alice/mnist/mnist_classify.py",
        first_lineno=first_lineno,
        name="train",
        lines=(
            LineTiming(first_lineno + 11, 1, 0.001),
            LineTiming(first_lineno + 12, 120, 50.0),
            LineTiming(first_lineno + 16, 120, 5.0),
        ),
    )
    return Profile(origin="run.lprof", unit_s=1e-6, functions=(func,), source_format="lprof")


def _lprof_analysis(tmp_path: Path, lines: list[str], first_lineno: int) -> ProfileAnalysis:
    (tmp_path / SCRIPT.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return analyze(
        ProfileSet.of([_lprof_train(first_lineno)]), SourceFinder(profile_dirs=(tmp_path,))
    )


def test_lprof_matching_file_has_no_note(tmp_path: Path) -> None:
    analysis = _lprof_analysis(tmp_path, SCRIPT.read_text().splitlines(), 192)
    train = analysis.function("train")
    assert train is not None
    assert train.lines[1].kind is LineKind.DATALOADER
    assert not [n for n in analysis.notes if "mnist_classify.py" in n]


def test_lprof_def_moved_is_shifted_with_a_note(tmp_path: Path) -> None:
    lines = ["# one", "# two", "# three", *SCRIPT.read_text().splitlines()]
    analysis = _lprof_analysis(tmp_path, lines, 192)
    train = analysis.function("train")
    assert train is not None
    loader = train.lines[1]
    assert loader.lineno == 204  # as recorded
    assert loader.kind is LineKind.DATALOADER
    assert loader.source is not None and LOADER_TEXT in loader.source
    assert any("train() is 3 lines down" in n for n in analysis.notes)


def test_lprof_def_not_found_keeps_the_numbers_and_says_so(tmp_path: Path) -> None:
    lines = [ln.replace("def train(", "def fit(") for ln in SCRIPT.read_text().splitlines()]
    lines = lines[:150] + lines[160:]  # the line at 192 is no longer train's def
    analysis = _lprof_analysis(tmp_path, lines, 192)
    train = analysis.function("train")
    assert train is not None
    assert [ln.lineno for ln in train.lines] == [203, 204, 208]
    assert any("has changed since the profile was taken" in n for n in analysis.notes)


# A profile of another program (issue 20, point 5): the profile's functions live in
# mnist_classify.py, the job runs cifar100_wrn.py.
CIFAR = """\
import torch
from torch.utils.data import DataLoader
from dataset_utils import load_cifar100

def main():
    loader = DataLoader(load_cifar100(), batch_size=128, num_workers=2)
    for images, labels in loader:
        pass

main()
"""
LPROF = MNIST / "24752610.lprof"


def _other_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], script: str
) -> dict[str, object]:
    """report the mnist .lprof with a job that runs ``script`` (kept beside it)."""
    shutil.copy(LPROF, tmp_path / LPROF.name)
    shutil.copy(SCRIPT, tmp_path / SCRIPT.name)  # the profiled source, found for line kinds
    (tmp_path / "cifar100_wrn.py").write_text(CIFAR)
    job = tmp_path / "job.sh"
    job.write_text(
        f"#!/bin/bash\n#SBATCH --cpus-per-task=1\n#SBATCH --gres=gpu:1\npython {script}\n"
    )
    code = main(["report", str(tmp_path / LPROF.name), "--job", str(job), "--format", "json"])
    assert code == 0
    doc: dict[str, object] = json.loads(capsys.readouterr().out)
    return doc


def test_a_profile_of_another_program_is_said_and_plans_no_script_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _other_program(tmp_path, capsys, "cifar100_wrn.py")
    ids = {f["id"] for f in doc["findings"]}  # type: ignore[attr-defined]
    assert {"profile-other-program", "dataloader-bound"} <= ids
    advice = doc["advice"]
    assert isinstance(advice, dict)
    assert advice["facts"]["profile.other_program"] is True
    assert advice["facts"]["profile.files"] == "mnist_classify.py"
    # dataloader-bound asked for num_workers from mnist's shares: not for cifar100_wrn.py.
    assert "num_workers" not in advice["plan"]["script"]
    assert "num_workers=2, pin_memory=True)" in advice["script_patch"]  # 2 as written
    # pin-memory-off reads cifar100_wrn.py's own DataLoader: that change stays.
    assert advice["plan"]["script"]["pin_memory"]["because"] == ["pin-memory-off"]
    assert "cpus-per-task" in advice["plan"]["sbatch"]  # the job-script sizes stay
    assert any("not cifar100_wrn.py or a module it imports" in n for n in advice["notes"])


def test_the_profiled_script_itself_is_no_other_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _other_program(tmp_path, capsys, "/home/alice/mnist/mnist_classify.py")
    advice = doc["advice"]
    assert isinstance(advice, dict)
    assert advice["facts"]["profile.other_program"] is False
    assert "profile-other-program" not in {f["id"] for f in doc["findings"]}  # type: ignore[attr-defined]
    assert "num_workers" in advice["plan"]["script"]


def test_a_profiled_module_the_script_imports_is_the_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """mnist_classify.py imported by the job's script: its functions are the program's."""
    (tmp_path / "run.py").write_text("import mnist_classify\nmnist_classify.main()\n")
    doc = _other_program(tmp_path, capsys, "run.py")
    advice = doc["advice"]
    assert isinstance(advice, dict)
    assert advice["facts"]["profile.other_program"] is False
