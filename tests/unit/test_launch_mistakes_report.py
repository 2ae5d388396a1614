"""Issue 20's launch mistakes end to end: ``tuneadvisor report`` on real job scripts and on
small ones written here, the findings they give and what ``apply`` would change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tuneadvisor.cli import main
from tuneadvisor.workspace.read_files import read_job

JOBS = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "jobscripts"
DDP_SCRIPT = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("nccl")
local_rank = int(os.environ["SLURM_LOCALID"])
torch.cuda.set_device(local_rank)
model = DDP(torch.nn.Linear(4, 4).cuda(), device_ids=[local_rank])
"""


def _report(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code = main(["report", *args, "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    report: dict[str, Any] = json.loads(out)
    return report


def _findings(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {finding["id"]: finding for finding in report["findings"]}


def _job(tmp_path: Path, *lines: str, train: str | None = None) -> str:
    path = tmp_path / "job.sbatch"
    path.write_text("#!/bin/bash\n" + "".join(line + "\n" for line in lines))
    if train is not None:
        (tmp_path / "train.py").write_text(train)
    return str(path)


def test_real_background_launches_without_wait(capsys: pytest.CaptureFixture[str]) -> None:
    report = _report(capsys, "--job", str(JOBS / "allenzyd1997-weight_nowcasting-train_batch.sh"))
    finding = _findings(report)["launch-in-background"]
    assert finding["severity"] == "error"
    assert finding["evidence"]["launches nothing waits for"] == 2
    where = finding["evidence"]["started with &"]
    assert where.startswith("line 12: CUDA_VISIBLE_DEVICES=2,5,6,7 nohup python -m torch")
    assert "; line 15: " in where


def test_real_background_launches_then_wait(capsys: pytest.CaptureFixture[str]) -> None:
    path = JOBS / "teamofprofguo-sseg-experiments-prl_basenet-prltrain.sh"
    assert "launch-in-background" not in _findings(_report(capsys, "--job", str(path)))


def test_real_eight_tasks_on_four_gpus_without_the_script(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = _report(capsys, "--job", str(JOBS / "nrt-hackathon-2022-gore-submit.sh"))
    findings = _findings(report)
    finding = findings["tasks-share-gpus"]
    assert finding["evidence"] == {"tasks per node srun starts": 8, "GPUs per node": 4}
    assert "whether or not the training script was read" in finding["rationale"]
    # the script is not here: whether 8 copies are meant is not known, so nothing is changed
    assert finding["suggest"]["sbatch"] == {} and report["advice"]["job_diff"] == ""
    assert "tasks-gpus-mismatch" not in findings
    assert any("lpdgen/train.py, which is not here" in n for n in report["advice"]["not_read"])


@pytest.mark.parametrize(
    "name",
    [
        "mila-iqia-mila-docs-docs-examples-good_practices-many_tasks_per_gpu-job.sh",  # asked
        "stas00-ml-engineering-orchestration-slurm-launchers-lightning-launcher.sh",  # 8 on 8
        "cscfi-pytorch-ddp-examples-run-ddp-gpu4.sh",
    ],
)
def test_real_tasks_that_may_share_gpus(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert "tasks-share-gpus" not in _findings(_report(capsys, "--job", str(JOBS / name)))


def test_a_ddp_script_gets_one_task_per_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _job(
        tmp_path,
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks-per-node=8",
        "#SBATCH --gres=gpu:4",
        "srun python train.py",
        train=DDP_SCRIPT,
    )
    report = _report(capsys, "--job", job)
    findings = _findings(report)
    assert report["advice"]["facts"]["script.ddp"] is True
    assert findings["tasks-share-gpus"]["suggest"]["sbatch"] == {"ntasks-per-node": 4, "ntasks": 4}
    assert findings["tasks-share-gpus"]["evidence"]["DDP in the training script"] is True
    assert "tasks-gpus-mismatch" not in findings  # one finding, not two
    assert "+#SBATCH --ntasks-per-node=4" in report["advice"]["job_diff"]


@pytest.mark.parametrize("nodes", [1, 2])
def test_applied_the_tasks_fit_the_gpus_and_sbatch_takes_them(
    nodes: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--ntasks moves with --ntasks-per-node (sbatch refuses `--nodes=1 --ntasks=8
    --ntasks-per-node=4`), and applying the tuned script again changes nothing."""
    job = _job(
        tmp_path,
        f"#SBATCH --nodes={nodes}",
        f"#SBATCH --ntasks={8 * nodes}",
        "#SBATCH --ntasks-per-node=8",
        "#SBATCH --gres=gpu:4",
        "srun python train.py",
        train=DDP_SCRIPT,
    )
    tuned = tmp_path / "tuned.sbatch"
    assert main(["apply", "--job", job, "-o", str(tuned)]) == 0
    written = read_job(str(tuned))
    request = written.request()
    assert not written.refused
    assert (request.node_count, request.tasks_per_node, request.tasks_total) == (
        nodes,
        4,
        4 * nodes,
    )
    again = tmp_path / "again.sbatch"
    assert main(["apply", "--job", str(tuned), "-o", str(again)]) == 0
    assert again.read_bytes() == tuned.read_bytes()
    capsys.readouterr()


def test_srun_setting_its_own_tasks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = _job(
        tmp_path,
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks-per-node=4",
        "#SBATCH --gres=gpu:4",
        "srun --ntasks-per-node=8 --overcommit python train.py",
        train=DDP_SCRIPT,
    )
    report = _report(capsys, "--job", job)
    finding = _findings(report)["tasks-share-gpus"]
    assert finding["evidence"]["tasks per node srun starts"] == 8
    assert finding["suggest"]["sbatch"] == {}  # the #SBATCH line is not what sets them


def test_fewer_tasks_than_gpus_is_still_tasks_gpus_mismatch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _job(
        tmp_path,
        "#SBATCH --ntasks-per-node=4",
        "#SBATCH --gres=gpu:4",
        "srun -n 1 python train.py",
        train=DDP_SCRIPT,
    )
    findings = _findings(_report(capsys, "--job", job))
    assert findings["tasks-gpus-mismatch"]["evidence"]["tasks per node"] == 1
    assert findings["tasks-gpus-mismatch"]["suggest"]["sbatch"] == {}
    assert "tasks-share-gpus" not in findings


@pytest.mark.parametrize(("array", "fires"), [("0-15", True), ("0-2", False), ("1-3", True)])
def test_an_array_past_its_list(
    array: str, fires: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _job(
        tmp_path,
        f"#SBATCH --array={array}",
        "configs=(small.yaml medium.yaml large.yaml)",
        'python train.py --config "${configs[$SLURM_ARRAY_TASK_ID]}"',
    )
    findings = _findings(_report(capsys, "--job", job))
    assert ("array-index-out-of-range" in findings) is fires
    if fires:
        evidence = findings["array-index-out-of-range"]["evidence"]
        assert evidence["list"] == "configs (line 3, 3 elements)"
        assert evidence["largest array task id"] == int(array.split("-")[1])
