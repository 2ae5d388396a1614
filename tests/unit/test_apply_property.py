"""Issue 12's property, over every fixture job script (the real-world corpus and the parser's
corpus) and a spread of evidence: applying the same evidence to the script `apply` wrote
writes the same script again, and no written script asks for less memory than the peak,
for --mem=0, or for more than the node has."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import tutorial_seff
from tuneadvisor.errors import InputError
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.units import parse_memory
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import load_workspace

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(
    [
        *(REPO / "tests" / "fixtures" / "realworld" / "jobscripts").glob("*.sh"),
        *(REPO / "tests" / "fixtures" / "jobscripts").glob("*.sh"),
    ]
)
ACCOUNTING = REPO / "tests" / "fixtures" / "realworld" / "accounting"
NODE_MEM_MIB = 256 * 1024
# One partition, the default: every job without a --partition of its own lands here.
SITE = '[partitions.p]\ncores = 32\nmem = "256G"\ngpus = 4\ndefault = true\n'


def _seff(state: str, cores: int, used: str, req: str, eff: str = "94.64") -> str:
    return tutorial_seff(cores=cores, state=state, used=used, requested=req, cpu_efficiency=eff)


EVIDENCE = {
    "one busy core, 1.31 of 8 GB": _seff("COMPLETED", 1, "1.31 GB", "8.00 GB"),
    "killed for memory, no peak recorded": _seff("OUT_OF_MEMORY", 2, "0.00 MB", "4.00 GB"),
    "killed for memory at the request": _seff("OUT_OF_MEMORY", 4, "3.99 GB", "4.00 GB"),
    "idle cores, 2 of 128 GB": _seff("COMPLETED", 16, "2.00 GB", "128.00 GB", eff="12.00"),
    "csc: two nodes, 80 cores": (ACCOUNTING / "csc-seff-puhti-2nodes.seff.txt").read_text(),
    "reportseff: two nodes, 16 cores": (
        ACCOUNTING / "reportseff-issue16-seff-2nodes.seff.txt"
    ).read_text(),
}


def _tuned(job: Path, seff: Path, site: Path) -> tuple[bytes | None, dict[str, object]]:
    workspace = load_workspace(Inputs(job=str(job), seff=str(seff), site=str(site)))
    advice, tuned = workspace.advice, workspace.tuned
    assert advice is not None and tuned.tuned_job is not None
    return (tuned.tuned_job.render() if tuned.job_diff else None), dict(advice.facts)


def _check_memory(tuned: bytes, original: bytes, facts: dict[str, object], where: str) -> None:
    mem = JobScript.parse(tuned).directives().get("mem")
    if mem is None:
        return
    mib = parse_memory(mem)
    if mib == 0:  # all of the node: only where the user wrote it, never tuneadvisor
        assert JobScript.parse(original).directives().get("mem") == mem, f"{where}: --mem=0"
        return
    peak = facts.get("usage.mem_peak_mib")
    nodes = facts.get("job.nodes") or 1
    node = facts.get("node.mem_mib")
    if isinstance(peak, float) and isinstance(nodes, int):
        fits = not isinstance(node, float) or peak / nodes <= node
        if not fits:  # no --mem both holds the peak and fits a node: none is written
            assert mem == JobScript.parse(original).directives().get("mem"), (
                f"{where}: --mem={mem} written though no node holds the peak {peak} MiB"
            )
            return
        assert mib * nodes >= peak, f"{where}: --mem={mem} under the peak {peak} MiB"
    if isinstance(node, float):
        assert mib <= node, f"{where}: --mem={mem} over the node's {node} MiB"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_apply_twice_is_apply_once_and_memory_is_safe(script: Path, tmp_path: Path) -> None:
    site = tmp_path / "site.toml"
    site.write_text(SITE)
    job = tmp_path / script.name
    job.write_bytes(script.read_bytes())
    try:
        JobScript.parse(job.read_bytes())
        load_workspace(Inputs(job=str(job), site=str(site)))
    except InputError:
        pytest.skip("no job script tuneadvisor reads (a Python file, an empty one)")
    for name, text in EVIDENCE.items():
        seff = tmp_path / "seff.txt"
        seff.write_text(text)
        where = f"{script.name} + {name}"
        once, facts = _tuned(job, seff, site)
        if once is None:
            continue
        _check_memory(once, job.read_bytes(), facts, where)
        again = tmp_path / ("again-" + script.name)
        again.write_bytes(once)
        twice, _ = _tuned(again, seff, site)
        assert twice is None, f"{where}: a second apply changed the script again"


PROFILE = REPO / "examples" / "mnist" / "24752610.lprof"


@pytest.mark.parametrize("with_site", [True, False], ids=["site", "no-site"])
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_profile_alone_applied_twice_is_applied_once(
    script: Path, with_site: bool, tmp_path: Path
) -> None:
    """Issue 20 point 3: a profile states no allocation; the script's tuned-from line keeps
    the second apply from doubling the cores again, and without a site file the default
    ceiling bounds the first."""
    site = tmp_path / "site.toml"
    site.write_text(SITE)
    job = tmp_path / script.name
    job.write_bytes(script.read_bytes())
    profile = tmp_path / PROFILE.name
    shutil.copy(PROFILE, profile)
    inputs = Inputs(profiles=(str(profile),), job=str(job), site=str(site) if with_site else None)
    try:
        workspace = load_workspace(inputs)
    except InputError:
        pytest.skip("no job script tuneadvisor reads (a Python file, an empty one)")
    tuned = workspace.tuned
    if not tuned.job_diff or tuned.tuned_job is None:
        return
    once = tuned.tuned_job.render()
    assert b"# tuneadvisor: tuned from profile 24752610.lprof" in once
    assert workspace.advice is not None
    _check_memory(once, job.read_bytes(), dict(workspace.advice.facts), script.name)
    again = tmp_path / ("again-" + script.name)
    again.write_bytes(once)
    twice = load_workspace(replace(inputs, job=str(again))).tuned
    assert not twice.job_diff, f"{script.name}: a second apply changed the script again"
