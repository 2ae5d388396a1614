"""The bundled training scripts: names, how each is launched, and the data each reads.

They ship inside the package (``tuneadvisor/bundled/``: in a checkout, symlinks to the
top-level ``training/``, ``slurm/`` and the ``scripts/make_*_data.py`` generators; in a
wheel, copies), so ``run`` works from an installed wheel as from a checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tuneadvisor.errors import InputError

BUNDLED_DIR = Path(__file__).resolve().parents[1] / "bundled"


@dataclass(frozen=True)
class Bundled:
    name: str
    script: str  # file name inside the training folder
    launcher: str  # "python" (one process), "srun" (one process per task), "torchrun"
    dataset: str  # "mnist" or "cifar100"
    job: str  # the bundled job script in slurm/
    summary: str
    # The job script's own `--epochs`: `run` runs as the job does (one epoch of MNIST ends
    # in minutes on a laptop's CPU; the script's own default, 14, takes most of an hour)
    epochs: int


BUNDLED: dict[str, Bundled] = {
    b.name: b
    for b in (
        Bundled("mnist_single", "mnist_single.py", "python", "mnist", "mnist_single.sbatch",
                "MNIST CNN on one GPU or the CPU (the profiling courses' script)", 1),
        Bundled("mnist_ddp", "mnist_ddp.py", "srun", "mnist", "mnist_ddp.sbatch",
                "MNIST DDP, one process per task started by srun", 1),
        Bundled("mnist_torchrun", "mnist_torchrun.py", "torchrun", "mnist", "mnist_torchrun.sbatch",
                "MNIST DDP under torchrun, snapshots and elastic restart", 5),
        Bundled("cifar100_wrn", "cifar100_wrn.py", "srun", "cifar100", "cifar100_wrn.sbatch",
                "CIFAR-100 wide ResNet, DDP, mixed precision, early stop", 30),
    )
}  # fmt: skip


def bundled(name: str) -> Bundled:
    found = BUNDLED.get(name.removesuffix(".py"))
    if found is None:
        raise InputError(None, f"no bundled script {name!r} (known: {', '.join(BUNDLED)})")
    return found


def training_dir() -> Path:
    """``$TUNEADVISOR_TRAINING_DIR``, else the scripts shipped with the package."""
    configured = os.environ.get("TUNEADVISOR_TRAINING_DIR")
    # resolved: in a checkout the records and profiles then name training/, not the symlink
    folder = Path(configured) if configured else (BUNDLED_DIR / "training").resolve()
    if not folder.is_dir():
        raise InputError(folder, "no bundled training scripts here (set TUNEADVISOR_TRAINING_DIR)")
    return folder


def as_the_job_runs(spec: Bundled, knobs: Mapping[str, object]) -> dict[str, object]:
    """``knobs`` with the bundled job's ``--epochs`` where neither ``--epochs`` nor
    ``--max-steps`` was given (by a flag or by the advice)."""
    if knobs.get("epochs") is not None or knobs.get("max_steps") is not None:
        return dict(knobs)
    return {**knobs, "epochs": spec.epochs}


def script_path(spec: Bundled) -> Path:
    return training_dir() / spec.script


def torch_python(explicit: str | None = None) -> str:
    """The interpreter that runs training: ``--python``, ``$TUNEADVISOR_TORCH_PYTHON``, ours."""
    return explicit or os.environ.get("TUNEADVISOR_TORCH_PYTHON") or sys.executable


# --------------------------------------------------------------------------- data

_GENERATORS = {"mnist": "make_mnist_data.py", "cifar100": "make_cifar100_data.py"}


def generator_path(dataset: str) -> Path:
    """The synthetic-data generator of a data set (``scripts/`` in a checkout)."""
    return BUNDLED_DIR / _GENERATORS[dataset]


def has_data(dataset: str, root: Path) -> bool:
    if dataset == "mnist":
        return (root / "MNIST" / "raw" / "train-images-idx3-ubyte").is_file()
    return (root / "cifar-100-python" / "train").is_file()


def synthetic_data(dataset: str, cache: Path, n_train: int, python: str) -> Path:
    """A synthetic data set of ``n_train`` training images (a sixth as many test images),
    made once with the bundled generator and kept under ``cache``."""
    root = cache / f"{dataset}-synthetic-{n_train}"
    if has_data(dataset, root):
        return root
    generator = generator_path(dataset)
    if not generator.is_file():
        raise InputError(generator, "the synthetic-data generator is missing")
    n_test = max(64, n_train // 6)
    # Made in a folder of its own and renamed into place whole: a run stopped (Ctrl-C) or
    # failed while it is made leaves no half-written data set that a later run would take
    # for a whole one (has_data looks for one file).
    cache.mkdir(parents=True, exist_ok=True)
    part = Path(tempfile.mkdtemp(prefix=f".{root.name}.", suffix=".part", dir=cache))
    try:
        done = subprocess.run(
            [python, str(generator), str(part), "--train", str(n_train), "--test", str(n_test),
             "--quiet"],
            capture_output=True, text=True, timeout=1800, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
            raise InputError(generator, f"could not make synthetic {dataset} data: {last}")
        if root.exists():  # an incomplete set of ours (has_data said so): made again
            shutil.rmtree(root)
        part.rename(root)
    finally:
        shutil.rmtree(part, ignore_errors=True)
    return root
