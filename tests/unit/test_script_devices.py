"""GPUs asked that the program never uses (issue 20, point 10): one device in the source and
nothing that drives more, read over the script and its local modules."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tuneadvisor.cli import main
from tuneadvisor.trainscript.parsed import parse_script
from tuneadvisor.trainscript.scans.devices import device_use

ONE_DEVICE = textwrap.dedent(
    """\
    import torch
    from model import Net
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    for step in range(10):
        model(torch.ones(3).to(device))
    """
)
MODEL = "import torch\nclass Net(torch.nn.Module):\n    pass\n"


def _use(*sources: str) -> tuple[bool, int | None, str | None]:
    use = device_use([parse_script(textwrap.dedent(s)) for s in sources])
    return use.single, use.line, use.why_not


def test_one_device_and_nothing_more_is_one_gpu() -> None:
    assert _use(ONE_DEVICE, MODEL) == (True, 3, None)
    assert _use("import torch\nm = torch.nn.Linear(2, 2).cuda()\n")[:2] == (True, 2)


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ("model = torch.nn.DataParallel(model)", "DataParallel"),
        ("from torch.nn.parallel import DistributedDataParallel as DDP", "DistributedDataParallel"),
        ("import torch.distributed as dist", "torch.distributed"),
        ("n = torch.cuda.device_count()", "device_count"),
        ("other = torch.device('cuda:1')", "cuda:1"),
        ("import lightning as L", "lightning"),
        ("from transformers import Trainer", "transformers"),
        ("os.environ['CUDA_VISIBLE_DEVICES'] = '0,1'", "CUDA_VISIBLE_DEVICES"),
        ("d = f'cuda:{rank}'", "computed index"),
    ],
)
def test_anything_that_may_drive_more_gpus_says_nothing(extra: str, why: str) -> None:
    single, _, why_not = _use(ONE_DEVICE + extra + "\n", MODEL)
    assert not single
    assert why_not is not None and why in why_not


def test_ddp_in_a_local_module_counts_for_the_program() -> None:
    wrapped = MODEL + "from torch.nn.parallel import DistributedDataParallel\n"
    assert not _use(ONE_DEVICE, wrapped)[0]


def test_no_cuda_in_the_source_says_nothing() -> None:
    assert _use("import torch\nx = torch.ones(3)\n") == (False, None, None)


def _findings(
    tmp_path: Path, header: str, line: str, capsys: pytest.CaptureFixture[str]
) -> set[str]:
    (tmp_path / "train.py").write_text(ONE_DEVICE)
    (tmp_path / "model.py").write_text(MODEL)
    job = tmp_path / "job.sh"
    job.write_text(f"#!/bin/bash\n{header}#SBATCH --cpus-per-task=4\n{line}\n")
    assert main(["report", "--job", str(job), "--format", "json"]) == 0
    return {f["id"] for f in json.loads(capsys.readouterr().out)["findings"]}


@pytest.mark.parametrize("gpus", ["#SBATCH --gres=gpu:4\n", "#SBATCH --gpus=2\n"])
def test_report_says_the_gpus_are_unused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gpus: str
) -> None:
    assert "unused-gpus" in _findings(tmp_path, gpus, "python train.py", capsys)


@pytest.mark.parametrize(
    ("header", "line"),
    [
        ("#SBATCH --gres=gpu:1\n", "python train.py"),
        ("#SBATCH --gres=gpu:4\n", "torchrun --standalone --nproc-per-node=4 train.py"),
        ("#SBATCH --gres=gpu:4\n#SBATCH --ntasks-per-node=4\n", "srun python train.py"),
    ],
)
def test_report_is_quiet_where_every_gpu_has_a_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], header: str, line: str
) -> None:
    assert "unused-gpus" not in _findings(tmp_path, header, line, capsys)


@pytest.mark.parametrize(
    "line",
    [
        "CUDA_VISIBLE_DEVICES=0 python train.py &\nCUDA_VISIBLE_DEVICES=1 python train.py &\nwait",
        "export CUDA_VISIBLE_DEVICES=2\npython train.py",
    ],
)
def test_programs_that_share_the_gpus_out_say_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str
) -> None:
    assert "unused-gpus" not in _findings(tmp_path, "#SBATCH --gres=gpu:2\n", line, capsys)
