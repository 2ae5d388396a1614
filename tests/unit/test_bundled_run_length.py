"""`run` of a bundled script runs as long as the bundled job does (issue 33, point 2: the
first hour's `run` took 1,400 steps, the script's own 14 epochs, about 40 minutes on a CPU):
its `--epochs` is the job script's own unless `--epochs` or `--max-steps` is given."""

from __future__ import annotations

import re

import pytest

from tuneadvisor.relaunch.bundled import BUNDLED, BUNDLED_DIR, as_the_job_runs


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_the_length_is_the_bundled_jobs_own(name: str) -> None:
    spec = BUNDLED[name]
    text = (BUNDLED_DIR / "slurm" / spec.job).read_text()
    said = [int(m) for m in re.findall(r"--epochs[ =](\d+)", text)]
    assert said, f"{spec.job} names no --epochs"
    assert set(said) == {spec.epochs}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, {"epochs": 1}),
        ({"num_workers": 2}, {"num_workers": 2, "epochs": 1}),
        ({"epochs": 3}, {"epochs": 3}),  # the user's word
        ({"max_steps": 60}, {"max_steps": 60}),  # a length given another way
    ],
)
def test_a_length_given_is_kept(given: dict[str, object], expected: dict[str, object]) -> None:
    assert as_the_job_runs(BUNDLED["mnist_single"], given) == expected
