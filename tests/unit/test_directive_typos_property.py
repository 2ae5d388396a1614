"""Issue 20's invariant over generated headers: options with typos in their names, their
values or their #SBATCH word, and options sbatch takes only one of. Whatever `apply` writes
has no option twice, no pair sbatch refuses that the script did not already have, nothing
sbatch refuses that it did not already refuse, and keeps every directive sbatch read from
the original (an option replaced by one excluding it, with a note, counts as kept)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import TUTORIAL_SEFF
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.options import conflicting_with
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.load import load_workspace

# (option, value): pairs sbatch refuses together are among them on purpose.
OPTIONS = [
    ("cpus-per-task", "1"), ("cpus-per-gpu", "2"), ("mem", "8G"), ("mem-per-cpu", "2G"),
    ("mem-per-gpu", "4G"), ("gres", "gpu:1"), ("time", "01:00:00"), ("job-name", "x"),
    ("ntasks", "1"), ("nodes", "1"), ("output", "o.log"), ("mail-type", "END"),
    ("ntasks-per-node", "1"),
]  # fmt: skip
MAGIC_TYPOS = ["#SBACTH", "#SBTACH", "#sbatch", "# SBATCH", " #SBATCH", "#SBATC"]
SITE = '[partitions.p]\ncores = 32\nmem = "256G"\ngpus = 4\ndefault = true\n'


def _name_typo(name: str, kind: int, at: int) -> str:
    at %= len(name)
    if kind == 0:  # a key pressed twice
        return name[:at] + name[at] + name[at:]
    if kind == 1:  # a letter left out
        return name[:at] + name[at + 1 :]
    at = min(at, len(name) - 2)  # two letters swapped
    return name[:at] + name[at + 1] + name[at] + name[at + 2 :]


@st.composite
def headers(draw: st.DrawFn) -> list[str]:
    chosen = draw(st.lists(st.sampled_from(OPTIONS), min_size=1, max_size=6, unique=True))
    lines = []
    for name, value in chosen:
        kind = draw(st.sampled_from(["exact", "exact", "name", "magic", "value"]))
        if kind == "name":
            typo = draw(st.integers(0, 2))
            name = _name_typo(name, typo, draw(st.integers(0, 20)))
        if kind == "value":
            value += value[-1]  # 8GG, 01:00:000, gpu:11 (some of them still valid)
        magic = draw(st.sampled_from(MAGIC_TYPOS)) if kind == "magic" else "#SBATCH"
        lines.append(f"{magic} --{name}={value}")
    return lines


def _pairs(job: JobScript) -> set[frozenset[str]]:
    names = set(job.directives())
    return {frozenset({a, b}) for a in names for b in conflicting_with(a) & names}


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(header=headers())
def test_the_written_script_has_no_duplicate_no_new_conflict_and_loses_nothing(
    header: list[str], tmp_path: Path
) -> None:
    text = "#!/bin/bash\n" + "".join(f"{line}\n" for line in header) + "\npython train.py\n"
    (tmp_path / "job.sbatch").write_text(text)
    (tmp_path / "seff.txt").write_text(TUTORIAL_SEFF.read_text())
    (tmp_path / "site.toml").write_text(SITE)
    inputs = Inputs(
        job=str(tmp_path / "job.sbatch"),
        seff=str(tmp_path / "seff.txt"),
        site=str(tmp_path / "site.toml"),
    )
    tuned = load_workspace(inputs).tuned.tuned_job
    assert tuned is not None
    original = JobScript.parse(text)
    names = Counter(d.name for d in tuned.occurrences if d.component == 0)
    assert [name for name, count in names.items() if count > 1] == [], tuned.render_text()
    assert _pairs(tuned) <= _pairs(original), tuned.render_text()
    refused_before = {(p.id, p.option) for p in original.problems if p.fatal}
    refused_after = {(p.id, p.option) for p in tuned.problems if p.fatal}
    assert refused_after - refused_before <= {
        ("conflicting-directives", name) for pair in _pairs(original) for name in pair
    }, tuned.render_text()
    written = tuned.directives()
    for name in original.directives():
        assert name in written or conflicting_with(name) & set(written), (name, text)
