"""The bundled MNIST script and its synthetic data, run as real processes.

torch is never installed in the project's test venv, so the training tests run the script
with the interpreter named by ``TUNEADVISOR_TORCH_PYTHON`` (a venv with torch and
torchvision, e.g. /work/venv-torch/bin/python), else with this one, and skip when that has no
torch. The data generator needs numpy and Pillow (both come with torchvision); its IDX writer
does not, so the file format is checked here in any case.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import struct
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
MAKE_DATA = REPO / "scripts" / "make_mnist_data.py"
TRAIN_SCRIPT = REPO / "training" / "mnist_single.py"
PREFIX = "TUNEADVISOR "

IMAGES_MAGIC = 0x00000803  # unsigned byte, 3 dimensions
LABELS_MAGIC = 0x00000801  # unsigned byte, 1 dimension
RAW_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def _interpreters() -> list[str]:
    """Interpreters worth trying for torch or numpy work: the configured one, then ours."""
    configured = os.environ.get("TUNEADVISOR_TORCH_PYTHON")
    return [p for p in (configured, sys.executable) if p]


@cache
def _python_with(*modules: str) -> str | None:
    """First interpreter that imports all ``modules``, or None."""
    code = "import " + ", ".join(modules)
    for python in _interpreters():
        try:
            ok = (
                subprocess.run(
                    [python, "-c", code], capture_output=True, timeout=120, check=False
                ).returncode
                == 0
            )
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return python
    return None


def _need(*modules: str) -> str:
    python = _python_with(*modules)
    if python is None:
        pytest.skip(
            f"needs {' and '.join(modules)}: not importable by {' or '.join(_interpreters())} "
            "(set TUNEADVISOR_TORCH_PYTHON to a venv's python that has torch and torchvision)"
        )
    return python


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_mnist_data", MAKE_DATA)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read_idx(path: Path) -> tuple[int, tuple[int, ...], bytes]:
    """Independent IDX parser: (magic, dims, payload); asserts the size matches the dims."""
    blob = path.read_bytes()
    (magic,) = struct.unpack(">I", blob[:4])
    assert blob[0] == 0 and blob[1] == 0, f"{path.name}: bad magic {blob[:4]!r}"
    rank = blob[3]
    dims = struct.unpack(f">{rank}I", blob[4 : 4 + 4 * rank])
    payload = blob[4 + 4 * rank :]
    assert len(payload) == math.prod(dims), f"{path.name}: {len(payload)} bytes for {dims}"
    return magic, dims, payload


def _make_data(python: str, root: Path, n_train: int, n_test: int, seed: int = 0) -> Path:
    subprocess.run(
        [
            python,
            str(MAKE_DATA),
            str(root),
            "--train",
            str(n_train),
            "--test",
            str(n_test),
            "--seed",
            str(seed),
            "--quiet",
        ],
        check=True,
        timeout=300,
    )
    return root / "MNIST" / "raw"


# --------------------------------------------------------------------------- no numpy needed


def test_idx_writer_writes_mnist_headers(tmp_path: Path) -> None:
    gen = _load_generator()
    images = bytes(i % 256 for i in range(6 * 28 * 28))
    gen.write_idx(tmp_path / "img", (6, 28, 28), images)
    gen.write_idx(tmp_path / "lab", (6,), bytes([0, 1, 2, 3, 4, 9]))

    magic, dims, payload = _read_idx(tmp_path / "img")
    assert (magic, dims, payload) == (IMAGES_MAGIC, (6, 28, 28), images)
    magic, dims, payload = _read_idx(tmp_path / "lab")
    assert (magic, dims, payload) == (LABELS_MAGIC, (6,), bytes([0, 1, 2, 3, 4, 9]))
    assert gen.read_idx_header(tmp_path / "img") == (0x08, (6, 28, 28))
    assert not list(tmp_path.glob("*.part")), "temporary files left behind"


def test_idx_writer_refuses_a_payload_that_does_not_fit(tmp_path: Path) -> None:
    gen = _load_generator()
    with pytest.raises(ValueError, match="bytes of data"):
        gen.write_idx(tmp_path / "lab", (10,), bytes(9))
    assert not (tmp_path / "lab").exists()


def test_read_idx_header_rejects_other_files(tmp_path: Path) -> None:
    gen = _load_generator()
    (tmp_path / "x").write_bytes(b"\x1f\x8b\x08\x00gzip")
    with pytest.raises(ValueError, match="not an IDX file"):
        gen.read_idx_header(tmp_path / "x")


# --------------------------------------------------------------------------- numpy + Pillow


def test_make_mnist_data_writes_valid_deterministic_idx(tmp_path: Path) -> None:
    python = _need("numpy", "PIL")
    raw = _make_data(python, tmp_path / "a", 50, 20, seed=3)
    names = sorted(n for f in RAW_FILES.values() for n in f)
    assert sorted(p.name for p in raw.iterdir()) == sorted([*names, "SYNTHETIC.txt"])
    for split, count in (("train", 50), ("test", 20)):
        img_name, lab_name = RAW_FILES[split]
        magic, dims, pixels = _read_idx(raw / img_name)
        assert (magic, dims) == (IMAGES_MAGIC, (count, 28, 28))
        magic, dims, labels = _read_idx(raw / lab_name)
        assert (magic, dims) == (LABELS_MAGIC, (count,))
        assert set(labels) <= set(range(10)) and len(set(labels)) > 3
        for i in range(count):  # every image has ink, and its border is mostly background
            img = pixels[i * 784 : (i + 1) * 784]
            assert max(img) > 128
            assert sum(1 for v in img[:28] + img[-28:] if v) < 28

    same = _make_data(python, tmp_path / "b", 50, 20, seed=3)
    other = _make_data(python, tmp_path / "c", 50, 20, seed=4)
    for name in RAW_FILES["train"] + RAW_FILES["test"]:
        assert (raw / name).read_bytes() == (same / name).read_bytes(), f"{name} not deterministic"
    assert (raw / "train-images-idx3-ubyte").read_bytes() != (
        other / "train-images-idx3-ubyte"
    ).read_bytes()


# --------------------------------------------------------------------------- torch


def _train(python: str, data: Path, cwd: Path, *args: str) -> tuple[list[dict[str, Any]], str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # two cores: leave one for a worker
    env.pop("SLURM_CPUS_PER_TASK", None)
    proc = subprocess.run(
        [python, str(TRAIN_SCRIPT), "--data-dir", str(data), *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [
        json.loads(line[len(PREFIX) :])
        for line in proc.stdout.splitlines()
        if line.startswith(PREFIX)
    ]
    return records, proc.stdout


@pytest.fixture(scope="module")
def tiny_mnist(tmp_path_factory: pytest.TempPathFactory, torch_python: str) -> Path:
    root = tmp_path_factory.mktemp("mnist")
    _make_data(torch_python, root, 256, 64)
    return root


@pytest.mark.torch
@pytest.mark.parametrize(
    "loader_args",
    [
        ["--num-workers", "0"],
        [
            "--num-workers",
            "1",
            "--input-cost",
            "medium",
            "--persistent-workers",
            "--prefetch-factor",
            "3",
        ],
    ],
    ids=["main-process", "one-worker-medium-cost"],
)
def test_mnist_single_reports_progress(
    torch_python: str, tiny_mnist: Path, tmp_path: Path, loader_args: list[str]
) -> None:
    records, stdout = _train(
        torch_python,
        tiny_mnist,
        tmp_path,
        "--max-steps",
        "3",
        "--epochs",
        "2",
        "--batch-size",
        "16",
        "--log-interval",
        "1",
        "--test-batch-size",
        "32",
        *loader_args,
    )
    events = [r["event"] for r in records]
    assert events == ["start", "step", "step", "step", "epoch", "end"], stdout
    start, *steps, epoch, end = records
    assert start["device"] == "cpu" and start["batch_size"] == 16
    assert start["num_workers"] == int(loader_args[1])
    assert start["train_samples"] == 256 and start["test_samples"] == 64
    assert [s["step"] for s in steps] == [1, 2, 3]
    assert [s["steps"] for s in steps] == [1, 1, 1]  # each event says the steps it is over
    for s in steps:
        assert s["epoch"] == 1
        assert s["step_time_s"] > 0 and s["samples_per_s"] > 0
        assert math.isfinite(s["loss"]) and s["loss"] > 0
    # with --max-steps, a test pass of a quarter of the 48 images trained: one batch of 32
    assert epoch["epoch"] == 1 and epoch["steps"] == 3 and epoch["test_samples"] == 32
    # the events' seconds are the training's own: never more than the epoch's (issue 33)
    assert sum(s["step_time_s"] * s["steps"] for s in steps) <= epoch["train_time_s"] + 2e-3
    assert 0.0 <= epoch["accuracy"] <= 1.0
    assert end["steps"] == 3 and end["samples"] == 48 and end["wall_time_s"] > 0
    assert "Train Epoch: 1 [0/256" in stdout  # the classic lines are still there


@pytest.mark.torch
@pytest.mark.slow
def test_mnist_single_learns_the_synthetic_digits(torch_python: str, tmp_path: Path) -> None:
    data = tmp_path / "data"
    _make_data(torch_python, data, 6400, 500)
    records, stdout = _train(
        torch_python,
        data,
        tmp_path,
        "--max-steps",
        "100",
        "--epochs",
        "1",
        "--num-workers",
        "0",
        "--log-interval",
        "50",
    )
    (epoch,) = [r for r in records if r["event"] == "epoch"]
    assert epoch["accuracy"] > 0.6, stdout  # chance is 0.1


@pytest.mark.torch
def test_mnist_single_without_data_says_where_to_get_it(torch_python: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [torch_python, str(TRAIN_SCRIPT), "--data-dir", str(tmp_path / "none"), "--max-steps", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 2
    assert "make_mnist_data.py" in proc.stderr and "Traceback" not in proc.stderr
