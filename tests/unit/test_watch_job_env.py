"""What a watched process's Slurm environment says the job asked for."""

from __future__ import annotations

from tuneadvisor.watch.session import job_facts_from_env


def test_requests_from_the_environment() -> None:
    env = {"SLURM_CPUS_PER_TASK": "4", "SLURM_MEM_PER_NODE": "16384"}
    assert job_facts_from_env(env) == {"job.cpus_per_task": 4, "job.mem_mib": 16384.0}


def test_mem_zero_is_the_whole_node_not_zero_mib() -> None:
    assert job_facts_from_env({"SLURM_MEM_PER_NODE": "0"}) == {}


def test_no_environment_no_facts() -> None:
    assert job_facts_from_env(None) == {}
    assert job_facts_from_env({"SLURM_CPUS_PER_TASK": "x"}) == {}
