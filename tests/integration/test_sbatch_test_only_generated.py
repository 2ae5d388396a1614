"""Issue 20 point 6 on real Slurm: generated headers that fit the local node (one node, 2
cores, 22 GiB, one GPU; short and long option forms, ``=`` or a blank), with generated seff
evidence or the bundled example's profile, go through `apply` with a site file of that node;
sbatch --test-only (which queues nothing) accepts every script written, as it accepted the
script given. About 20 scripts written, a few seconds."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.generated_jobs import LOCAL, Header, headers, scripts, seffs
from tests.integration.slurm_cluster import Cluster, start_cluster
from tests.unit.test_apply_generated import PROFILE, apply_once, written_problems
from tuneadvisor.workspace.inputs import Inputs

pytestmark = [pytest.mark.slurm]


@pytest.fixture(scope="module")
def slurm_env() -> dict[str, str]:
    return start_cluster()  # skips where no local cluster can run


@st.composite
def local_cases(draw: st.DrawFn) -> tuple[Header, str, str | None]:
    header = draw(headers(LOCAL))
    seff = draw(st.none() | seffs(header))  # None: the profile alone
    return header, draw(scripts(header)), seff


@settings(
    max_examples=80,  # about a quarter change on this small node: some 20 scripts written
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(local_cases())
def test_generated_scripts_apply_writes_pass_sbatch_test_only(
    slurm_env: dict[str, str], case: tuple[Header, str, str | None]
) -> None:
    _, text, seff = case
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        job, site = tmp / "job.sbatch", tmp / "site.toml"
        job.write_text(text)
        site.write_text(LOCAL.site())
        assert Cluster(slurm_env).test_only(job) is None, f"the generator wrote:\n{text}"
        profile = tmp / PROFILE.name
        shutil.copy(PROFILE, profile)
        if seff is not None:
            (tmp / "seff.txt").write_text(seff)
        inputs = Inputs(
            profiles=() if seff is not None else (str(profile),),
            job=str(job),
            seff=str(tmp / "seff.txt") if seff is not None else None,
            site=str(site),
        )
        once, _ = apply_once(inputs)
        if once is None:
            return
        out = tmp / "tuned.sbatch"
        out.write_bytes(once)
        assert not written_problems(once), once.decode()
        said = Cluster(slurm_env).test_only(out)
        assert said is None, f"{text}\n--- written:\n{once.decode()}\n--- sbatch: {said}"
