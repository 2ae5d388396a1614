"""``--array`` values as slurmctld 22.05.8 reads them. Each verdict below was given by the
real controller (``sbatch --test-only`` on the project's cluster, MaxArraySize 1001);
tests/integration/test_array_spec_slurm.py checks generated values against it."""

from __future__ import annotations

import pytest

from tuneadvisor.slurm.array_spec import MESSAGE, check_array
from tuneadvisor.slurm.options import validate

ACCEPTED = [
    "0-3", "0-", "0-3%0", ",1", "1,,2", "+1", "1-3%-1", "07", "1-3%", "0-3%x", "[0-3]",
    "[0-3", "0-3]", "0-3%2%1", "1-3:+2", "%", "", "1,%2", "00-03", "1-3:2]", "-",
]  # fmt: skip
REFUSED = [
    "٠-٣", "x", "3-1", "0-3:0", "0x3", "1-3:", "0-3:2:1", "-1", "1-0x3", "1.5",
    "99999999999", "2147483648", "4294967297", "0-4000001", "٣", "5%32,٣", "%,:", ",3%7,6-",
    "0-0:4000001",
]  # fmt: skip


@pytest.mark.parametrize("value", ACCEPTED)
def test_values_the_controller_accepts(value: str) -> None:
    assert validate("array", value) is None


@pytest.mark.parametrize("value", REFUSED)
def test_values_the_controller_refuses(value: str) -> None:
    assert validate("array", value) == MESSAGE


def test_ids_only_a_raised_max_array_size_takes_are_not_refused() -> None:
    check_array("0-4000000")  # a site with MaxArraySize 4000001 takes it: the site file's call
