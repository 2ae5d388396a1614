"""Issue 20, point 1: seff and sacct print a multi-node job's memory and cores as the job's
totals, while --mem is per node and --cpus-per-task per task. The real multi-node seff outputs
through `apply` (end to end), each source's estimate of the busiest node, and a property over
generated multi-node seff texts: the written --mem per node holds the job's peak share, never
exceeds the node, and is never the job's total times the factor on every node."""

from __future__ import annotations

import base64
import gzip
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tuneadvisor.advisor.measured_allocation import allocation_facts
from tuneadvisor.cli import main
from tuneadvisor.slurm.accounting.sacct.gpu import accounting_gpu
from tuneadvisor.slurm.accounting.sacct.pipe_format import parse_sacct_pipe
from tuneadvisor.slurm.accounting.sacct.records import SacctJob, SacctStep
from tuneadvisor.slurm.accounting.seff import parse_seff
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.units import parse_memory
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import load_workspace

ACCOUNTING = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "accounting"
NODE_CORES, NODE_MEM_GIB = 64, 512
SITE = f'[partitions.p]\ncores = {NODE_CORES}\nmem = "{NODE_MEM_GIB}G"\ndefault = true\n'
# Slurm's seff in its multi-node form (Nodes, Cores per node), every line that matters
REAL_MULTINODE = [
    "csc-seff-puhti-2nodes.seff.txt",
    "reportseff-issue16-seff-2nodes.seff.txt",
    "nesi-seff-nextflow-3nodes.seff.txt",
    "sigma2-seff-saga-4nodes.seff.txt",
    "cybergis-seff-keeling-2nodes.seff.txt",
]
_UNITS = {"KB": 1 / 1024, "MB": 1.0, "GB": 1024.0, "TB": 1024.0**2}


def _read(text: str) -> dict[str, float]:
    """What a reader takes from a seff text by eye: nodes, cores, peak and request (MiB)."""
    out: dict[str, float] = {}
    for name, pattern in (
        ("nodes", r"Nodes: (\d+)"),
        ("cores_per_node", r"Cores per node: (\d+)"),
        ("cores", r"Cores: (\d+)"),
        ("tasks", r"Tasks: (\d+)"),
    ):
        if found := re.search(rf"^\s*{pattern}\s*$", text, re.M):
            out[name] = float(found[1])
    if "cores_per_node" not in out:
        out["cores_per_node"] = out["cores"] / out["nodes"]
    sizes = r"([\d.]+) ([KMGT]B)"
    used = re.search(rf"Memory Utilized: {sizes}", text) or re.search(
        rf"%\s+{sizes}\s+(?:\(|of)", text
    )
    req = re.search(rf"of {sizes}(?: \(| *$)", text, re.M)
    assert used and req, text
    out["peak"] = float(used[1]) * _UNITS[used[2]]
    out["requested"] = float(req[1]) * _UNITS[req[2]]
    return out


def _job_script(nodes: int, cores_per_node: int, mem_mib: float) -> str:
    return (
        "#!/bin/bash\n"
        f"#SBATCH --nodes={nodes}\n#SBATCH --ntasks-per-node=1\n"
        f"#SBATCH --cpus-per-task={cores_per_node}\n#SBATCH --mem={math.ceil(mem_mib)}M\n"
        "#SBATCH --time=02:00:00\nsrun python train.py\n"
    )


def _apply(tmp_path: Path, seff_text: str, read: dict[str, float]) -> str | None:
    """`tuneadvisor apply` of the seff with a job script that asks what the run had (per node,
    one task a node): the --mem of the script it wrote, None where it wrote none."""
    nodes, per_node = int(read["nodes"]), int(read["cores_per_node"])
    (tmp_path / "site.toml").write_text(SITE)
    (tmp_path / "seff.txt").write_text(seff_text)
    (tmp_path / "train.py").write_text("print('train')\n")
    job = tmp_path / "job.sh"
    job.write_text(_job_script(nodes, per_node, read["requested"] / nodes))
    args = ["--job", str(job), "--seff", str(tmp_path / "seff.txt")]
    args += ["--site", str(tmp_path / "site.toml")]
    out = tmp_path / "tuned.sh"
    assert main(["apply", *args, "-o", str(out), "--force"]) == 0
    return JobScript.parse(out.read_bytes()).directives().get("mem") if out.exists() else None


