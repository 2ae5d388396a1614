"""Issue 20 point 3: the tuned script says what it was tuned from, and the same evidence
applied to it again changes nothing, with a profile alone too (it has no allocation of its
own: without the line, the cores doubled at every apply, 4, 8, 16 ... 128)."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import tutorial_seff
from tuneadvisor.advisor.site import DEFAULT_NODE_CORES
from tuneadvisor.cli import main
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.jobscript.overridden import without_overridden
from tuneadvisor.slurm.jobscript.tuned_from import TunedFrom, read_tuned_from, with_tuned_from
from tuneadvisor.workspace.evidence_stamp import evidence_stamp
from tuneadvisor.workspace.inputs import Inputs

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "mnist"
JOB = "#!/bin/bash\n#SBATCH --cpus-per-task=2\n#SBATCH --mem=8G\n\nsrun python train.py\n"


# --------------------------------------------------------------------------- the line itself


stamps = st.builds(
    TunedFrom,
    evidence=st.from_regex(r"(profile|seff) [A-Za-z0-9._+-]{1,20}", fullmatch=True),
    digest=st.from_regex(r"[0-9a-f]{12}", fullmatch=True),
    cpus_per_task=st.none() | st.integers(1, 4096),
    mem_mib=st.none() | st.integers(1, 2**24).map(float),
    workers=st.none() | st.integers(0, 512),
)


@given(stamps)
def test_the_line_reads_back_as_written(stamp: TunedFrom) -> None:
    job = with_tuned_from(JobScript.parse(JOB), stamp)
    assert read_tuned_from(job) == stamp


@given(stamps, stamps)
def test_writing_the_line_again_replaces_it_and_sbatch_reads_the_same(
    first: TunedFrom, second: TunedFrom
) -> None:
    job = JobScript.parse(JOB)
    once = with_tuned_from(with_tuned_from(job, first), second)
    assert read_tuned_from(once) == second
    assert once.render_text().count("# tuneadvisor: tuned from") == 1
    assert with_tuned_from(once, second).render() == once.render()  # identical bytes
    assert once.directives() == job.directives() and not once.problems


def test_the_line_goes_after_the_last_directive_and_keeps_a_last_line_without_break() -> None:
    stamp = TunedFrom("profile a.lprof", "0123456789ab", 1, 8192.0)
    job = with_tuned_from(JobScript.parse("#!/bin/bash\n#SBATCH -c 1\n#SBATCH --mem 8G"), stamp)
    assert job.render_text() == f"#!/bin/bash\n#SBATCH -c 1\n#SBATCH --mem 8G\n{stamp.line()}"
    bare = with_tuned_from(JobScript.parse("#!/bin/bash\npython train.py\n"), stamp)
    assert bare.render_text().splitlines()[1] == stamp.line()


def test_a_line_after_the_first_command_is_not_read() -> None:
    stamp = TunedFrom("profile a.lprof", "0123456789ab", 1, 8192.0)
    job = JobScript.parse(f"#!/bin/bash\n#SBATCH -c 4\npython x.py\n{stamp.line()}\n")
    assert read_tuned_from(job) is None


# --------------------------------------------------------------------------- apply, again


def _apply(profile: Path, job: Path, out: Path, *more: str) -> None:
    assert main(["apply", str(profile), "--job", str(job), "-o", str(out), *more]) == 0


def _cores(path: Path) -> int:
    return int(JobScript.parse(path.read_bytes()).directives()["cpus-per-task"])


def test_the_bundled_example_applied_again_with_its_profile_alone_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("24752610.lprof", "mnist.sbatch", "mnist_classify.py"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    profile = tmp_path / "24752610.lprof"
    outs = [tmp_path / f"t{i}.sbatch" for i in range(4)]
    _apply(profile, tmp_path / "mnist.sbatch", outs[0])
    for before, after in itertools.pairwise(outs):
        _apply(profile, before, after)
        assert after.read_bytes() == outs[0].read_bytes()
    stamp = read_tuned_from(JobScript.parse(outs[0].read_bytes()))
    assert stamp is not None and stamp.evidence == "profile 24752610.lprof"
    assert stamp.cpus_per_task == 1 and stamp.mem_mib == 8192  # the run the profile measured
    assert _cores(outs[0]) > 1
    assert "the evidence this script was tuned from is of a 1-core run" in capsys.readouterr().out


def test_other_evidence_is_measured_under_the_script_as_it_is_and_stops_at_the_ceiling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new profile (another digest) of the tuned script is a run with its cores: the advice
    grows from there, but never past the default ceiling without a site file."""
    shutil.copy(EXAMPLE / "mnist.sbatch", tmp_path / "t0.sbatch")
    table = (EXAMPLE / "24752610.txt").read_text()
    cores = [_cores(tmp_path / "t0.sbatch")]
    for i in range(1, 9):
        profile = tmp_path / f"run{i}.txt"
        profile.write_text(table + "\n" * i)  # another run, the same shares
        _apply(profile, tmp_path / f"t{i - 1}.sbatch", tmp_path / f"t{i}.sbatch")
        cores.append(_cores(tmp_path / f"t{i}.sbatch"))
    assert cores[1] > cores[0] and cores[2] > cores[1]  # each new run measured as it ran
    assert max(cores) == cores[-1] == DEFAULT_NODE_CORES
    assert "a default ceiling: the nodes' size is unknown" in capsys.readouterr().out


def _alloc(capsys: pytest.CaptureFixture[str], job: Path, seff: Path) -> dict[str, object]:
    assert main(["report", "--job", str(job), "--seff", str(seff), "--format", "json"]) == 0
    facts = json.loads(capsys.readouterr().out)["advice"]["facts"]
    return {k: v for k, v in facts.items() if k.startswith("alloc.")}


def test_evidence_with_its_own_allocation_keeps_it_whatever_the_line_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """seff states the cores and memory it ran with: that wins over the line, even the line
    of this very seff (the line is for evidence that states none)."""
    seff = tmp_path / "seff.txt"
    seff.write_text(tutorial_seff(cores=1, cpu_efficiency="99.00"))
    job = tmp_path / "job.sbatch"
    job.write_text(JOB)
    plain = _alloc(capsys, job, seff)
    stamp = evidence_stamp(Inputs(seff=str(seff)))
    assert stamp is not None
    line = TunedFrom(stamp.evidence, stamp.digest, 16, 65536.0, 7)
    job.write_bytes(with_tuned_from(JobScript.parse(JOB), line).render())
    assert plain["alloc.cpus_per_task"] == 1 and plain["alloc.mem_mib"] == 8192
    assert _alloc(capsys, job, seff) == {**plain, "alloc.workers": 7}  # seff says no workers


# --------------------------------------------------------------------------- options set twice


def test_an_option_set_twice_keeps_the_occurrence_that_counts() -> None:
    job = JobScript.parse(
        "#!/bin/bash\n#SBATCH --mem=2G -c 1\n#SBATCH --mail-type=END\n#SBATCH --mem 1G\n"
        "#SBATCH -c4 --mail-type=FAIL\npython x.py\n"
    )
    notes: list[str] = []
    once = without_overridden(job, notes)
    assert once.directives() == job.directives()  # what sbatch applies, unchanged
    assert once.render_text().count("--mem") == 1 and "-c 1" not in once.render_text()
    assert once.render_text().count("--mail-type") == 2  # they add up: both kept
    assert len(notes) == 2 and "--mem of line 2 removed" in notes[0]
    assert without_overridden(once, []).render() == once.render()
