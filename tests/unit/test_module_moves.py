"""scripts/apply-module-moves.py: the map of module moves rewrites a tree's imports, patch
targets, contracts and doc paths, leaves what did not move alone, and a second run changes
nothing (the lead runs it again after merging branches written against the old names).

apply-module-moves: skip (this file names old paths on purpose)."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "apply-module-moves.py"
MAP = """\
# comment
tuneadvisor.session tuneadvisor.workspace
tuneadvisor.session.workspace tuneadvisor.workspace.load
tuneadvisor.slurm.seff tuneadvisor.slurm.accounting.seff  # trailing comment
tuneadvisor.trainscript.scan_ddp tuneadvisor.trainscript.scans.ddp
tuneadvisor.watch.session.Span tuneadvisor.watch.session.WatchSpan
tuneadvisor.slurm.accounting.seff.Seff tuneadvisor.slurm.accounting.seff.SeffReport
"""

BEFORE = {
    "pkg/a.py": """\
from tuneadvisor.session.gather import gather
from tuneadvisor.session.workspace import Workspace, load_workspace
import tuneadvisor.slurm.seff as seff_module
from tuneadvisor.slurm import seff
from tuneadvisor.slurm import units
from tuneadvisor.trainscript.scan import ScriptScan
from tuneadvisor.trainscript.scan_ddp import scan_ddp
from tuneadvisor.trainscript.scan_ddpx import other
from tuneadvisor.watch.session import WatchSession


def test(monkeypatch):
    monkeypatch.setattr("tuneadvisor.session.live_job.fetch_job", None)
    mock.patch("tuneadvisor.slurm.seff.parse_seff")
""",
    "docs/ARCH.md": """\
`session/workspace.load_workspace(inputs)` calls `session/gather.py`; `session/` is a folder.
`watch/session.py` is a session; `slurm/train.sbatch` and `slurm/seff.py` and
`tuneadvisor/slurm/seff.py`, `tests/unit/test_session.py`.
""",
    "pyproject.toml": 'layers = ["tuneadvisor.session", "tuneadvisor.slurm"]\n',
    "tuneadvisor/watch/session.py": """\
\"\"\"A Span of rounds.\"\"\"
from tuneadvisor.advisor.prediction import Span as PredictedSpan


class Span:
    def widen(self) -> Span:  # a Span, wider
        return Span()
""",
    "tuneadvisor/tui/watch.py": """\
from tuneadvisor.watch.session import (
    Span,
    WatchSession,
)
from tuneadvisor.watch import session
from tuneadvisor.advisor.prediction import Span as Predicted
import tuneadvisor.slurm.seff as seff_mod
from tuneadvisor.slurm.seff import Seff as S

x: list[Span] = [Span(), session.Span(), Predicted(), seff_mod.Seff(), S()]
label = "Span"
""",
}

AFTER = {
    "pkg/a.py": """\
from tuneadvisor.workspace.gather import gather
from tuneadvisor.workspace.load import Workspace, load_workspace
import tuneadvisor.slurm.accounting.seff as seff_module
from tuneadvisor.slurm.accounting import seff
from tuneadvisor.slurm import units
from tuneadvisor.trainscript.scan import ScriptScan
from tuneadvisor.trainscript.scans.ddp import scan_ddp
from tuneadvisor.trainscript.scan_ddpx import other
from tuneadvisor.watch.session import WatchSession


def test(monkeypatch):
    monkeypatch.setattr("tuneadvisor.workspace.live_job.fetch_job", None)
    mock.patch("tuneadvisor.slurm.accounting.seff.parse_seff")
""",
    "docs/ARCH.md": """\
`workspace/load.load_workspace(inputs)` calls `workspace/gather.py`; `workspace/` is a folder.
`watch/session.py` is a session; `slurm/train.sbatch` and `slurm/accounting/seff.py` and
`tuneadvisor/slurm/accounting/seff.py`, `tests/unit/test_session.py`.
""",
    "pyproject.toml": 'layers = ["tuneadvisor.workspace", "tuneadvisor.slurm"]\n',
    "tuneadvisor/watch/session.py": """\
\"\"\"A Span of rounds.\"\"\"
from tuneadvisor.advisor.prediction import Span as PredictedSpan


class WatchSpan:
    def widen(self) -> WatchSpan:  # a Span, wider
        return WatchSpan()
""",
    "tuneadvisor/tui/watch.py": """\
from tuneadvisor.watch.session import (
    WatchSpan,
    WatchSession,
)
from tuneadvisor.watch import session
from tuneadvisor.advisor.prediction import Span as Predicted
import tuneadvisor.slurm.accounting.seff as seff_mod
from tuneadvisor.slurm.accounting.seff import SeffReport as S