def _report(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> dict[str, Any]:
    capsys.readouterr()  # what apply printed
    args = ["--job", str(tmp_path / "job.sh"), "--seff", str(tmp_path / "seff.txt")]
    assert main(["report", *args, "--site", str(tmp_path / "site.toml"), "--format", "json"]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def _as_oom(text: str) -> str:
    """The same seff as if the cgroup had killed the job (the real files all completed)."""
    text, count = re.subn(r"State: .*", "State: OUT_OF_MEMORY (exit code 0)", text, count=1)
    assert count == 1
    return text


# ------------------------------------------------------------------ the real files, end to end


@pytest.mark.parametrize("name", REAL_MULTINODE)
@pytest.mark.parametrize("killed", [False, True], ids=["as-run", "killed-for-memory"])
def test_real_multinode_seff_writes_memory_per_node(
    name: str, killed: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (ACCOUNTING / name).read_text()
    text = _as_oom(text) if killed else text
    read = _read(text)
    nodes = read["nodes"]
    assert nodes > 1
    mem = _apply(tmp_path, text, read)
    doc = _report(capsys, tmp_path)
    facts = doc["advice"]["facts"]
    # cores per task: a node's at most (the job's total is N times that)
    assert facts["alloc.cpus_per_task"] == read["cores_per_node"]
    # memory per node of the run: the job's request over its nodes
    assert facts["alloc.mem_mib"] == pytest.approx(read["requested"] / nodes, abs=1)
    ids = {f["id"] for f in doc["findings"]}
    assert ("job-out-of-memory" in ids) == killed
    if mem is None:
        return
    mib = parse_memory(mem)
    assert mib is not None
    assert read["peak"] / nodes <= mib <= NODE_MEM_GIB * 1024
    if killed:
        # what was exceeded is the per-node request: twice it (or twice the per-node peak)
        node_peak = facts["usage.mem_peak_node_mib"]
        bound = max(read["requested"] / nodes, node_peak) * 2
        assert mib <= min(math.ceil(bound / 1024) * 1024, NODE_MEM_GIB * 1024)
        assert mib >= min(read["requested"] / nodes * 2, NODE_MEM_GIB * 1024)


def test_the_issue_s_five_node_oom_raises_the_per_node_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's job: 35.84 GB utilized of 60.00 GB on 5 nodes (12 GB each), killed. Twice
    the per-node request is 24G; twice the job's peak (72G) on every node was the bug."""
    text = (
        "Job ID: 1\nState: OUT_OF_MEMORY (exit code 0)\nNodes: 5\nCores per node: 40\n"
        "CPU Utilized: 10:00:00\nCPU Efficiency: 50.00% of 20:00:00 core-walltime\n"
        "Job Wall-clock time: 00:06:00\nMemory Utilized: 35.84 GB (estimated maximum)\n"
        "Memory Efficiency: 59.74% of 60.00 GB (12.00 GB/node)\n"
    )
    assert _apply(tmp_path, text, _read(text)) == "24G"
    doc = _report(capsys, tmp_path)
    found = next(f for f in doc["findings"] if f["id"] == "job-out-of-memory")
    assert found["suggest"]["sbatch"] == {"mem": "24G"}
    assert found["evidence"]["peak per node (MiB, the total / nodes)"] == pytest.approx(
        35.84 * 1024 / 5, abs=0.1
    )
    assert "not known" in found["evidence"]["each node's own peak"]
    assert doc["advice"]["facts"]["alloc.cpus_per_task"] == 40


def test_a_one_node_oom_says_nothing_of_nodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (ACCOUNTING / "nesi-seff-nextflow-oom.seff.txt").read_text()
    _apply(tmp_path, text, _read(text))
    found = next(f for f in _report(capsys, tmp_path)["findings"] if f["id"] == "job-out-of-memory")
    assert "each node's own peak" not in found["evidence"]
    assert found["suggest"]["sbatch"] == {"mem": "144G"}  # 2 x the 72.00 GB it had


# ----------------------------------------------------------- each source's busiest node


@pytest.mark.parametrize(
    ("name", "node_gib"),
    [
        ("csc-seff-puhti-2nodes.seff.txt", 23.68 / 2),  # estimated: several tasks, spread
        ("reportseff-issue16-seff-2nodes.seff.txt", 7.70),  # no estimate: one task, one node
        ("nesi-seff-nextflow-3nodes.seff.txt", 58.00),  # the largest task, 1 task a node
        ("sigma2-seff-saga-4nodes.seff.txt", 250.72 / 1024 / 4),
        ("cybergis-seff-keeling-2nodes.seff.txt", 61.45 / 1024 / 2),
    ],
)
def test_seff_busiest_node(name: str, node_gib: float) -> None:
    report = parse_seff((ACCOUNTING / name).read_text())
    assert report.facts()["seff.mem_used_node_mib"] == pytest.approx(node_gib * 1024, abs=0.01)


@pytest.mark.parametrize(
    ("tasks", "step_nodes", "alloc_nodes", "expected"),
    [
        (8, 2, 2, 4000.0),  # 4 tasks a node, each up to MaxRSS
        (5, 2, 2, 3000.0),  # 3 + 2: the busier node runs 3
        (1, 1, 4, 1000.0),  # one task (the batch step): on one node, whole
        (6, None, 3, 2000.0),  # the step's nodes unknown: the job's
        (2, None, 8, 1000.0),  # never more nodes than tasks
    ],
)
def test_sacct_busiest_node(
    tasks: int, step_nodes: int | None, alloc_nodes: int, expected: float
) -> None:
    step = SacctStep("0", max_rss_mib=1000.0, ntasks=tasks, nodes=step_nodes)
    job = SacctJob("1", state="COMPLETED", alloc_nodes=alloc_nodes, steps=(step,))
    facts = job.facts()
    assert facts["sacct.mem_peak_node_mib"] == expected
    assert facts["sacct.mem_peak_mib"] == 1000.0 * tasks  # the job's total, as seff's


def test_jobstats_busiest_node_is_its_largest() -> None:
    used = {"n1": 3000 * 2**20, "n2": 9000 * 2**20}  # bytes, as jobstats records them
    data = {
        "gpus": 0,
        "total_time": 100,
        "nodes": {
            name: {"cpus": 8, "total_time": 50, "used_memory": b, "total_memory": 16 * 2**30}
            for name, b in used.items()
        },
    }
    comment = "JS1:" + base64.b64encode(gzip.compress(json.dumps(data).encode())).decode()
    gpu, _ = accounting_gpu(SacctJob("1", state="COMPLETED", admin_comment=comment))
    assert gpu is not None
    assert gpu.facts["jobstats.mem_peak_mib"] == 12000.0  # summed, as jobstats reports
    assert gpu.facts["jobstats.mem_peak_node_mib"] == 9000.0


@pytest.mark.parametrize(
    ("peak", "facts", "node"),
    [
        # seff says one task's peak (no estimate): all of it on one node
        (7884.8, {"seff.nodes": 2, "seff.mem_used_node_mib": 7884.8}, 7884.8),
        # estimated over 4 nodes, the script now asks for 2: twice the share on each
        (4000.0, {"seff.nodes": 4, "seff.mem_used_node_mib": 1000.0, "job.nodes": 2}, 2000.0),
        # no source's estimate: the total over the measured nodes
        (4000.0, {"sacct.alloc_nodes": 4}, 1000.0),
        # sacct's MaxRSS x the tasks a node runs above seff's share: the larger
        (
            4000.0,
            {"seff.nodes": 4, "seff.mem_used_node_mib": 1e3, "sacct.mem_peak_node_mib": 1.5e3},
            1.5e3,
        ),
        # seff's 0.00 MB: nothing was recorded, on any node
        (0.0, {"seff.nodes": 4, "seff.mem_used_node_mib": 0.0}, 0.0),
    ],
)
def test_usage_busiest_node(peak: float, facts: dict[str, object], node: float) -> None:
    out, _ = allocation_facts({"usage.mem_peak_mib": peak, **facts})
    assert out["usage.mem_peak_node_mib"] == pytest.approx(node)


@pytest.mark.parametrize(
    ("facts", "per_task"),
    [
        ({"seff.cores": 200, "seff.nodes": 5}, 40),  # seff alone: a node's, never 200
        ({"seff.cores": 200, "seff.nodes": 5, "job.tasks_total": 20}, 10),
        ({"sacct.alloc_cpus": 80, "sacct.alloc_nodes": 2}, 40),
        ({"sacct.alloc_cpus": 80, "sacct.alloc_nodes": 2, "sacct.max_tasks": 8}, 10),
        ({"seff.cores": 8, "seff.nodes": 1, "job.tasks_total": 4}, 2),
    ],
)
def test_cores_per_task_never_the_job_total(facts: dict[str, object], per_task: int) -> None:
    out, _ = allocation_facts(facts)
    assert out["alloc.cpus_per_task"] == per_task


@pytest.mark.parametrize(
    "reqmem",
    ["4000Mn", "500Mc", "8000M"],  # per node, per CPU (old sacct), the job's total (21.08+)
)
def test_sacct_request_is_per_node_and_cores_per_task(reqmem: str) -> None:
    """2 nodes x 8 CPUs, 16 tasks of one step, MaxRSS 900M (the largest task): 4000M a node
    however sacct printed ReqMem; 1 core a task; the busiest node ran 8 tasks."""
    header = "JobID|ReqMem|AllocCPUS|NNodes|NTasks|MaxRSS|State"
    text = f"{header}\n9|{reqmem}|16|2|||COMPLETED\n9.0||16|2|16|900M|COMPLETED\n"
    (job,) = parse_sacct_pipe(text)
    facts: dict[str, object] = {**job.facts(), "usage.mem_peak_mib": job.mem_peak_mib}
    out, _ = allocation_facts(facts)
    assert out["alloc.mem_mib"] == 4000.0
    assert out["alloc.cpus_per_task"] == 1
    assert facts["sacct.mem_peak_mib"] == 900.0 * 16  # seff's estimate: the job's
    assert out["usage.mem_peak_node_mib"] == 900.0 * 8


# ------------------------------------------------------------------ the property


@st.composite
def multinode_seff(draw: st.DrawFn) -> tuple[str, dict[str, float]]:
    """Slurm's seff of a job on 1-8 nodes: its totals, as seff prints them."""
    nodes = draw(st.integers(1, 8))
    per_node = draw(st.sampled_from([1, 2, 4, 8, 16, 32, 64]))
    # the peak step: the batch script's one task (on the first node), or tasks spread evenly
    single = nodes > 1 and draw(st.booleans())
    tasks = 1 if single else draw(st.integers(1, per_node)) * nodes
    oom = draw(st.booleans())
    # killed: up to 3 x the request was seen (kept within a node, or no --mem could hold it)
    req_node_gib = draw(st.integers(1, NODE_MEM_GIB // 3 if oom else NODE_MEM_GIB))
    # of the per-node request. OUT_OF_MEMORY is a cgroup's kill: on several nodes no node
    # held more than its request (issue 30), only one node's sampled peak may overshoot it.
    share = draw(st.floats(0.0, 3.0 if oom and nodes == 1 else 1.0))
    # seff up to 24.05: the largest task's peak x the tasks, estimated when several
    node_need = req_node_gib * 1024 * share
    used = node_need * (1 if single else nodes)
    wall = draw(st.integers(60, 86400))
    cores = nodes * per_node
    many = tasks > 1
    per = f" ({req_node_gib:.2f} GB/node)" if many else ""
    state = "OUT_OF_MEMORY" if oom else "COMPLETED"
    hms = f"{wall // 3600:02d}:{wall // 60 % 60:02d}:{wall % 60:02d}"
    cw = wall * cores
    cw_text = f"{cw // 86400}-{cw // 3600 % 24:02d}:{cw // 60 % 60:02d}:{cw % 60:02d}"
    text = (
        f"Job ID: 42\nCluster: c\nUser/Group: u/g\nState: {state} (exit code 0)\n"
        + (f"Nodes: {nodes}\nCores per node: {per_node}\n" if cores > 1 else "Cores: 1\n")
        + f"CPU Utilized: {hms}\nCPU Efficiency: 50.00% of {cw_text} core-walltime\n"
        f"Job Wall-clock time: {hms}\n"
        f"Memory Utilized: {used:.2f} MB{' (estimated maximum)' if many else ''}\n"
        f"Memory Efficiency: {100 * used / (req_node_gib * 1024 * nodes):.2f}% of "
        f"{req_node_gib * nodes:.2f} GB{per}\n"
    )
    read = {
        "nodes": nodes,
        "cores_per_node": per_node,
        "tasks_per_node": max(1, tasks // nodes),
        "peak": round(used, 2),
        "node_need": round(node_need, 2),  # what the busiest node held
        "single": float(single),
        "requested": req_node_gib * 1024.0 * nodes,
        "oom": float(oom),
    }
    return text, read


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=multinode_seff())
def test_suggested_memory_is_per_node(case: tuple[str, dict[str, float]], tmp_path: Path) -> None:
    text, read = case
    nodes, req_node = int(read["nodes"]), read["requested"] / read["nodes"]
    per_task = int(read["cores_per_node"] // read["tasks_per_node"])
    folder = tmp_path / f"n{abs(hash(text))}"
    folder.mkdir(exist_ok=True)
    (folder / "site.toml").write_text(SITE)
    (folder / "seff.txt").write_text(text)
    (folder / "train.py").write_text("print('train')\n")
    job = folder / "job.sh"
    job.write_text(
        "#!/bin/bash\n"
        f"#SBATCH --nodes={nodes}\n#SBATCH --ntasks-per-node={int(read['tasks_per_node'])}\n"
        f"#SBATCH --cpus-per-task={per_task}\n#SBATCH --mem={math.ceil(req_node)}M\n"
        "srun python train.py\n"
    )
    workspace = load_workspace(
        Inputs(job=str(job), seff=str(folder / "seff.txt"), site=str(folder / "site.toml"))
    )
    advice, tuned = workspace.advice, workspace.tuned
    assert advice is not None and tuned.tuned_job is not None
    facts = advice.facts
    assert facts["alloc.cpus_per_task"] == per_task <= read["cores_per_node"]
    directives = tuned.tuned_job.directives()
    cpus = directives.get("cpus-per-task")
    assert cpus is None or int(cpus) <= NODE_CORES
    mem = directives.get("mem")
    mib = parse_memory(mem) if mem else None
    assert mib is not None
    # never less than the busiest node held: the job's share per node, all of a one-task peak
    assert mib >= read["node_need"] - 1  # seff rounds to 0.01 MB
    assert mib >= read["peak"] / nodes - 1
    assert mib <= NODE_MEM_GIB * 1024
    if read["oom"]:
        # twice the per-node request, or twice the busiest node's peak: per node
        bound = math.ceil(max(req_node, read["node_need"]) * 2 / 1024) * 1024
        assert mib <= max(bound, math.ceil(req_node))
        if not read["single"] and read["peak"] * 2 > bound:
            assert mib < read["peak"] * 2  # never the job's total x 2 on each node


@pytest.mark.parametrize(
    ("node_peak", "said"),
    [
        (None, "memory peak 2000 MiB, 1000 MiB per node (the mean) of 4000 MiB per node"),
        (1000.0, "memory peak 2000 MiB, 1000 MiB per node (the mean) of 4000 MiB per node"),
        (2000.0, "memory peak 2000 MiB, about 2000 MiB on the busiest node of 4000 MiB per node"),
    ],
)
def test_the_report_says_which_per_node_peak_it_gives(node_peak: float | None, said: str) -> None:
    """One task's peak on 2 nodes ran on one of them: the report's per-node figure is that
    node's, not the mean that would look like half the need."""
    from tuneadvisor.present.requests_use import job_request_lines

    facts: dict[str, object] = {
        "job.nodes": 2, "job.mem_mib": 4000.0, "seff.nodes": 2, "usage.mem_peak_mib": 2000.0,
    }  # fmt: skip
    if node_peak is not None:
        facts["usage.mem_peak_node_mib"] = node_peak
    assert said in "\n".join(job_request_lines(facts))
