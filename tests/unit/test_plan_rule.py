"""The plan's rule (issue 30 §1), held over generated headers and evidence combinations:

the plan never lowers workers, cores, memory per node, GPUs or time below what measured
evidence supports, and never acts on an assumed value (an assumed node, an assumed core
count, a per-node share of a job-wide figure). When it cannot size, it says what it needs.

Headers come from ``tests/generated_jobs.py`` (issue 20's generators), some with
``--exclusive``; the evidence is generated seff output, a site file, both or neither; the
training script hard-codes a number of DataLoader workers.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.generated_jobs import LARGE, Header, headers, scripts, seffs
from tuneadvisor.slurm.accounting.seff import parse_seff
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import load_workspace

TRAIN = (
    "from torch.utils.data import DataLoader\n\n"
    "loader = DataLoader(dataset, batch_size=64, num_workers={workers}, pin_memory=True)\n"
    "for batch in loader:\n    pass\n"
)


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    monkeypatch.delenv("TUNEADVISOR_SITE", raising=False)
    monkeypatch.delenv("TUNEADVISOR_RULES", raising=False)


@st.composite
def cases(draw: st.DrawFn) -> tuple[Header, str, dict[str, str], int]:
    header = draw(headers(LARGE))
    text = draw(scripts(header))
    if draw(st.integers(0, 2)):  # the whole node: its cores are the node's, not one
        text = text.replace("#!/bin/bash\n", "#!/bin/bash\n#SBATCH --exclusive\n", 1)
    evidence: dict[str, str] = {}
    if draw(st.integers(0, 2)):
        evidence["seff"] = draw(seffs(header))
    if draw(st.integers(0, 2)):
        evidence["site"] = LARGE.site()
    return header, text, evidence, draw(st.sampled_from([0, 2, 4, 8, 16]))


def _per_node_mib(script: JobScript) -> float | None:
    mib = script.request().node_mem_mib
    return float(mib) if mib else None


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(cases())
def test_the_plan_never_goes_below_the_evidence_nor_acts_on_an_assumption(
    tmp_path: Path, case: tuple[Header, str, dict[str, str], int]
) -> None:
    _, text, evidence, workers = case
    job_path = tmp_path / "job.sbatch"
    job_path.write_text(text)
    (tmp_path / "train.py").write_text(TRAIN.format(workers=workers))
    paths = {}
    for kind, content in evidence.items():
        paths[kind] = tmp_path / f"{kind}.txt"
        paths[kind].write_text(content)
    inputs = Inputs(
        job=str(job_path),
        seff=str(paths["seff"]) if "seff" in paths else None,
        site=str(paths["site"]) if "site" in paths else None,
    )
    workspace = load_workspace(inputs)
    advice = workspace.advice
    assert advice is not None
    plan, facts = advice.plan, advice.facts
    where = f"{text}\n--- evidence: {sorted(evidence)}, workers={workers}\n{dict(plan.sbatch)}"
    original = JobScript.parse(text)
    tuned = workspace.tuned.tuned_job
    written = tuned if tuned is not None and workspace.tuned.job_diff else original
    before, after = original.request(), written.request()
    seff = parse_seff(evidence["seff"]) if "seff" in evidence else None

    # No assumed core count: an --exclusive job without --cpus-per-task whose node nobody
    # described (no site file, no accounting) gets no core or worker cut, and a note.
    whole_node = before.exclusive == "exclusive" and before.cpus_per_task is None
    if whole_node and before.cpus_per_gpu is None and not evidence:
        assert "cpus-per-task" not in plan.sbatch, where
        assert "job.cpus_per_task" not in facts, where
        lowered = plan.script.get("num_workers")
        assert lowered is None or not isinstance(lowered.value, int) or lowered.value >= workers
        assert any("--exclusive" in note.line() for note in advice.not_read), where
    # Workers are never cut on a core count nobody gave.
    change = plan.script.get("num_workers")
    if change is not None:
        value = change.value
        if isinstance(value, int) and value < workers:
            assert isinstance(facts.get("job.cpus_per_task"), int), where

    # GPUs: never fewer a node.
    if before.node_gpus:
        assert (after.node_gpus or 0) >= before.node_gpus, where
    if seff is None:
        return
    # Time: never under the time the run took.
    limit = after.time_limit
    if seff.wall_s and limit is not None and limit.seconds and limit != before.time_limit:
        assert limit.seconds >= seff.wall_s, where
    # Cores: never fewer over the job than the run kept busy (where the tasks stay: a job
    # whose launch starts one process is cut to one task by unused-tasks, its own evidence).
    same_tasks = after.tasks_total == before.tasks_total
    if seff.cpu_used_s and seff.wall_s and "cpus-per-task" in plan.sbatch and same_tasks:
        busy = math.floor(seff.cpu_used_s / seff.wall_s)
        assert after.task_cpus * after.tasks_total >= busy, where
    # Memory per node: no node held more than its request (the job-wide total is not a
    # node's), and a raise or a cut never goes under the busiest node's peak.
    request = facts.get("alloc.mem_mib")
    node_peak = facts.get("usage.mem_peak_node_mib")
    peak = facts.get("usage.mem_peak_mib")
    killed = facts.get("usage.killed_for_memory") is True
    sampled_kill = killed and facts.get("usage.state") != "OUT_OF_MEMORY"  # OverMemoryKill
    numbers = all(isinstance(v, float) for v in (request, node_peak, peak))
    if numbers and not sampled_kill:
        assert isinstance(request, float) and isinstance(peak, float)
        assert isinstance(node_peak, float)
        nodes = seff.nodes or 1
        assert node_peak <= max(request, peak / nodes) + 1, where
    mem = plan.sbatch.get("mem")
    written_mib = _per_node_mib(written)
    if mem is not None and written_mib is not None and isinstance(node_peak, float):
        # never under the busiest node's estimate, unless capped at a described node's whole
        # memory (no request can be more; an assumed node's size is never a cap: plan.py)
        known = facts.get("node.mem_mib") if facts.get("node.assumed") is not True else None
        capped = isinstance(known, float) and written_mib >= known
        assert written_mib >= node_peak or capped, where
        if killed and isinstance(request, float):
            # raised from the per-node figures, never from the job-wide total
            most = max(request, node_peak) * 2
            assert written_mib <= math.ceil(most / 1024) * 1024 + 1024, where
            node = facts.get("node.mem_mib")
            if not isinstance(node, float) or node > request:
                assert written_mib > request, where


@pytest.mark.parametrize(
    ("nodes", "used", "total", "per_node"),
    [(2, "62.81 GB", "64.00 GB", "64G"), (5, "35.84 GB", "60.00 GB", "24G")],
    ids=["2 nodes", "5 nodes"],
)
def test_multi_node_oom_from_seff_alone_raises_the_per_node_request(
    tmp_path: Path, nodes: int, used: str, total: str, per_node: str
) -> None:
    """Issue 30: "62.81 GB of 64.00 GB" on 2 nodes asked --mem=126G a node; the busiest node
    held at most its 32 GB request before the kill. Twice that is asked."""
    seff = tmp_path / "seff.txt"
    seff.write_text(
        f"Job ID: 4242\nState: OUT_OF_MEMORY (exit code 0)\nNodes: {nodes}\n"
        "Cores per node: 8\nCPU Utilized: 01:02:03\n"
        "CPU Efficiency: 40.00% of 02:35:00 core-walltime\nJob Wall-clock time: 00:09:41\n"
        f"Memory Utilized: {used}\nMemory Efficiency: 98.14% of {total}\n"
    )
    advice = load_workspace(Inputs(seff=str(seff))).advice
    assert advice is not None
    change = advice.plan.sbatch.get("mem")
    assert change is not None and change.value == per_node
    request = float(total.split()[0]) * 1024 / nodes
    node_peak = advice.facts["usage.mem_peak_node_mib"]
    assert isinstance(node_peak, float) and node_peak <= request


EXCLUSIVE = """\
#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=4
#SBATCH --exclusive
#SBATCH --time=04:00:00

