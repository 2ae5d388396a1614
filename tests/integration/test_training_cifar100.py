"""The CIFAR-100 wide ResNet and its synthetic data, as real processes on the CPU."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_training_mnist import PREFIX, REPO

pytestmark = [pytest.mark.torch]

MAKE_DATA = REPO / "scripts" / "make_cifar100_data.py"
SCRIPT = REPO / "training" / "cifar100_wrn.py"
TINY = ["--depth", "10", "--widen", "1", "--log-interval", "1", "--num-workers", "0",
        "--max-eval-batches", "1", "--test-batch-size", "32"]  # fmt: skip


def _records(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(x[len(PREFIX) :]) for x in stdout.splitlines() if x.startswith(PREFIX)]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "MASTER_"))}
    return {**env, "OMP_NUM_THREADS": "1", **extra}


@pytest.fixture(scope="module")
def tiny_cifar(tmp_path_factory: pytest.TempPathFactory, torch_python: str) -> Path:
    root = tmp_path_factory.mktemp("cifar")
    subprocess.run(
        [torch_python, str(MAKE_DATA), str(root), "--train", "200", "--test", "64", "--quiet"],
        check=True, timeout=300,
    )  # fmt: skip
    return root


def test_synthetic_cifar100_is_read_by_torchvision_with_its_own_checksums(
    torch_python: str, tiny_cifar: Path
) -> None:
    code = (
        "import sys, collections; sys.path.insert(0, sys.argv[1]);"
        "from cifar100_wrn import cifar100;"
        "d = cifar100(sys.argv[2], True, None); img, label = d[0];"
        "print(len(d), img.size, img.mode, len(d.classes), len(set(d.targets)) > 50)"
    )
    out = subprocess.run(
        [torch_python, "-c", code, str(REPO / "training"), str(tiny_cifar)],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout.split()  # fmt: skip
    assert out == ["200", "(32,", "32)", "RGB", "100", "True"]
    # a corrupted file is refused, as torchvision refuses a corrupted real archive
    train = tiny_cifar / "cifar-100-python" / "train"
    broken = tiny_cifar.parent / "broken"
    (broken / "cifar-100-python").mkdir(parents=True)
    for f in (tiny_cifar / "cifar-100-python").iterdir():
        (broken / "cifar-100-python" / f.name).write_bytes(f.read_bytes())
    (broken / "cifar-100-python" / "train").write_bytes(train.read_bytes()[:-10])
    proc = subprocess.run(
        [torch_python, str(SCRIPT), "--data-dir", str(broken), "--max-steps", "1", *TINY],
        capture_output=True, text=True, timeout=120, env=_env(), check=False,
    )  # fmt: skip
    assert proc.returncode == 2 and "make_cifar100_data.py" in proc.stderr


def test_make_cifar100_data_is_deterministic(torch_python: str, tmp_path: Path) -> None:
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        subprocess.run(
            [torch_python, str(MAKE_DATA), str(tmp_path / name), "--train", "20", "--test", "5",
             "--seed", str(seed), "--quiet"], check=True, timeout=120,
        )  # fmt: skip
    read = {n: (tmp_path / n / "cifar-100-python" / "train").read_bytes() for n in "abc"}
    assert read["a"] == read["b"] and read["a"] != read["c"]


def test_wrn_amp_stops_early_at_the_target_accuracy(
    torch_python: str, tiny_cifar: Path, tmp_path: Path
) -> None:
    proc = subprocess.run(
        [torch_python, str(SCRIPT), "--data-dir", str(tiny_cifar), "--amp", "--epochs", "3",
         "--max-steps", "2", "--batch-size", "16", "--target-accuracy", "0.0", *TINY],
        capture_output=True, text=True, timeout=300, env=_env(), cwd=tmp_path, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = _records(proc.stdout)
    events = [r["event"] for r in records]
    assert events == ["start", "step", "step", "epoch", "early_stop", "end"]
    start, epoch = records[0], records[3]
    assert start["model"] == "WRN-10-1" and start["amp"] is True
    assert epoch["images_per_s"] > 0 and 0.0 <= epoch["accuracy"] <= 1.0


@pytest.mark.slow
def test_wrn_ddp_splits_the_global_batch_across_two_gloo_ranks(
    torch_python: str, tiny_cifar: Path, tmp_path: Path
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    procs = [
        subprocess.Popen(
            [
                torch_python,
                str(SCRIPT),
                "--data-dir",
                str(tiny_cifar),
                "--epochs",
                "1",
                "--max-steps",
                "2",
                "--batch-size",
                "32",
                *TINY,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=_env(
                SLURM_PROCID=str(r),
                SLURM_LOCALID=str(r),
                SLURM_NTASKS="2",
                MASTER_ADDR="127.0.0.1",
                MASTER_PORT=port,
            ),
        )
        for r in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs[0][1][-2000:] + outs[1][1][-2000:]
    records = _records(outs[0][0])
    start, end = records[0], records[-1]
    assert start["world_size"] == 2 and start["launcher"] == "srun"
    assert start["global_batch_size"] == 32 and start["per_rank_batch_size"] == 16
    assert end["steps"] == 2 and end["samples"] == 2 * 32
