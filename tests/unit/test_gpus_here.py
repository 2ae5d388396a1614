"""A run's label and notes before it starts say what it will get on this machine: a job shape
that asks for a GPU, run where there is none, is never labelled "1 gpu" (issue 33)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuneadvisor.relaunch.local_allocation import describe_here, emulate, gpus_here
from tuneadvisor.runrecord.settings import Settings

ASKS_ONE = Settings(cpus_per_task=2, gpus=1, knobs={"num_workers": 2})


def _dev(tmp_path: Path, *names: str) -> Path:
    for name in names:
        (tmp_path / name).touch()
    return tmp_path


@pytest.mark.parametrize(
    ("names", "visible", "expected"),
    [
        ((), None, 0),
        (("nvidiactl", "nvidia-uvm", "nvidia-modeset"), None, 0),  # the driver, no device
        (("nvidia0", "nvidiactl"), None, 1),
        (("nvidia0", "nvidia1", "nvidiactl"), None, 2),
        (("nvidia0", "nvidia1"), "1", 1),
        (("nvidia0", "nvidia1"), "", 0),
        (("nvidia0",), "-1", 0),
    ],
)
def test_gpus_here_counts_the_devices_cuda_would_open(
    tmp_path: Path, names: tuple[str, ...], visible: str | None, expected: int
) -> None:
    env = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
    assert gpus_here(_dev(tmp_path, *names), env) == expected


def test_gpus_here_is_unknown_where_there_is_no_dev(tmp_path: Path) -> None:
    assert gpus_here(tmp_path / "missing", {}) is None


def test_a_gpu_asked_for_on_a_machine_without_one_is_not_labelled_as_had() -> None:
    label = describe_here(ASKS_ONE, 0)
    assert "1 gpu" not in label
    assert label == "2 cpu, workers 2, no GPU here (1 asked)"
    assert describe_here(ASKS_ONE, 1) == ASKS_ONE.describe() == "2 cpu, 1 gpu, workers 2"
    assert describe_here(ASKS_ONE, None) == ASKS_ONE.describe()  # unknown: as asked
    assert describe_here(Settings(cpus_per_task=2), 0) == "2 cpu"


def test_the_allocation_note_says_the_run_trains_on_the_cpu_here() -> None:
    none_here = emulate(ASKS_ONE, name="x", submit_dir="/tmp", cores=[0, 1], gpus=0)
    assert any("this machine has none" in n for n in none_here.notes)
    one_here = emulate(ASKS_ONE, name="x", submit_dir="/tmp", cores=[0, 1], gpus=1)
    assert not any("this machine has none" in n for n in one_here.notes)
    assert any("asked for 1 GPU(s)" in n for n in one_here.notes)
