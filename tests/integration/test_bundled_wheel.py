"""The wheel carries the bundled training scripts, job scripts and data generators: built
from a copy of the checkout, installed into a folder of its own, and asked from elsewhere
(no checkout, no TUNEADVISOR_TRAINING_DIR) where its scripts are."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# what the wheel is not built from (and the copy does not need)
SKIP = shutil.ignore_patterns(
    ".venv", ".git", "build", "dist", "runs", "data", ".*_cache", ".hypothesis", "__pycache__",
    "*.egg-info", "tests", "bench", "docs", "examples",
)  # fmt: skip
SHIPPED = [
    "tuneadvisor/bundled/training/mnist_single.py",
    "tuneadvisor/bundled/training/trainkit.py",
    "tuneadvisor/bundled/training/probekit.py",
    "tuneadvisor/bundled/training/probe_hook/sitecustomize.py",
    "tuneadvisor/bundled/training/mnist_torchrun.py",
    "tuneadvisor/bundled/slurm/mnist_ddp.sbatch",
    "tuneadvisor/bundled/make_mnist_data.py",
    "tuneadvisor/bundled/make_cifar100_data.py",
    "tuneadvisor/rules/dataloader-bound.toml",
]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed with ``pip install --target`` (offline: no dependencies, the
    build backend from this environment)."""
    base = tmp_path_factory.mktemp("wheel")
    src, out, target = base / "src", base / "dist", base / "site"
    shutil.copytree(REPO, src, symlinks=True, ignore=SKIP)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", str(out),
         str(src)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (wheel,) = out.glob("tuneadvisor-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [name for name in SHIPPED if name not in names]
    assert not missing, f"not in the wheel: {missing}"
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    subprocess.run(
        [*pip, "install", "--no-deps", "--no-index", "-q", "--target", str(target), str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return target


def _ask(target: Path, cwd: Path, code: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUNEADVISOR_")}
    env["PYTHONPATH"] = str(target)  # ahead of the checkout's editable install
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    answer: dict[str, str] = json.loads(done.stdout)
    return answer


def test_an_installed_wheel_finds_its_own_training_scripts(installed: Path, tmp_path: Path) -> None:
    code = """if True:
        import json, tuneadvisor
        from tuneadvisor.relaunch import bundled as b
        spec = b.bundled("mnist_ddp")
        print(json.dumps({
            "package": tuneadvisor.__file__, "training": str(b.training_dir()),
            "script": str(b.script_path(spec)), "job": str(b.BUNDLED_DIR / "slurm" / spec.job),
            "mnist": str(b.generator_path("mnist")), "cifar": str(b.generator_path("cifar100")),
        }))
    """
    found = _ask(installed, tmp_path, code)
    for key, path in found.items():
        assert Path(path).is_relative_to(installed), (key, path)  # not the checkout's
        assert Path(path).exists(), (key, path)
    assert (Path(found["training"]) / "trainkit.py").is_file()
    assert "srun" in Path(found["job"]).read_text()


def test_the_installed_generator_makes_the_synthetic_data(installed: Path, tmp_path: Path) -> None:
    for module in ("numpy", "PIL"):
        pytest.importorskip(module)
    code = f"""if True:
        import json, sys
        from pathlib import Path
        from tuneadvisor.relaunch.bundled import generator_path, has_data, synthetic_data
        root = synthetic_data("mnist", Path({str(tmp_path / "cache")!r}), 64, sys.executable)
        print(json.dumps({{"root": str(root), "ok": str(has_data("mnist", root)),
                          "generator": str(generator_path("mnist"))}}))
    """
    found = _ask(installed, tmp_path, code)
    assert found["ok"] == "True" and Path(found["generator"]).is_relative_to(installed)
