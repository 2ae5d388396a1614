"""Generated ``--array`` values: the verdict of tuneadvisor.slurm.array_spec is the real
controller's (``sbatch --test-only``, which queues nothing). Values with a task id between
this cluster's MaxArraySize (1001) and the largest any site may set are left out: only the
site knows those. About 150 values, a few seconds."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.integration.slurm_cluster import Cluster, start_cluster
from tuneadvisor.slurm.array_spec import MOST_TASK_ID
from tuneadvisor.slurm.options import validate

pytestmark = [pytest.mark.slurm]

LOCAL_MAX_ARRAY_SIZE = 1001  # slurm.conf's default; scripts/slurm-local.sh leaves it


@pytest.fixture(scope="module")
def slurm_env() -> dict[str, str]:
    return start_cluster()  # skips where no local cluster can run


_NUMBER = st.one_of(
    st.integers(0, 40).map(str),
    st.integers(0, 1000).map(lambda n: f"{n:04d}"),  # leading zeros
    st.integers(MOST_TASK_ID + 1, 10**20).map(str),
    st.sampled_from(["+2", "-1", "", "٣", "0x3", "1.5", "2]", "[2"]),
)


@st.composite
def _piece(draw: st.DrawFn) -> str:
    piece = draw(_NUMBER)
    if draw(st.booleans()):
        piece += "-" + draw(_NUMBER)
        if draw(st.booleans()):
            piece += ":" + draw(_NUMBER)
    return piece


_VALUES = st.one_of(
    st.builds(
        lambda pieces, throttle: ",".join(pieces) + throttle,
        st.lists(_piece(), min_size=1, max_size=3),
        st.sampled_from(["", "%2", "%", "%x"]),
    ),
    st.text(alphabet="0123456789-:,%[]+x٣.", max_size=12),
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much],
)
@given(_VALUES)
def test_array_verdicts_are_the_controllers(slurm_env: dict[str, str], value: str) -> None:
    ids = [int(n) for n in re.findall(r"[0-9]+", value, flags=re.ASCII)]
    assume(all(n < LOCAL_MAX_ARRAY_SIZE or n > MOST_TASK_ID for n in ids))
    with tempfile.TemporaryDirectory() as folder:
        job = Path(folder) / "job.sbatch"
        job.write_text(f"#!/bin/bash\n#SBATCH --array={value}\ntrue\n", encoding="utf-8")
        said = Cluster(slurm_env).test_only(job)
    ours = validate("array", value)
    if said is None:
        assert ours is None, f"--array={value!r}: the controller accepts it, we said {ours}"
    else:
        assert "Invalid job array specification" in said, said  # nothing else is wrong
        assert ours is not None, f"--array={value!r}: the controller said {said}"