srun torchrun --nnodes=2 --nproc-per-node=4 train.py
"""


@pytest.mark.parametrize("site", [None, LARGE.site()], ids=["no site", "site"])
def test_an_exclusive_job_is_not_read_as_one_core(tmp_path: Path, site: str | None) -> None:
    """Issue 30: a healthy 2-node torchrun job with --exclusive got too-many-workers, and
    apply added --cpus-per-task=16 and cut num_workers from 4 to 1. Its cores are the node's:
    the site file's 32 (8 a rank, 4 workers fit), and unknown without one (nothing cut)."""
    (tmp_path / "job.sbatch").write_text(EXCLUSIVE)
    (tmp_path / "train.py").write_text(TRAIN.format(workers=4))
    site_path = None
    if site is not None:
        site_path = tmp_path / "site.toml"
        site_path.write_text(site)
    inputs = Inputs(job=str(tmp_path / "job.sbatch"), site=str(site_path) if site_path else None)
    workspace = load_workspace(inputs)
    advice = workspace.advice
    assert advice is not None
    assert "too-many-workers" not in [f.id for f in advice.findings]
    assert "cpus-per-task" not in advice.plan.sbatch and "num_workers" not in advice.plan.script
    if site is None:
        assert "job.cpus_per_task" not in advice.facts
        assert any(
            n.line().startswith("--exclusive: each task has its node's cores")
            for n in advice.not_read
        )
    else:
        assert advice.facts["job.cpus_per_task"] == 32
