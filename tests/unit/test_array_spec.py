"""``--array`` values as slurmctld 22.05.8 reads them. Each verdict below was given by the
real controller (``sbatch --test-only`` on the project's cluster, MaxArraySize 1001);
tests/integration/test_array_spec_slurm.py checks generated values against it."""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.test_apply_generated import PROFILE
from tuneadvisor.cli import main
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
    check_array("0-4000000")  # a site with MaxArraySize 4000001 takes it: not flagged


@given(st.text(max_size=30))
def test_any_value_is_accepted_or_refused_with_the_controllers_message(value: str) -> None:
    assert validate("array", value) in (None, MESSAGE)


@settings(max_examples=25, deadline=None)
@given(value=st.text(alphabet="0123456789-:,%[]+x٣. ", min_size=1, max_size=12))
def test_a_job_script_with_any_array_value_reports_and_writes_nothing_wrong(
    value: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """End to end: the job script's --array through the report's facts, findings, plan and
    text: the report never fails on it, and an --array the controller refuses is an invalid
    directive."""
    folder = tmp_path_factory.mktemp("array")
    job = folder / "job.sbatch"
    job.write_text(f"#!/bin/bash\n#SBATCH --array={value}\n#SBATCH --cpus-per-task=1\ntrue\n")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["report", str(PROFILE), "--job", str(job)])
    assert status == 0, err.getvalue()
    assert "Traceback" not in out.getvalue() + err.getvalue()
    try:
        check_array(value)
    except ValueError:  # the controller's refusal reaches the report
        assert " " in value or "invalid-directive" in out.getvalue()
