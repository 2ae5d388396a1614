"""The site file: node shapes per partition, found by --site, $TUNEADVISOR_SITE or the XDG
config dir; every mistake in it is one line naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuneadvisor.advisor.engine import evaluate
from tuneadvisor.advisor.plan import make_plan
from tuneadvisor.advisor.site import (
    DEFAULT_NODE_CORES,
    DEFAULT_NODE_MEM_MIB,
    NodeShape,
    assumed_node,
    parse_site,
)
from tuneadvisor.cli import main
from tuneadvisor.errors import InputError
from tuneadvisor.workspace.gather import gather
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.rule_files import load_rules, rule_dirs
from tuneadvisor.workspace.site_file import load_site

SITE = """\
# della: two partitions
[partitions.gpu]
cores = 64
mem = "500G"
gpus = 8
max_cores_per_gpu = 8
default = true

[partitions.cpu]
cores = 128
mem = "1000G"
gpus = 0
"""


def job(tmp_path: Path, *directives: str) -> Path:
    path = tmp_path / "job.sbatch"
    lines = ["#!/bin/bash", *(f"#SBATCH {d}" for d in directives), "python train.py"]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_partitions_and_facts() -> None:
    site = parse_site(SITE, "site.toml")
    assert site.default == "gpu"
    gpu = site.partitions["gpu"]
    assert gpu == NodeShape(cores=64, mem_mib=500 * 1024, gpus=8, max_cores_per_gpu=8)
    assert gpu.facts() == {
        "node.cores": 64,
        "node.mem_mib": 500.0 * 1024,
        "node.gpus": 8,
        "node.max_cores_per_gpu": 8,
    }
    cpu = site.partitions["cpu"]
    assert cpu.facts() == {"node.cores": 128, "node.mem_mib": 1000.0 * 1024, "node.gpus": 0}


def test_time_limit_becomes_a_fact_and_caps_a_timed_out_job() -> None:
    site = parse_site('[partitions.short]\ncores = 8\nmax_time = "04:00:00"\n', "site.toml")
    assert site.partitions["short"].facts()["node.max_time_s"] == 4 * 3600
    assert parse_site('[partitions.x]\nmax_time = "UNLIMITED"\n', "s").partitions["x"].facts() == {}
    # A job that timed out after its 3 h: job-timed-out asks for 2 x 3 h, the limit says 4 h.
    facts = {"usage.state": "TIMEOUT", "usage.elapsed_s": 3 * 3600.0, "job.time_s": 3 * 3600}
    found = evaluate(load_rules(rule_dirs([])), facts).findings
    assert [f.id for f in found] == ["job-timed-out"]
    plan = make_plan(found, {**facts, **site.partitions["short"].facts()})
    assert plan.sbatch["time"].value == "04:00:00"


def test_node_for_partition_and_default() -> None:
    site = parse_site(SITE, "site.toml")
    assert site.node_for("cpu") == site.partitions["cpu"]
    assert site.node_for(None) == site.partitions["gpu"]
    assert site.node_for("no-such-partition") is None


def test_one_partition_is_the_default() -> None:
    site = parse_site("[partitions.only]\ncores = 8\n", "site.toml")
    assert site.default == "only"
    assert site.node_for(None) == NodeShape(cores=8)


def test_several_partitions_without_a_default() -> None:
    site = parse_site("[partitions.a]\ncores = 8\n[partitions.b]\ncores = 16\n", "site.toml")
    assert site.default is None
    assert site.node_for(None) is None
    assert site.node_for("b") == NodeShape(cores=16)


def test_empty_site_file() -> None:
    site = parse_site("", "site.toml")
    assert site.partitions == {}
    assert site.node_for(None) is None


BAD = {
    "unknown top key": ("[cluster]\nname = 'della'\n", "unknown key 'cluster'"),
    "unknown partition key": ("[partitions.gpu]\ncores = 64\nsockets = 2\n", "sockets"),
    "not TOML": ("[partitions.gpu\ncores = 64\n", "not valid TOML"),
    "negative cores": ("[partitions.gpu]\ncores = -1\n", "partitions.gpu.cores"),
    "fractional cores": ("[partitions.gpu]\ncores = 1.5\n", "partitions.gpu.cores"),
    "boolean gpus": ("[partitions.gpu]\ngpus = true\n", "partitions.gpu.gpus"),
    "string cores per gpu": ("[partitions.gpu]\nmax_cores_per_gpu = '8'\n", "max_cores_per_gpu"),
    "bad size": ("[partitions.gpu]\nmem = 'lots'\n", "partitions.gpu.mem"),
    "bad time limit": ("[partitions.gpu]\nmax_time = '2 days'\n", "partitions.gpu.max_time"),
    "partition not a table": ("[partitions]\ngpu = 3\n", "partitions.gpu must be a table"),
    "partitions not a table": ("partitions = 3\n", "partitions must be a table"),
    "default not a boolean": ("[partitions.gpu]\ndefault = 'yes'\n", "default"),
    "two defaults": (
        "[partitions.a]\ndefault = true\n[partitions.b]\ndefault = true\n",
        "default",
    ),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_site_file_is_one_input_error(name: str) -> None:
    text, needle = BAD[name]
    with pytest.raises(InputError) as caught:
        parse_site(text, "/etc/site.toml")
    assert caught.value.path == "/etc/site.toml"
    assert needle in caught.value.problem
    assert "\n" not in caught.value.one_line()


@pytest.mark.parametrize("name", list(BAD))
def test_bad_site_file_through_the_cli(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site.toml"
    site.write_text(BAD[name][0])
    code = main(["report", "--job", str(job(tmp_path)), "--site", str(site), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert len(err.splitlines()) == 1 and str(site) in err
    assert "Traceback" not in err


def test_missing_site_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        load_site(str(tmp_path / "site.toml"))
    assert caught.value.path == str(tmp_path / "site.toml")


# --------------------------------------------------------------------------- where it is found


def test_site_option_wins_over_environment(tmp_path: Path) -> None:
    chosen = tmp_path / "chosen.toml"
    chosen.write_text("[partitions.gpu]\ncores = 32\n")
    ignored = tmp_path / "ignored.toml"
    ignored.write_text("[partitions.gpu]\ncores = 99\n")
    inputs = Inputs(job=str(job(tmp_path)), site=str(chosen))
    facts = gather(inputs, None, env={"TUNEADVISOR_SITE": str(ignored)}).facts
    assert facts["node.cores"] == 32


def test_site_from_environment(tmp_path: Path) -> None:
    site = tmp_path / "site.toml"
    site.write_text("[partitions.gpu]\ncores = 48\n")
    facts = gather(Inputs(job=str(job(tmp_path))), None, env={"TUNEADVISOR_SITE": str(site)}).facts
    assert facts["node.cores"] == 48


def test_site_from_the_config_dir(tmp_path: Path) -> None:
    config = tmp_path / "config"
    (config / "tuneadvisor").mkdir(parents=True)
    (config / "tuneadvisor" / "site.toml").write_text("[partitions.gpu]\ncores = 24\n")
    facts = gather(Inputs(job=str(job(tmp_path))), None, env={"XDG_CONFIG_HOME": str(config)}).facts
    assert facts["node.cores"] == 24


def test_no_site_file_anywhere_gives_the_default_ceiling(tmp_path: Path) -> None:
    facts = gather(
        Inputs(job=str(job(tmp_path))),
        None,
        env={"XDG_CONFIG_HOME": str(tmp_path / "empty")},
    ).facts
    node = {name: value for name, value in facts.items() if name.startswith("node.")}
    assert node == {
        "node.assumed": True,
        "node.cores": DEFAULT_NODE_CORES,
        "node.mem_mib": float(DEFAULT_NODE_MEM_MIB),
    }


def test_environment_naming_a_missing_site_file_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(InputError) as caught:
        gather(Inputs(job=str(job(tmp_path))), None, env={"TUNEADVISOR_SITE": str(missing)})
    assert caught.value.path == str(missing)


def test_the_jobs_partition_picks_the_node(tmp_path: Path) -> None:
    site = tmp_path / "site.toml"
    site.write_text(SITE)
    inputs = Inputs(job=str(job(tmp_path, "--partition=cpu")), site=str(site))
    facts = gather(inputs, None, env={}).facts
    assert facts["node.cores"] == 128
    assert facts["node.gpus"] == 0
    assert "node.max_cores_per_gpu" not in facts


def test_no_job_uses_the_default_partition(tmp_path: Path) -> None:
    site = tmp_path / "site.toml"
    site.write_text(SITE)
    seff = tmp_path / "seff.txt"
    seff.write_text("Job ID: 1\nState: COMPLETED (exit code 0)\nCores: 1\n")
    facts = gather(Inputs(seff=str(seff), site=str(site)), None, env={}).facts
    assert facts["node.cores"] == 64
    assert facts["node.max_cores_per_gpu"] == 8


def test_node_cores_cap_the_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Four tasks on an 8-core node get at most 2 cores each, whatever the rule asks."""
    site = tmp_path / "site.toml"
    site.write_text("[partitions.small]\ncores = 8\n")
    seff = tmp_path / "seff.txt"
    seff.write_text(
        "Job ID: 7\nState: COMPLETED (exit code 0)\nNodes: 1\nCores per node: 4\n"
        "CPU Utilized: 00:07:36\nCPU Efficiency: 95.00% of 00:08:00 core-walltime\n"
        "Job Wall-clock time: 00:02:00\n"
    )
    job_path = job(tmp_path, "--ntasks-per-node=4", "--cpus-per-task=1")
    args = ["--job", str(job_path), "--seff", str(seff), "--site", str(site)]
    code = main(["report", *args, "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    (finding,) = [f for f in doc["findings"] if f["id"] == "under-requested-cores"]
    # The rule's max(4, 2 x 1), capped: the finding shows the plan's one value.
    assert finding["suggest"]["sbatch"] == {"cpus-per-task": 2}
    plan = doc["advice"]["plan"]
    assert plan["sbatch"]["cpus-per-task"]["value"] == 8 // 4
    assert plan["script"]["num_workers"]["value"] == 8 // 4 - 1
    assert any("capped at 2" in note for note in plan["notes"])


def test_a_node_smaller_than_its_tasks_still_gets_one_core(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site.toml"
    site.write_text("[partitions.tiny]\ncores = 2\n")
    seff = tmp_path / "seff.txt"
    seff.write_text(
        "Job ID: 8\nState: COMPLETED (exit code 0)\nNodes: 1\nCores per node: 4\n"
        "CPU Utilized: 00:07:36\nCPU Efficiency: 95.00% of 00:08:00 core-walltime\n"
        "Job Wall-clock time: 00:02:00\n"
    )
    job_path = job(tmp_path, "--ntasks-per-node=4", "--cpus-per-task=2")
    args = ["--job", str(job_path), "--seff", str(seff), "--site", str(site)]
    assert main(["report", *args, "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)["advice"]["plan"]
    assert plan["sbatch"]["cpus-per-task"]["value"] == 1  # 2 cores // 4 tasks, never 0


@given(
    cores=st.integers(1, 512),
    tasks=st.integers(1, 16),
    mem=st.none() | st.floats(1, 4 * 1024**2),
    peak=st.none() | st.floats(0, 4 * 1024**2),
    nodes=st.integers(1, 8),
)
def test_the_assumed_node_is_the_ceiling_raised_to_what_the_job_has(
    cores: int, tasks: int, mem: float | None, peak: float | None, nodes: int
) -> None:
    """Without a node size, 64 cores and 512 GiB a node; never less than the script asks
    for now or the run used on a node (a node ran it): the cap then lowers nothing."""
    facts: dict[str, object] = {
        "job.cpus_per_task": cores,
        "job.tasks_per_node": tasks,
        "job.nodes": nodes,
        "seff.nodes": nodes,
    }
    if mem is not None:
        facts["job.mem_mib"] = mem
    if peak is not None:
        facts["usage.mem_peak_mib"] = peak
    node = assumed_node(facts)
    assert node.assumed and node.facts()["node.assumed"] is True
    assert node.cores == max(DEFAULT_NODE_CORES, cores * tasks)
    assert node.mem_mib is not None and node.mem_mib % 1024 == 0
    assert node.mem_mib >= max(DEFAULT_NODE_MEM_MIB, mem or 0, (peak or 0) / nodes)
    assert node.mem_mib < max(DEFAULT_NODE_MEM_MIB, mem or 0, (peak or 0) / nodes) + 1024
