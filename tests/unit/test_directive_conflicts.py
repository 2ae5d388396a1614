"""Issue 20, point 2: `apply` never writes a script sbatch refuses for options it takes only
one of (--cpus-per-gpu next to --cpus-per-task, two memory options), never renames a typo
into an option the script has already or one conflicting with it, and never revives a
resource request the advice did not size (--ntaskss=64). Each case goes through
`tuneadvisor apply`; the written script is read back by the project's own directive
checker. tests/unit/test_directive_conflicts_sbatch.py gives the same scripts to sbatch."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TUTORIAL_SEFF
from tuneadvisor.cli import main
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.options import CONFLICTING_OPTIONS, conflicting_with

# The tutorial job: 1.31 GB peak on one busy core; the plan asks for 4 cores and --mem=4G.
SEFF = TUTORIAL_SEFF.read_text()


@dataclass(frozen=True)
class Case:
    name: str
    header: tuple[str, ...]  # #SBATCH lines after the #! line
    directives: dict[str, str | None]  # what the written script must say (None: absent)
    note: str  # a part of the note apply prints
    finding: str | None = None  # a finding `report` gives for the script as written
    single_gpu: bool = True  # fits the local one-GPU node (the sbatch test)
    refused_kept: tuple[str, ...] = field(default=())  # ids apply leaves, and says so


def script(case: Case) -> str:
    return "#!/bin/bash\n" + "".join(f"{line}\n" for line in case.header) + "\npython train.py\n"


CASES = [
    Case(
        "cores per GPU stay per GPU",
        ("#SBATCH --cpus-per-gpu=1", "#SBATCH --gres=gpu:1", "#SBATCH --mem=8G"),
        {"cpus-per-gpu": "4", "cpus-per-task": None},
        "--cpus-per-gpu=4 written for 4 cores per task",
    ),
    Case(
        "cores that do not split over the GPUs replace --cpus-per-gpu",
        ("#SBATCH --cpus-per-gpu=1", "#SBATCH --gres=gpu:3", "#SBATCH --mem=8G"),
        {"cpus-per-task": "4", "cpus-per-gpu": None},
        "--cpus-per-gpu removed: --cpus-per-task=4 replaces it",
        single_gpu=False,
    ),
    Case(
        "both core options as given: one is kept",
        ("#SBATCH --cpus-per-task=1", "#SBATCH --cpus-per-gpu=1", "#SBATCH --gres=gpu:1"),
        {"cpus-per-task": "4", "cpus-per-gpu": None},
        "(the script has both)",
        finding="conflicting-directives",
    ),
    Case(
        "two memory options as given: the plan's --mem replaces the other",
        ("#SBATCH --mem=8G", "#SBATCH --mem-per-cpu=2G", "#SBATCH -c 1"),
        {"mem": "4G", "mem-per-cpu": None},
        "--mem-per-cpu removed: --mem=4G replaces it",
        finding="conflicting-directives",
    ),
    Case(
        "memory per core is pinned where the plan changes the cores but not the memory",
        ("#SBATCH --mem-per-cpu=4G", "#SBATCH -c 1"),
        {"mem": "4G", "mem-per-cpu": None, "cpus-per-task": "4"},
        "--mem-per-cpu replaced by --mem=4G: the node's memory as before, not 16G",
    ),
    Case(
        "a typo of an option set already goes",
        ("#SBATCH --mem=8G", "#SBATCH --memm=16G", "#SBATCH -c 1"),
        {"mem": "4G"},
        "--memm=16G removed (sbatch refuses it); not written as --mem=16G: --mem (line 2) is set",
        finding="invalid-directive",
    ),
    Case(
        "a typo of an option conflicting with one set goes",
        ("#SBATCH --mem=8G", "#SBATCH --mem-per-cpuu=2G", "#SBATCH -c 1"),
        {"mem": "4G", "mem-per-cpu": None},
        "not written as --mem-per-cpu=2G: --mem (line 2) conflicts with it",
        finding="invalid-directive",
    ),
    Case(
        "a typo of a resource the advice did not size goes",
        ("#SBATCH --ntaskss=64", "#SBATCH -c 1", "#SBATCH --mem=4G"),
        {"ntasks": None, "cpus-per-task": "4"},
        "not written as --ntasks=64: --ntasks asks for resources the advice did not size",
        finding="invalid-directive",
    ),
    Case(
        "a typo of a resource the plan sizes is written and sized",
        ("#SBATCH --cpus-per-tsk=1", "#SBATCH --mem=8G"),
        {"cpus-per-task": "4"},
        "--cpus-per-tsk=1 is no sbatch option: written as --cpus-per-task=1",
        finding="invalid-directive",
    ),
]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def apply_case(
    capsys: pytest.CaptureFixture[str], folder: Path, text: str, *extra: str
) -> tuple[JobScript, str]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "job.sbatch").write_text(text)
    (folder / "seff.txt").write_text(SEFF)
    out_path = folder / "job.tuned.sbatch"
    code, out, err = run(
        capsys, "apply", "--job", str(folder / "job.sbatch"), "--seff",
        str(folder / "seff.txt"), "-o", str(out_path), "--force", *extra,
    )  # fmt: skip
    assert code == 0, err
    return JobScript.parse(out_path.read_bytes(), out_path), out


def assert_sbatch_takes(job: JobScript, kept: tuple[str, ...] = ()) -> None:
    """No option twice, none next to one sbatch refuses with it, nothing sbatch refuses
    (but what apply said it kept)."""
    names = Counter(d.name for d in job.occurrences if d.component == 0)
    assert [name for name, count in names.items() if count > 1] == []
    for name in names:
        assert not conflicting_with(name) & set(names), (name, names)
    assert [p.id for p in job.problems if p.fatal and p.id not in kept] == []


def finding_ids(capsys: pytest.CaptureFixture[str], job: Path) -> list[str]:
    code, out, err = run(capsys, "report", "--format", "json", "--job", str(job))
    assert code == 0, err

    doc: dict[str, Any] = json.loads(out)
    return [finding["id"] for finding in doc["findings"]]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_apply_writes_a_script_sbatch_takes(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tuned, out = apply_case(capsys, tmp_path, script(case))
    assert_sbatch_takes(tuned, case.refused_kept)
    directives = tuned.directives()
    for name, value in case.directives.items():
        assert directives.get(name) == value, (name, directives)
    assert case.note in out
    if case.finding is not None:
        assert case.finding in finding_ids(capsys, tmp_path / "job.sbatch")


def test_the_repaired_request_is_what_a_second_apply_sizes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 20: the repair revived --ntasks=64 next to the plan's -c, and a second apply
    then wrote -c 256 with --mem=4G. Now the unsized request goes, and the second apply of
    the same evidence to the written script writes the same script."""
    first, _ = apply_case(
        capsys, tmp_path / "1", "#!/bin/bash\n#SBATCH --ntaskss=64\n#SBATCH -c 1\n\npython t.py\n"
    )
    second, _ = apply_case(capsys, tmp_path / "2", first.render_text())
    assert second.render_text() == first.render_text()
    assert second.request().node_cpus == 4