x: list[WatchSpan] = [WatchSpan(), session.WatchSpan(), Predicted(), seff_mod.SeffReport(), S()]
label = "Span"
""",
}


@pytest.fixture
def moves() -> ModuleType:
    spec = importlib.util.spec_from_file_location("apply_module_moves", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _read(root: Path) -> dict[str, str]:
    return {name: (root / name).read_text() for name in BEFORE}


def test_a_tree_is_rewritten_from_the_map_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    _tree(tmp_path, {**BEFORE, "scripts/module-moves.txt": MAP})
    fixture = tmp_path / "tests" / "fixtures" / "x.py"
    _tree(tmp_path, {"tests/fixtures/x.py": BEFORE["pkg/a.py"]})

    first = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert _read(tmp_path) == AFTER
    assert "rewrote: pkg/a.py" in first.stdout
    assert (tmp_path / "scripts" / "module-moves.txt").read_text() == MAP  # the map itself
    assert fixture.read_text() == BEFORE["pkg/a.py"]  # data, not code

    check = subprocess.run(
        [sys.executable, str(SCRIPT), "--check", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (check.returncode, check.stdout) == (0, "")
    subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], check=True)
    assert _read(tmp_path) == AFTER


def test_check_names_what_is_stale_and_changes_nothing(tmp_path: Path) -> None:
    _tree(tmp_path, {**BEFORE, "scripts/module-moves.txt": MAP})
    check = subprocess.run(
        [sys.executable, str(SCRIPT), "--check", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 1
    assert sorted(check.stdout.splitlines()) == [
        "stale: docs/ARCH.md",
        "stale: pkg/a.py",
        "stale: pyproject.toml",
        "stale: tuneadvisor/tui/watch.py",
        "stale: tuneadvisor/watch/session.py",
    ]
    assert _read(tmp_path) == BEFORE


@pytest.mark.parametrize(
    "bad",
    [
        "tuneadvisor.a tuneadvisor.a.b\n",  # old is the start of new: a second run moves it again
        "tuneadvisor.a tuneadvisor.b\ntuneadvisor.b tuneadvisor.c\n",  # a chain
        "tuneadvisor.a\n",
        "tuneadvisor.a tuneadvisor/b\n",
        "tuneadvisor.a.Span tuneadvisor.b.Span\n",  # a name is renamed inside its module
    ],
)
def test_a_map_that_cannot_be_applied_twice_is_refused(
    tmp_path: Path, moves: ModuleType, bad: str
) -> None:
    (tmp_path / "map.txt").write_text(bad)
    with pytest.raises(ValueError, match=r"map\.txt:"):
        moves.read_map(tmp_path / "map.txt")
    (tmp_path / "x.py").write_text("import tuneadvisor.a\n")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--map", str(tmp_path / "map.txt"), str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "map.txt" in done.stderr
    assert (tmp_path / "x.py").read_text() == "import tuneadvisor.a\n"


def test_the_projects_own_map_is_applied(moves: ModuleType) -> None:
    """Every old name of the checkout's map is gone from the checkout (README.md aside while
    it is split), so the map stays the record of what moved where."""
    root = SCRIPT.parents[1]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check", str(root)],
        capture_output=True,
        text=True,
        check=False,
    )
    # only what the repository holds: a bench's copy of an old checkout (bench/.data, ignored)
    # or a user's files left in the checkout are not the project's
    tracked = set(
        subprocess.run(
            ["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.splitlines()
    )
    stale = [
        line
        for line in done.stdout.splitlines()
        if line != "stale: README.md" and line.removeprefix("stale: ") in tracked
    ]
    assert stale == []
    for new in moves.read_map(root / "scripts" / "module-moves.txt").values():
        module, _, name = new.rpartition(".") if moves.is_name(new) else (new, "", "")
        assert importlib.util.find_spec(module) is not None, new
        assert not name or hasattr(importlib.import_module(module), name), new


def test_a_file_another_branch_added_in_a_moved_package_is_moved_too(tmp_path: Path) -> None:
    """A merge follows a moved module, not a module added beside it: session/readers/ added
    on another branch is moved into workspace/ (with git mv: it stays tracked) and its
    imports rewritten; a second run moves nothing."""
    git = ["git", "-C", str(tmp_path), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    _tree(
        tmp_path,
        {
            "scripts/module-moves.txt": MAP,
            "tuneadvisor/workspace/load.py": "X = 1\n",
            "tuneadvisor/session/readers/__init__.py": "",
            "tuneadvisor/session/readers/seff.py": (
                "from tuneadvisor.session.workspace import X\n"
                "from tuneadvisor.slurm.seff import parse_seff\n"
            ),
            "tuneadvisor/session/workspace.py": "X = 2\n",  # a module line wins
        },
    )
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "merged"], check=True)
    (tmp_path / "tuneadvisor" / "workspace" / "load.py").unlink()
    check = subprocess.run(
        [sys.executable, str(SCRIPT), "--check", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 1
    assert (
        "stale: tuneadvisor/session/readers/seff.py -> tuneadvisor/workspace/readers/seff.py"
        in (check.stdout)
    )
    assert (tmp_path / "tuneadvisor" / "session" / "readers" / "seff.py").is_file()

    subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], check=True, capture_output=True)
    assert not (tmp_path / "tuneadvisor" / "session").exists()
    assert (tmp_path / "tuneadvisor" / "workspace" / "load.py").read_text() == "X = 2\n"
    assert (tmp_path / "tuneadvisor" / "workspace" / "readers" / "seff.py").read_text() == (
        "from tuneadvisor.workspace.load import X\n"
        "from tuneadvisor.slurm.accounting.seff import parse_seff\n"
    )
    tracked = subprocess.run([*git, "ls-files"], capture_output=True, text=True, check=True)
    assert "tuneadvisor/workspace/readers/seff.py" in tracked.stdout.split()
    again = subprocess.run(
        [sys.executable, str(SCRIPT), "--check", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (again.returncode, again.stdout) == (0, "")


def test_a_stray_is_not_moved_over_a_file_already_there(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "scripts/module-moves.txt": MAP,
            "tuneadvisor/session/gather.py": "old\n",
            "tuneadvisor/workspace/gather.py": "new\n",
        },
    )
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert done.returncode == 2 and "workspace/gather.py exists" in done.stderr
    assert (tmp_path / "tuneadvisor" / "session" / "gather.py").read_text() == "old\n"
