"""Per-node CPUs and memory from every form of request, checked against what slurmctld
allocated for the same options (tests/fixtures/slurm-local/requests, Slurm 22.05.8): the
job-script model's request, the job.* facts from it, and the facts of the job as it ran."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tuneadvisor.slurm.accounting.as_run import as_run_facts
from tuneadvisor.slurm.client.scontrol import parse_job, parse_records
from tuneadvisor.slurm.jobscript.facts import job_facts
from tuneadvisor.slurm.jobscript.model import JobScript

FIXTURES = Path(__file__).parents[1] / "fixtures" / "slurm-local" / "requests"
CAPTURES = sorted(FIXTURES.glob("*.txt"))
MEMORY = ("--mem=", "--mem-per-cpu=", "--mem-per-gpu=")


def _capture(path: Path) -> tuple[list[str], dict[str, str], str]:
    """The sbatch options, the scontrol record and its text."""
    lines = path.read_text().splitlines()
    words = shlex.split(lines[0].removeprefix("$ "))
    options = [w for w in words[2 : words.index("--wrap")] if w != "--parsable"]
    record = next(line for line in lines if line.startswith("JobId="))
    return options, parse_records(record)[0], record


def _tres(record: dict[str, str]) -> dict[str, str]:
    return dict(item.split("=", 1) for item in record["TRES"].split(","))


def _script(options: list[str]) -> JobScript:
    return JobScript.parse("#!/bin/bash\n#SBATCH " + " ".join(options) + "\nsleep 1\n", "job.sh")


def test_every_form_was_captured() -> None:
    assert len(CAPTURES) >= 11


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_the_model_allocates_what_slurm_did(path: Path) -> None:
    options, record, _ = _capture(path)
    job = _script(options)
    assert not job.problems
    request = job.request()
    tres = _tres(record)
    assert request.node_cpus == int(record["NumCPUs"]) == int(tres["cpu"])
    assert request.task_cpus == int(record["NumCPUs"]) // int(record["NumTasks"])
    facts = job_facts(job, None)
    assert facts["job.cpus_per_task"] == request.task_cpus
    assert facts["job.gpus"] == int(tres.get("gres/gpu", 0))
    if any(o.startswith(MEMORY) for o in options):
        mib = float(tres["mem"].removesuffix("M"))  # Slurm's M is MiB
        assert request.node_mem_mib == mib
        assert facts["job.mem_mib"] == mib
    else:  # no memory option: the node's default, which the script does not say
        assert request.node_mem_mib is None
        assert "job.mem_mib" not in facts


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_the_job_as_it_ran_has_slurms_memory(path: Path) -> None:
    _, record, text = _capture(path)
    ran = as_run_facts(parse_job(text), None)
    # --mem-per-cpu counts every CPU of the node, not one task's. (--mem-per-gpu leaves
    # scontrol MinMemoryNode=0, as does no memory option: nothing to read there.)
    said = record.get("MinMemoryCPU") or record.get("MinMemoryNode")
    if said != "0":
        assert ran["job.mem_mib"] == float(_tres(record)["mem"].removesuffix("M"))
    else:
        assert "job.mem_mib" not in ran


@pytest.mark.parametrize(
    ("directives", "nodes", "tasks_per_node"),
    [
        ("--ntasks=4 --ntasks-per-node=2", 2, 2),  # at most 2 a node: Mila's multi-node example
        ("--ntasks=5 --ntasks-per-node=2", 3, 2),
        ("--nodes=3 --ntasks=4 --ntasks-per-node=2", 3, 2),  # --nodes says
        ("--ntasks=4", 1, 4),
        ("--ntasks-per-node=4", 1, 4),
    ],
)
def test_nodes_a_task_count_needs(directives: str, nodes: int, tasks_per_node: int) -> None:
    request = _script(directives.split()).request()
    assert (request.node_count, request.tasks_per_node) == (nodes, tasks_per_node)


@pytest.mark.parametrize(
    ("directives", "cpus", "task_cpus", "mem_mib"),
    [
        # What the one-node test cluster cannot hold, by the rules the captures show.
        ("--gres=gpu:8 --cpus-per-gpu=4", 32, 32, None),
        ("--gres=gpu:8 --cpus-per-gpu=4 --mem-per-gpu=16G", 32, 32, 8 * 16 * 1024),
        ("--gpus-per-node=8 --ntasks-per-node=8 --cpus-per-gpu=4", 32, 4, None),
        ("--gpus=16 --nodes=2 --cpus-per-gpu=4 --mem-per-cpu=2G", 32, 32, 32 * 2048),
        ("--ntasks-per-node=4 --gpus-per-task=2 --cpus-per-gpu=6", 48, 12, None),
        ("--ntasks-per-node=4 --cpus-per-task=8 --mem-per-cpu=4G", 32, 8, 32 * 4096),
        ("--nodes=2 --ntasks=8 --cpus-per-task=2 --mem-per-cpu=1G", 8, 2, 8 * 1024),
        ("--cpus-per-gpu=4", 1, 1, None),  # no GPU asked for: nothing to multiply
        ("--mem=0 --cpus-per-task=4", 4, 4, None),  # all of the node: no number
    ],
)
def test_larger_requests(directives: str, cpus: int, task_cpus: int, mem_mib: int | None) -> None:
    request = _script(directives.split()).request()
    assert (request.node_cpus, request.task_cpus, request.node_mem_mib) == (
        cpus,
        task_cpus,
        mem_mib,
    )
