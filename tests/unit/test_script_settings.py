"""Training-script settings go where the scan says they come from: the launch-line option that
sets them, or the literal in the script (as a patch), for every DataLoader setting alike."""

from __future__ import annotations

from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.launch_line.choose import choose_launch
from tuneadvisor.slurm.launch_line.search import find_launches
from tuneadvisor.trainscript.scan import scan_script
from tuneadvisor.workspace.script_settings import ScriptEdits, Target, write_settings

TRAIN = """\
import argparse
from torch.utils.data import DataLoader

parser = argparse.ArgumentParser()
parser.add_argument("--num-workers", type=int, default=1)
parser.add_argument("--prefetch-factor", type=int, default=2)
args = parser.parse_args()

loader = DataLoader(
    dataset,
    batch_size=64,
    shuffle=True,
    drop_last=True,
    num_workers=args.num_workers,
    prefetch_factor=args.prefetch_factor,
    persistent_workers=False,
)
for batch in loader:
    pass
"""

JOB = "#!/bin/bash\n#SBATCH -c 4\npython train.py --num-workers 1\n"


def edits(settings: dict[str, object]) -> ScriptEdits:
    job = JobScript.parse(JOB, "job.sbatch")
    launch = choose_launch(find_launches(job))
    assert launch is not None
    scan = scan_script(TRAIN, launch.options)
    return write_settings(settings, Target(scan, "train.py", TRAIN), job, launch)


def test_an_option_of_the_script_is_set_on_the_launch_line() -> None:
    result = edits({"num_workers": 4, "prefetch_factor": 4})
    assert result.job is not None
    assert result.job.render_text().endswith(
        "python train.py --num-workers 4 --prefetch-factor 4\n"
    )
    assert result.patch == ""
    assert result.notes == ()


def test_a_literal_is_patched_on_its_own_line_of_a_long_dataloader_call() -> None:
    result = edits({"persistent_workers": True})
    assert "-    persistent_workers=False,\n+    persistent_workers=True,\n" in result.patch
    assert result.job is not None and result.job.render_text() == JOB


def test_without_a_scan_each_setting_is_a_note() -> None:
    job = JobScript.parse(JOB, "job.sbatch")
    launch = choose_launch(find_launches(job))
    result = write_settings({"num_workers": 4}, Target(None, None, None), job, launch)
    assert result.notes == ("set num_workers=4 where the training DataLoader is built",)
    assert result.patch == ""