def test_the_conflict_table_is_what_the_checker_refuses() -> None:
    """Every pair of the table makes the checker refuse the script with sbatch's message."""
    values = {
        "mem": "1G", "mem-per-cpu": "1G", "mem-per-gpu": "1G", "cpus-per-task": "2",
        "cpus-per-gpu": "2", "ntasks-per-node": "1", "ntasks-per-gpu": "1", "gpus-per-task": "1",
    }  # fmt: skip
    for group, message in CONFLICTING_OPTIONS:
        for first in sorted(group):
            for second in sorted(group - {first}):
                text = f"#!/bin/bash\n#SBATCH --{first}={values[first]}\n"
                text += f"#SBATCH --{second}={values[second]}\n#SBATCH -n 1\nhostname\n"
                job = JobScript.parse(text)
                found = [p for p in job.problems if p.id == "conflicting-directives"]
                assert [(p.line, p.option, p.message) for p in found] == [(3, second, message)], (
                    text
                )


def test_a_conflict_is_a_finding_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --cpus-per-gpu=2\n#SBATCH -c 4\n#SBATCH -G 1\nhostname\n")
    code, out, err = run(capsys, "report", "--format", "json", "--job", str(job))
    assert code == 0, err

    doc: dict[str, Any] = json.loads(out)
    facts = doc["advice"]["facts"]
    assert facts["job.conflicting_directives"] == 1
    assert facts["job.conflicting_directive.first"] == (
        "line 3: --cpus-per-gpu is mutually exclusive with --cpus-per-task"
    )
    assert "conflicting-directives" in [f["id"] for f in doc["findings"]]
