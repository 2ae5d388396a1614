"""Real Slurm: a CPU job's accounting read back through the client, its efficiency computed
as seff computes it and compared with seff's own report, per step for multi-task srun steps;
Slurm's refusals reach the user verbatim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.slurm_cluster import Cluster, burner, start_cluster, with_burner
from tests.report_schema import checked
from tuneadvisor.slurm.accounting.sacct.records import SacctJob
from tuneadvisor.slurm.accounting.seff import SeffReport
from tuneadvisor.slurm.client import SlurmError

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster(start_cluster())


def assert_same_as_seff(job: SacctJob, seff: SeffReport) -> None:
    """seff prints whole seconds, percentages and MiB with two decimals."""
    assert seff.state is not None and seff.state.split()[0] == job.state
    assert seff.cores == job.cores
    assert seff.cpu_used_s == job.cpu_used_s
    assert seff.core_walltime_s == job.core_walltime_s
    assert seff.wall_s == job.elapsed_s
    if job.cpu_efficiency_pct is not None:
        assert seff.cpu_efficiency_pct == pytest.approx(job.cpu_efficiency_pct, abs=0.005)
    assert job.mem_peak_mib is not None and seff.mem_used_mib is not None
    assert seff.mem_used_mib == pytest.approx(job.mem_peak_mib, abs=0.005)
    assert seff.mem_used_estimated == ((job.peak_step.ntasks or 1) > 1)  # type: ignore[union-attr]
    assert seff.mem_requested_mib == pytest.approx(job.req_mem_mib, abs=0.005)
    assert seff.mem_efficiency_pct == pytest.approx(job.mem_efficiency_pct, abs=0.005)


def test_cpu_job_accounting_matches_seff(cluster: Cluster, tmp_path: Path) -> None:
    job_id = cluster.submit(with_burner(tmp_path), "burn.sbatch", burner(seconds=3, mib=60))
    job = cluster.wait(job_id)
    assert job.state == "COMPLETED" and job.exit_code == 0
    assert job.partition == "debug" and job.timelimit_s == 300
    assert job.alloc_cpus == 1 and job.req_mem_mib == 200
    assert job.mem_peak_mib is not None and job.mem_peak_mib >= 60  # the bytearray it held
    assert job.cpu_used_s is not None and job.cpu_used_s >= 1
    seff = cluster.client.seff(job_id)
    assert seff is not None
    assert_same_as_seff(job, seff)
    assert "burned" in (tmp_path / f"slurm-{job_id}.out").read_text()  # the venv's python ran


def test_report_jobid_reads_the_job_from_slurm(cluster: Cluster, tmp_path: Path) -> None:
    """The script as Slurm kept it; the options the job ran with (sbatch's command line wins
    over #SBATCH); elapsed against that --time for over-requested-time."""
    script = burner(seconds=1, mib=10)
    job_id = cluster.submit(with_burner(tmp_path), "burn.sbatch", script, "--time=02:00:00")
    cluster.wait(job_id)
    done = cluster.tuneadvisor(tmp_path, "report", "--jobid", job_id, "--format", "json")
    assert done.returncode == 0, done.stderr
    report = checked(json.loads(done.stdout))
    assert report["job"]["directives"]["time"] == "00:05:00"  # the script slurmctld kept
    assert report["job"]["directives"]["cpus-per-task"] == "1"
    facts = report["advice"]["facts"]
    assert facts["job.time_s"] == 7200 and facts["usage.state"] == "COMPLETED"
    assert any("--time 7200 s where its script says 300 s" in n for n in report["advice"]["notes"])
    found = {f["id"]: f for f in report["findings"]}
    assert found["over-requested-time"]["suggest"]["sbatch"] == {"time": "00:15:00"}
    assert not {"job-failed", "job-timed-out", "job-out-of-memory", "job-cancelled"} & set(found)


def test_multitask_srun_steps_match_seff(cluster: Cluster, tmp_path: Path) -> None:
    script = (
        "#!/bin/bash\n#SBATCH --ntasks=2\n#SBATCH --mem=300M\n#SBATCH --time=5\n"
        "srun python burn.py 2 40\nsrun hostname\n"
    )
    job = cluster.wait(cluster.submit(with_burner(tmp_path), "multi.sbatch", script))
    step = job.step("0")
    assert step is not None and step.ntasks == 2
    assert job.peak_step is step  # 2 x 40 MiB held, per task
    seff = cluster.client.seff(job.job_id)
    assert seff is not None and seff.mem_used_estimated
    assert_same_as_seff(job, seff)


def test_refusal_reaches_the_user_verbatim(cluster: Cluster, tmp_path: Path) -> None:
    cores = cluster.client.partitions()[0].cpus
    with pytest.raises(SlurmError) as caught:
        cluster.submit(tmp_path, "big.sbatch", burner(directives=f"#SBATCH -c {cores + 1}\n"))
    assert caught.value.one_line() == (
        f"submitting {tmp_path / 'big.sbatch'}: sbatch: error: Batch job submission failed: "
        "More processors requested than permitted"
    )
