"""What the advisor takes from a job script besides its request: #SBATCH lines sbatch
ignores (a fact for a rule), and notes on site plugin options, quotes bash cannot pair and
which of several launches is read as the training."""

from __future__ import annotations

from tuneadvisor.slurm.jobscript.facts import job_facts, job_notes
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.launch_line.choose import choose_launch
from tuneadvisor.slurm.launch_line.search import find_launches


def job(text: str) -> JobScript:
    return JobScript.parse("#!/bin/bash\n" + text)


def test_directives_after_the_first_command_are_counted_with_their_lines() -> None:
    late = job("set -e\n#SBATCH --mem=8G\n#SBATCH -c 4\n\n#SBATCH --time=1:00:00\npython x.py\n")
    facts = job_facts(late, None)
    assert facts["job.ignored_directives"] == 3
    assert facts["job.ignored_directive.lines"] == (
        "lines 3-4, 6: #SBATCH --mem=8G; #SBATCH -c 4; #SBATCH --time=1:00:00"
    )
    many = job("cd x\n" + "".join(f"#SBATCH -c {n}\n" for n in range(1, 6)))
    lines = str(job_facts(many, None)["job.ignored_directive.lines"])
    assert lines.startswith("lines 3-7: ") and lines.endswith("#SBATCH -c 3 and 2 more")
    clean = job_facts(job("#SBATCH -c 4\npython x.py\n# SBATCH later comment\n"), None)
    assert clean["job.ignored_directives"] == 0
    assert "job.ignored_directive.lines" not in clean


def test_site_plugin_options_are_one_note_per_plugin() -> None:
    notes = job_notes(job("#SBATCH --image=a --module=gpu\n#SBATCH --container-image=b\n"))
    assert notes == [
        "--image, --module: options of NERSC's Shifter plugin, a site plugin to sbatch; that "
        "site's sbatch checks them, not tuneadvisor",
        "--container-image: an option of the pyxis container plugin (NVIDIA enroot), a site "
        "plugin to sbatch; that site's sbatch checks them, not tuneadvisor",
    ]
    assert job_notes(job("#SBATCH -c 4\npython x.py\n")) == []


def test_a_script_bash_cannot_parse_is_a_note_with_the_line() -> None:
    [note] = job_notes(job('L="accelerate launch \\\n  --x 1\nS="$D/x.py"\necho ""\n'))
    assert note.startswith("bash cannot run this script: bash -n would refuse it (line 5:")
    assert "matching `\"'" in note and "from line 2 on" in note


def test_several_launches_are_named_with_the_one_read_as_training() -> None:
    text = job("srun python prepare_data.py --dest d\nsrun python main.py\n")
    launches = find_launches(text)
    [note] = job_notes(text, launches, choose_launch(find_launches(text)))
    assert note == (
        "the job runs 2 Python programs: prepare_data.py (line 2), main.py (line 3); main.py "
        "(line 3) is read as the training, the others as side steps: give --script to read "
        "another"
    )
    one = job("python main.py\n")
    assert job_notes(one, find_launches(one), choose_launch(find_launches(one))) == []
