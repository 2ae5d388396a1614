"""The synthetic data set `run --synthetic N` makes is there whole or not at all (issue 33,
point 2: nothing half-written): a generator that fails, or a Ctrl-C while it writes, leaves
no folder a later run would take for the data set (has_data looks for one file)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tuneadvisor.errors import InputError
from tuneadvisor.relaunch import bundled
from tuneadvisor.relaunch.bundled import has_data, synthetic_data

# writes the training images first, then fails or finishes
GENERATOR = """
import subprocess
import sys
from pathlib import Path
raw = Path(sys.argv[1]) / "MNIST" / "raw"
raw.mkdir(parents=True)
(raw / "train-images-idx3-ubyte").write_bytes(b"\\0" * 16)
if "{mode}" == "fail":
    sys.exit("disk full")
(raw / "train-labels-idx1-ubyte").write_bytes(b"\\0" * 8)
"""


def _generator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    script = tmp_path / f"gen-{mode}.py"
    script.write_text(GENERATOR.replace("{mode}", mode))
    monkeypatch.setattr(bundled, "generator_path", lambda dataset: script)


def _left(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir()) if cache.exists() else []


def test_a_failed_generator_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _generator(tmp_path, monkeypatch, "fail")
    cache = tmp_path / "cache"
    with pytest.raises(InputError, match="disk full"):
        synthetic_data("mnist", cache, 64, sys.executable)
    assert _left(cache) == []


def test_ctrl_c_while_it_is_made_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"

    def interrupted(argv: list[str], **kwargs: object) -> None:
        raw = Path(argv[2]) / "MNIST" / "raw"
        raw.mkdir(parents=True)
        (raw / "train-images-idx3-ubyte").write_bytes(b"\0")  # half of it
        raise KeyboardInterrupt

    _generator(tmp_path, monkeypatch, "ok")
    monkeypatch.setattr(subprocess, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        synthetic_data("mnist", cache, 64, sys.executable)
    assert _left(cache) == []


def test_a_made_set_is_in_place_whole_and_an_incomplete_one_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _generator(tmp_path, monkeypatch, "ok")
    cache = tmp_path / "cache"
    stale = cache / "mnist-synthetic-64"
    stale.mkdir(parents=True)
    (stale / "half").write_text("left by an older version")
    root = synthetic_data("mnist", cache, 64, sys.executable)
    assert root == stale and has_data("mnist", root)
    assert (root / "MNIST" / "raw" / "train-labels-idx1-ubyte").is_file()
    assert not (root / "half").exists()
    assert _left(cache) == ["mnist-synthetic-64"]
