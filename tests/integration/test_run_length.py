"""`run` without a length flag runs one epoch, as the bundled job does (issue 33, point 2),
and says so in its record; `--epochs` given is obeyed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_run_local import _cli

pytestmark = [pytest.mark.torch]


@pytest.mark.parametrize(("flags", "epochs"), [((), 1), (("--epochs", "2"), 2)])
def test_run_is_as_long_as_the_bundled_job_unless_told(
    torch_python: str,
    mnist: Path,
    tmp_path: Path,
    flags: tuple[str, ...],
    epochs: int,
) -> None:
    quick = ["--cpus-per-task", "1", "--num-workers", "0", "--batch-size", "64",
             "--log-interval", "1", "--max-eval-batches", "1", "--no-progress"]  # fmt: skip
    proc = _cli(torch_python, tmp_path, "run", "mnist_single", "--data-dir", str(mnist), *quick,
                *flags)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (record,) = (tmp_path / "runs").glob("*/run.json")
    run = json.loads(record.read_text())
    assert run["settings"]["knobs"]["epochs"] == epochs
    ((*_, flag, value),) = [c[: c.index("--epochs") + 2] for c in run["commands"]]
    assert (flag, value) == ("--epochs", str(epochs))
    # 256 training images in batches of 64: 4 steps an epoch
    assert max(s["step"] for s in run["steps"]) == 4 * epochs
