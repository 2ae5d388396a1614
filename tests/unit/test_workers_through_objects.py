"""Issue 30 §3: worker counts a careful reader follows through objects and dicts: set on the
module's `args` and read as `self.args.cpu_workers`; passed in a `**kwargs` dict built
elsewhere in the file. What is not one value stays "could not be resolved"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import load_workspace

HELD = """\
import argparse
from torch.utils.data import DataLoader

parser = argparse.ArgumentParser()
args = parser.parse_args()
args.cpu_workers = 8


class Trainer:
    def __init__(self, args):
        self.args = args

    def loader(self, ds):
        return DataLoader(ds, batch_size=32, num_workers=self.args.cpu_workers)


for batch in Trainer(args).loader(None):
    pass
"""
KWARGS_HELPER = """\
from torch.utils.data import DataLoader


def loader_kwargs():
    return dict(num_workers=6, pin_memory=True)


loader = DataLoader(ds, batch_size=8, **loader_kwargs())
for batch in loader:
    pass
"""
KWARGS_MUTATED = """\
from torch.utils.data import DataLoader


def main(ds, args):
    loader_kw = {"batch_size": args.bs}
    loader_kw["num_workers"] = 5
    for batch in DataLoader(ds, **loader_kw):
        pass
"""


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    monkeypatch.delenv("TUNEADVISOR_SITE", raising=False)
    monkeypatch.delenv("TUNEADVISOR_RULES", raising=False)


def _facts(tmp_path: Path, text: str) -> tuple[dict[str, object], tuple[str, ...]]:
    script = tmp_path / "train.py"
    script.write_text(text)
    advice = load_workspace(Inputs(script=str(script))).advice
    assert advice is not None
    return dict(advice.facts), tuple(n.line() for n in advice.not_read)


@pytest.mark.parametrize(
    ("text", "workers", "line"),
    [(HELD, 8, 6), (KWARGS_HELPER, 6, 5), (KWARGS_MUTATED, 5, 6)],
    ids=["self.args.cpu_workers", "**helper()", "**dict set after"],
)
def test_a_worker_count_through_an_object_or_a_dict_is_resolved(
    tmp_path: Path, text: str, workers: int, line: int
) -> None:
    facts, not_read = _facts(tmp_path, text)
    assert facts["script.num_workers"] == workers
    assert facts["script.num_workers.line"] == line  # where a patch would change it
    assert not [item for item in not_read if "num_workers" in item]


def test_an_object_set_on_two_paths_stays_unresolved(tmp_path: Path) -> None:
    text = HELD.replace(
        "args.cpu_workers = 8\n", "args.cpu_workers = 8\nif x:\n    args.cpu_workers = 2\n"
    )
    facts, not_read = _facts(tmp_path, text)
    assert "script.num_workers" not in facts
    assert any(
        "self.args.cpu_workers" in item and "could not be resolved" in item for item in not_read
    )


CONFIG_DICT = """\
import os

LOADER_KWARGS = dict(num_workers=8, pin_memory=True)
"""
FROM_IMPORT = """\
from torch.utils.data import DataLoader
from config import LOADER_KWARGS

for batch in DataLoader(ds, batch_size=8, **LOADER_KWARGS):
    pass
"""
MODULE_IMPORT = """\
from torch.utils.data import DataLoader
import config

for batch in DataLoader(ds, batch_size=8, **config.LOADER_KWARGS):
    pass
"""


def _program(tmp_path: Path, script: str, config: str) -> tuple[dict[str, object], tuple[str, ...]]:
    (tmp_path / "config.py").write_text(config)
    return _facts(tmp_path, script)


@pytest.mark.parametrize(
    ("script", "config"),
    [
        (FROM_IMPORT, CONFIG_DICT),
        (MODULE_IMPORT, CONFIG_DICT),
        (FROM_IMPORT, 'LOADER_KWARGS = {"num_workers": 8, "pin_memory": True}\n'),
    ],
    ids=["from config import", "import config", "dict literal"],
)
def test_a_kwargs_dict_from_a_local_module_is_read_there(
    tmp_path: Path, script: str, config: str
) -> None:
    facts, not_read = _program(tmp_path, script, config)
    assert facts["script.num_workers"] == 8
    # Its line is config.py's: a patch must not change that line number in train.py.
    assert facts.get("script.num_workers.line") is None
    assert not [item for item in not_read if "num_workers" in item]


@pytest.mark.parametrize(
    ("script", "config"),
    [
        (FROM_IMPORT, "LOADER_KWARGS = build()\n"),
        (MODULE_IMPORT, "LOADER_KWARGS = dict(num_workers=workers())\n"),
        (FROM_IMPORT, CONFIG_DICT + 'if x:\n    LOADER_KWARGS["num_workers"] = 2\n'),
        (
            FROM_IMPORT.replace("for batch", 'LOADER_KWARGS["num_workers"] = 1\nfor batch'),
            CONFIG_DICT,
        ),
    ],
    ids=["built at run time", "a call's value", "changed in config", "changed in the script"],
)
def test_a_dict_from_a_local_module_that_is_not_one_value_stays_unresolved(
    tmp_path: Path, script: str, config: str
) -> None:
    facts, not_read = _program(tmp_path, script, config)
    assert "script.num_workers" not in facts
    assert any("num_workers" in item and "could not be resolved" in item for item in not_read)
