"""The scripts a newcomer runs first (issue 24, points 1 and 18).

- `scripts/demo`: after the TUI it says where `tuneadvisor` lives (.venv/bin: a new shell
  does not know the command) and the command to activate it, and keeps open's exit status.
  Run in a copy of the checkout's scripts with setup.sh and the venv's command stood in (the
  real setup installs the package: minutes and a network the test does not need).
- `scripts/contracts` (the import-contracts step of `scripts/test`): one line when every
  contract is kept, however narrow the terminal; the whole report when one is broken.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _fake_checkout(tmp_path: Path, open_status: int) -> Path:
    root = tmp_path / "clone"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "demo", root / "scripts" / "demo")
    (root / "scripts" / "setup.sh").write_text("echo setup: ok\n")
    venv = root / ".venv" / "bin"
    venv.mkdir(parents=True)
    stub = venv / "tuneadvisor"
    stub.write_text(f'#!/bin/sh\necho "$@" > "{root}/open.args"\nexit {open_status}\n')
    stub.chmod(0o755)
    return root


def test_the_demo_ends_saying_where_the_command_is(tmp_path: Path) -> None:
    root = _fake_checkout(tmp_path, 0)
    env = {k: v for k, v in os.environ.items() if k != "TUNEADVISOR_NO_TRAIN"}
    demo = ["bash", str(root / "scripts" / "demo"), "--extra-flag"]
    done = subprocess.run(demo, capture_output=True, text=True, timeout=60, env=env, check=False)
    assert done.returncode == 0, done.stderr
    args = (root / "open.args").read_text().split()
    assert args == ["open", "examples/mnist/24752610.lprof", "--job",
                    "examples/mnist/mnist.sbatch", "--extra-flag"]  # fmt: skip
    said = done.stdout
    assert f"tuneadvisor is installed in {root}/.venv/bin" in said
    assert "source .venv/bin/activate" in said and f"export PATH={root}/.venv/bin:$PATH" in said
    # the command it suggests is one the example can run (the seff it names is bundled)
    suggested = [line.strip() for line in said.splitlines() if "tuneadvisor report" in line]
    assert suggested, said
    for word in suggested[0].split():
        if word.startswith("examples/"):
            assert (REPO / word).is_file(), word


def test_the_demo_keeps_the_status_of_open(tmp_path: Path) -> None:
    root = _fake_checkout(tmp_path, 3)
    done = subprocess.run(["bash", str(root / "scripts" / "demo")], capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 3 and "source .venv/bin/activate" in done.stdout


def _contracts(*args: str, columns: str = "40") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LINT_IMPORTS": str(LINT_IMPORTS), "PYTHONPATH": str(REPO),
           "COLUMNS": columns}  # fmt: skip
    script = ["bash", str(REPO / "scripts" / "contracts"), *args]
    return subprocess.run(script, capture_output=True, text=True, timeout=300, env=env, check=False)


def test_the_import_contracts_are_one_line_in_a_narrow_terminal() -> None:
    pyproject = (REPO / "pyproject.toml").read_text()
    count = pyproject.count("[[tool.importlinter.contracts]]")
    done = _contracts()
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [f"import contracts: {count} kept, 0 broken."]


def test_a_broken_contract_shows_the_whole_report(tmp_path: Path) -> None:
    config = tmp_path / "broken.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "tuneadvisor"\ninclude_external_packages = true\n'
        '[[tool.importlinter.contracts]]\nname = "the command line never imports argparse"\n'
        'type = "forbidden"\nsource_modules = ["tuneadvisor.cli"]\n'
        'forbidden_modules = ["argparse"]\n'
    )
    done = _contracts("--config", str(config), columns="200")
    assert done.returncode == 1
    assert "the command line never imports argparse BROKEN" in done.stdout
    assert "Contracts: 0 kept, 1 broken." in done.stdout
