"""Issue 20 point 6: issue 12's property (apply twice = apply once, memory safe) over
generated headers instead of the fixed corpus. Random valid ``#SBATCH`` headers (short and
long forms, ``=`` or a blank, one or two options a line) with generated seff evidence, or the
bundled example's profile alone (no allocation of its own: the tuned-from line's case), with
and without a site file. Every written script must:

- be written again unchanged by the same evidence (apply(apply(x)) == apply(x));
- have no directive twice and none sbatch refuses (the model's own checks: conflicting
  memory or core options, invalid directives);
- ask for no less memory than the peak and no more cores or memory than the node has.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import tutorial_seff
from tests.generated_jobs import LARGE, Header, headers, scripts, seffs
from tests.unit.test_apply_property import _check_memory
from tuneadvisor.advisor.site import DEFAULT_NODE_CORES, DEFAULT_NODE_MEM_MIB
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.units import parse_memory
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import load_workspace

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "examples" / "mnist" / "24752610.lprof"
EXAMPLES = int(os.environ.get("TUNEADVISOR_EXAMPLES", "60"))  # more for a one-off search


def written_problems(script: bytes) -> list[str]:
    """What is wrong with a written script: an option set twice, or anything sbatch refuses
    (the model runs sbatch's own checks, conflicting options among them)."""
    job = JobScript.parse(script)
    twice = Counter(d.name for d in job.occurrences if d.component == 0)
    problems = [f"--{name} set {n} times" for name, n in twice.items() if n > 1]
    return problems + [f"line {p.line}: {p.message}" for p in job.problems if p.fatal]


def apply_once(inputs: Inputs) -> tuple[bytes | None, dict[str, object]]:
    """The tuned script `apply` writes for ``inputs`` (None: unchanged) and the facts."""
    workspace = load_workspace(inputs)
    tuned = workspace.tuned.tuned_job
    assert workspace.advice is not None and tuned is not None
    return (tuned.render() if workspace.tuned.job_diff else None), dict(workspace.advice.facts)


def _cores_within_the_node(script: bytes, facts: dict[str, object], where: str) -> None:
    request = JobScript.parse(script).request()
    node = facts.get("node.cores")
    assert isinstance(node, int), where
    per_node = (request.task_cpus or 1) * (request.tasks_per_node or 1)
    assert per_node <= node, f"{where}: {per_node} cores a node, the node has {node}"


def check_apply(tmp_path: Path, header: Header, text: str, evidence: dict[str, str]) -> None:
    """Issue 20's property for one job script and one set of evidence (``seff``, ``profile``
    (the example's), ``site``: file texts, by kind)."""
    job = tmp_path / "job.sbatch"
    job.write_text(text)
    paths: dict[str, str] = {}
    for kind, content in evidence.items():
        path = tmp_path / f"{kind}.txt"
        if kind == "profile":
            path = tmp_path / PROFILE.name
            shutil.copy(PROFILE, path)
        else:
            path.write_text(content)
        paths[kind] = str(path)
    inputs = Inputs(
        profiles=(paths["profile"],) if "profile" in paths else (),
        job=str(job),
        seff=paths.get("seff"),
        site=paths.get("site"),
    )
    once, facts = apply_once(inputs)
    if once is None:  # nothing to change: apply writes what it was given
        return
    where = f"{text}\n--- written:\n{once.decode()}"
    assert not written_problems(once), f"{where}\n{written_problems(once)}"
    _check_memory(once, job.read_bytes(), facts, where)
    _cores_within_the_node(once, facts, where)
    if "site" not in evidence:  # the default ceiling, raised only to what the job had
        mem = JobScript.parse(once).directives().get("mem")
        ceiling = max(DEFAULT_NODE_MEM_MIB, header.mem_per_node_mib or 0)
        assert mem is None or parse_memory(mem) <= ceiling, where
        cores = facts.get("node.cores")
        assert isinstance(cores, int) and cores >= DEFAULT_NODE_CORES, where
    again = tmp_path / "again.sbatch"
    again.write_bytes(once)
    twice, _ = apply_once(replace(inputs, job=str(again)))
    assert twice is None, f"{where}\n--- written again:\n{(twice or b'').decode()}"


@st.composite
def cases(draw: st.DrawFn) -> tuple[Header, str, dict[str, str]]:
    header = draw(headers(LARGE))
    text = draw(scripts(header))
    evidence: dict[str, str] = {}
    kind = draw(st.sampled_from(["seff", "profile", "both"]))
    if kind in ("seff", "both"):
        evidence["seff"] = draw(seffs(header))
    if kind in ("profile", "both"):
        evidence["profile"] = ""
    if draw(st.integers(0, 3)):  # mostly a site file; without, the default ceiling
        evidence["site"] = LARGE.site()
    return header, text, evidence


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(cases())
def test_apply_twice_is_apply_once_on_generated_headers(
    tmp_path: Path, case: tuple[Header, str, dict[str, str]]
) -> None:
    header, text, evidence = case
    check_apply(tmp_path, header, text, evidence)


GENERATED_MEM_PER_CPU = (
    b"#!/bin/bash\n#SBATCH -c1 --gres=gpu:1\n#SBATCH --mem-per-cpu=1G\n"
    b"#SBATCH -p p --nodes=4\n#SBATCH --time 2:30:00 -n 4\n\nmodule load cuda\n"
    b"srun python train.py\n"
)
GENERATED_MEM_PER_CPU_SEFF = (
    "Job ID: 4242\nState: TIMEOUT (exit code 1)\nNodes: 4\nCores per node: 1\n"
    "CPU Utilized: 02:37:44\nCPU Efficiency: 94.64% of 02:46:40 core-walltime\n"
    "Job Wall-clock time: 00:41:40\nMemory Utilized: 4.00 GB\n"
    "Memory Efficiency: 100.00% of 4.00 GB\n"
)
# a real one (tests/fixtures/realworld/jobscripts/MANIFEST.md): 4 GPUs, 1 core, 23000M a core
REAL_MEM_PER_CPU = (
    REPO
    / "tests/fixtures/realworld/jobscripts"
    / "chhajedvaibhav-aimos-codes-pyramidnet-schedular.sh"
)


@pytest.mark.parametrize(
    ("script", "seff"),
    [
        (GENERATED_MEM_PER_CPU, GENERATED_MEM_PER_CPU_SEFF),
        (REAL_MEM_PER_CPU.read_bytes(), tutorial_seff(used="20.00 GB", requested="22.46 GB")),
    ],
    ids=["generated", "real"],
)
def test_mem_per_cpu_with_more_cores(tmp_path: Path, script: bytes, seff: str) -> None:
    """Found by the property above: with --mem-per-cpu the cores raised from 1 to 4 asked
    for 4 times the memory a node, and the next apply cut it to a --mem. The node's memory is
    now written as --mem with the new cores, and a second apply changes nothing."""
    job, seff_path, site = tmp_path / "job.sbatch", tmp_path / "seff.txt", tmp_path / "site.toml"
    job.write_bytes(script)
    seff_path.write_text(seff)
    site.write_text(LARGE.site())
    inputs = Inputs(job=str(job), seff=str(seff_path), site=str(site))
    once, _ = apply_once(inputs)
    assert once is not None
    assert JobScript.parse(once).directives().get("cpus-per-task") == "4"  # the case itself
    again = tmp_path / "again.sbatch"
    again.write_bytes(once)
    twice, _ = apply_once(replace(inputs, job=str(again)))
    assert twice is None, twice


# Found by the property above (CI, 2026-11-27): a 2-node job killed at 512.4 GB of 488; the
# site's nodes have 256G, less than the 256.2 GB a node used. Capped at the node, --mem would
# be under the peak and the job killed again: none is written, and the plan says what fits.
OOM_OVER_THE_NODE = (
    b"#!/bin/bash\n#SBATCH --cpus-per-task=1\n#SBATCH --nodes=2\n#SBATCH --ntasks=2\n"
    b"#SBATCH --ntasks-per-node=1\n#SBATCH --cpus-per-task=2\n"
    b"#SBATCH --mem=244G --time=01:00:00\n\nmodule load cuda\nsrun python train.py\n"
)
OOM_OVER_THE_NODE_SEFF = (
    "Job ID: 4242\nCluster: gen\nUser/Group: alice/users\n"
    "State: OUT_OF_MEMORY (exit code 1)\nNodes: 2\nCores per node: 2\n"
    "CPU Utilized: 00:01:12\nCPU Efficiency: 3.00% of 00:40:00 core-walltime\n"
    "Job Wall-clock time: 00:10:00\nMemory Utilized: 512.40 GB\n"
    "Memory Efficiency: 105.00% of 488.00 GB\n"
)


def test_no_mem_is_written_when_no_node_holds_what_a_node_used(tmp_path: Path) -> None:
    job, seff, site = tmp_path / "job.sbatch", tmp_path / "seff.txt", tmp_path / "site.toml"
    job.write_bytes(OOM_OVER_THE_NODE)
    seff.write_text(OOM_OVER_THE_NODE_SEFF)
    site.write_text(LARGE.site())
    workspace = load_workspace(Inputs(job=str(job), seff=str(seff), site=str(site)))
    assert workspace.advice is not None
    plan = workspace.advice.plan
    assert "mem" not in plan.sbatch
    assert any("--mem not changed" in n and "more than the 256G" in n for n in plan.notes), (
        plan.notes
    )
    tuned = workspace.tuned.tuned_job
    written = tuned.render() if tuned is not None else OOM_OVER_THE_NODE
    assert JobScript.parse(written).directives().get("mem") == "244G"
