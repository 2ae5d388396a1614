"""Before training starts: does its interpreter have torch? ``run``, ``tune`` and ``watch --
python train.py`` ask first, so a missing torch is one line and exit status 2 with how to get
it, instead of the script's traceback, exit 1 and a failed run record.

The question is doctor's (workspace/site_checks/training_python.py), in its cheaper form: torch
is found, not imported, in a process of the interpreter's own.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

from tuneadvisor.errors import InputError
from tuneadvisor.workspace.site_checks.training_python import (
    SET_PYTHON,
    TORCH_PRESENT,
    InterpreterProbe,
    torch_check,
)

# Finding a package is quick; a first start from a network file system is not.
TIMEOUT_S = 60.0
GET_TRAIN_EXTRA = (
    "install the train extra (in a checkout: bash scripts/setup.sh, or "
    ".venv/bin/pip install -e '.[train]'), or name an interpreter that has torch: " + SET_PYTHON
)
_PYTHON_NAME = re.compile(r"python[0-9.]*")
_OPTIONS_WITH_VALUE = {"-W", "-X", "--check-hash-based-pycs"}
_MAX_SCRIPT_BYTES = 4 << 20  # a training script is a few KiB; no need to read a huge file


def require_torch(python: str, timeout_s: float = TIMEOUT_S) -> None:
    """Raise one InputError line when ``python`` cannot run or has no torch installed. A
    probe that does not answer in time is let through: the run will say what happens."""
    probe = InterpreterProbe(python, timeout_s, program=TORCH_PRESENT).result()
    if probe.answer is None:
        if probe.problem and probe.problem.startswith("cannot run it: "):
            why = probe.problem.removeprefix("cannot run it: ")
            raise InputError(python, f"cannot start the training interpreter: {why}")
        return
    check = torch_check(probe.answer)
    if check.status == "ok":
        return
    if check.status == "missing":
        raise InputError(python, f"the training interpreter has no torch: {GET_TRAIN_EXTRA}")
    raise InputError(python, f"the training interpreter's {check.value}: {check.fix}")


def torch_script_python(argv: Sequence[str]) -> str | None:
    """The interpreter of ``argv`` when it is ``python [OPTIONS] SCRIPT.py ...`` and the
    script imports torch at its top level (it cannot start without it); else None."""
    if not argv or not _PYTHON_NAME.fullmatch(Path(argv[0]).name):
        return None
    script = _script_of(argv[1:])
    if script is None or not _imports_torch(Path(script)):
        return None
    return shutil.which(argv[0]) or argv[0]


def _script_of(args: Sequence[str]) -> str | None:
    """The script a python command line runs: None for ``-m``, ``-c`` or stdin."""
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
        elif arg in _OPTIONS_WITH_VALUE:
            skip_next = True
        elif arg.startswith(("-m", "-c")) or arg == "-":
            return None
        elif not arg.startswith("-"):
            return arg
    return None


def _imports_torch(script: Path) -> bool:
    try:
        if not script.is_file() or script.stat().st_size > _MAX_SCRIPT_BYTES:
            return False
        tree = ast.parse(script.read_bytes(), filename=os.fspath(script))
    except (OSError, SyntaxError, ValueError):
        return False  # the program itself will say what is wrong with it
    for node in tree.body:  # the module's own statements: an import inside `try` is optional
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if any(name.split(".")[0] == "torch" for name in names):
            return True
    return False
