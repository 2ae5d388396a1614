"""Problems real job scripts and training scripts have, named (issue 12, items 9-15).

Inputs are the real job scripts and training scripts of tests/fixtures/realworld/jobscripts
where one shows the case, else small scripts written here; every expectation is read from the
input by the test (line numbers by their text, numbers from the directives and seff's lines).
"""

from __future__ import annotations

import ast
import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, TUTORIAL_SEFF, line_of
from tests.unit.test_advice_acceptance import apply_unified_diff, findings
from tuneadvisor.cli import main
from tuneadvisor.slurm.jobscript.facts import job_facts
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.launch_line.choose import choose_launch
from tuneadvisor.slurm.launch_line.search import find_launches
from tuneadvisor.trainscript.local_imports import local_module_paths
from tuneadvisor.trainscript.parsed import parse_script
from tuneadvisor.trainscript.scan import scan_script
from tuneadvisor.workspace.script_settings import Target, write_settings

FIXTURES = REPO / "tests" / "fixtures"
REAL = FIXTURES / "realworld" / "jobscripts"
HELPER = FIXTURES / "helper_loader"
ACCOUNTING = FIXTURES / "realworld" / "accounting"
DATA_PARALLEL_TEXT = (FIXTURES / "scan_scripts" / "data_parallel.py").read_text()


def report(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code = main(["report", *args, "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def real_args(stem: str) -> list[str]:
    """--job and --script of a real job script kept with its training script."""
    return ["--job", str(REAL / f"{stem}.sh"), "--script", str(REAL / f"{stem}.py")]


def write(folder: Path, **files: str) -> Path:
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def apply(capsys: pytest.CaptureFixture[str], out: Path, *args: str) -> str:
    code = main(["apply", *args, "-o", str(out)])
    stdout, err = capsys.readouterr()
    assert code == 0, err
    return stdout


# --------------------------------------------------------------------------- 9 DataParallel

TCR = "anttitapsa-tcr_transformer-code-run_train"


def test_data_parallel_over_four_gpus_is_named_with_the_ddp_launch(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """TCR_transformer: `--gres=gpu:a100:4`, `srun python3 train.py`, nn.DataParallel."""
    text = (REAL / f"{TCR}.py").read_text()
    doc = report(capsys, *real_args(TCR))
    found = findings(doc)["data-parallel"]
    assert found["evidence"]["DataParallel line"] == line_of(text, "nn.DataParallel(model)")
    assert found["evidence"]["GPUs per node"] == 4  # gpu:a100:4
    for needle in (
        "srun python train.py",
        "torchrun --standalone --nproc-per-node",
        "DistributedSampler",
    ):
        assert needle in found["rationale"].replace("\n", " ")
    # No job-script change is written: srun with 4 tasks of a DataParallel script would
    # start 4 copies each driving all GPUs.
    assert found["suggest"] == {"sbatch": {}, "script": {}, "env": {}}


def test_data_parallel_with_two_tasks_and_one_plain_python(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The course layout: --ntasks=2 for 2 GPUs, one `python` process under DataParallel."""
    script = (FIXTURES / "scan_scripts" / "data_parallel.py").read_text()
    job = "#!/bin/bash\n#SBATCH --ntasks=2\n#SBATCH -c 4\n#SBATCH --gres=gpu:2\npython train.py\n"
    write(tmp_path, **{"job.sbatch": job, "train.py": script})
    doc = report(capsys, "--job", str(tmp_path / "job.sbatch"))
    found = findings(doc)
    assert {"data-parallel", "unused-tasks", "no-loader-workers"} <= set(found)
    # Not DDP: one task with the cores of both, and workers for them.
    assert found["unused-tasks"]["suggest"]["sbatch"] == {"ntasks": 1, "cpus-per-task": 8}
    assert doc["advice"]["plan"]["sbatch"]["cpus-per-task"]["value"] == 8
    assert doc["advice"]["plan"]["script"]["num_workers"]["value"] == 7


def test_a_single_gpu_or_ddp_script_is_not_called_data_parallel() -> None:
    single = scan_script((FIXTURES / "scan_scripts" / "ddp_slurm.py").read_text()).facts()
    assert single["script.data_parallel"] is False
    assert "script.data_parallel.line" not in single


# --------------------------------------------------------------------------- 10 no workers


def test_a_dataloader_without_num_workers_on_many_cores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = (FIXTURES / "scan_scripts" / "data_parallel.py").read_text()
    job = "#!/bin/bash\n#SBATCH --cpus-per-task=6\n#SBATCH --gres=gpu:1\npython train.py\n"
    write(tmp_path, **{"job.sbatch": job, "train.py": script})
    doc = report(capsys, "--job", str(tmp_path / "job.sbatch"))
    found = findings(doc)["no-loader-workers"]
    assert found["evidence"]["where it comes from"] == "default"
    assert found["suggest"]["script"] == {"num_workers": 5}  # 6 cores, one for the main process
    patched = apply_unified_diff(script, doc["advice"]["script_patch"])
    loader_line = next(ln for ln in patched.splitlines() if "DataLoader(train_set" in ln)
    assert 'num_workers=max(1, int(os.environ.get("SLURM_CPUS_PER_TASK", "1")) - 1)' in loader_line
    ast.parse(patched)
    assert scan_script(patched).facts()["script.num_workers.source"] == "slurm_env"


def test_a_literal_zero_is_the_same_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = (FIXTURES / "scan_scripts" / "data_parallel.py").read_text()
    script = script.replace("shuffle=True)", "shuffle=True, num_workers=0)")
    job = "#!/bin/bash\n#SBATCH --cpus-per-task=4\n#SBATCH --gres=gpu:1\npython train.py\n"
    write(tmp_path, **{"job.sbatch": job, "train.py": script})
    doc = report(capsys, "--job", str(tmp_path / "job.sbatch"))
    assert findings(doc)["no-loader-workers"]["suggest"]["script"] == {"num_workers": 3}
    removed = (
        "-    train_loader = DataLoader(train_set, batch_size=256, shuffle=True, num_workers=0)"
    )
    assert removed in doc["advice"]["script_patch"]


def test_one_core_leaves_no_core_for_a_worker(capsys: pytest.CaptureFixture[str]) -> None:
    """TCR_transformer asks for no --cpus-per-task: one core, nothing to name."""
    assert "no-loader-workers" not in findings(report(capsys, *real_args(TCR)))


def test_a_dataloader_built_in_a_helper_module_is_followed_and_patched_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    shutil.copytree(HELPER, project)
    helper_text = (project / "dataset_utils.py").read_text()
    doc = report(capsys, "--job", str(project / "job.sbatch"))
    facts = doc["advice"]["facts"]
    assert facts["script.dataloader.file"] == "dataset_utils.py"
    assert facts["script.dataloader.line"] == line_of(helper_text, "train_loader = DataLoader(")
    assert facts["script.num_workers.source"] == "default"
    found = findings(doc)["no-loader-workers"]
    cores = int(re.search(r"--cpus-per-task=(\d+)", (project / "job.sbatch").read_text())[1])  # type: ignore[index]
    assert found["suggest"]["script"] == {"num_workers": cores - 1}
    assert found["evidence"]["built in"] == "dataset_utils.py"
    patch = doc["advice"]["script_patch"]
    assert patch.startswith("--- a/dataset_utils.py\n+++ b/dataset_utils.py\n")
    assert any("dataset_utils.py: the patch changes it" in n for n in doc["advice"]["notes"])
    # apply writes it; patched, the helper follows the cores and the rule is quiet.
    apply(capsys, project / "tuned.sbatch", "--job", str(project / "job.sbatch"))
    written = next(project.glob("*.tuneadvisor.patch")).read_text()
    assert written == patch
    patched = apply_unified_diff(helper_text, written)
    (project / "dataset_utils.py").write_text(patched)
    assert patched.count("num_workers=") == 1  # the test loader is left alone
    again = report(capsys, "--job", str(project / "job.sbatch"))
    assert again["advice"]["facts"]["script.num_workers.source"] == "slurm_env"
    assert "no-loader-workers" not in findings(again)
    assert again["advice"]["script_patch"] == ""


def test_no_dataloader_anywhere_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    """poleval-2022-abbr trains with Hugging Face's Trainer: no DataLoader in the script."""
    stem = "carbon225-poleval-2022-abbr-gpu-job"
    doc = report(capsys, *real_args(stem))
    (note,) = [n for n in doc["advice"]["notes"] if "no DataLoader" in n]
    assert note.startswith(f"{stem}.py: no DataLoader is built in it")
    assert "were not checked" in note


def test_local_modules_without_a_dataloader_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(
        tmp_path,
        **{
            "job.sbatch": "#!/bin/bash\n#SBATCH -c 4\npython train.py\n",
            "train.py": "import torch\nfrom model import Net\nfrom utils.io import save\nNet()\n",
            "model.py": "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n",
        },
    )
    doc = report(capsys, "--job", str(tmp_path / "job.sbatch"))
    (note,) = [n for n in doc["advice"]["notes"] if "no DataLoader" in n]
    assert "nor in the modules it imports from beside it (model.py)" in note


def test_local_module_paths_in_import_order() -> None:
    parsed = parse_script(
        "import os\nfrom data.cifar import load\nfrom . import helpers\nfrom ..up import x\n"
        "def f():\n    import late_mod\n"
    )
    assert [p.as_posix() for p in local_module_paths(parsed)] == [
        "os.py", "os/__init__.py", "data/cifar/load.py", "data/cifar/load/__init__.py",
        "data/cifar.py", "data/cifar/__init__.py", "helpers.py", "helpers/__init__.py",
        "late_mod.py", "late_mod/__init__.py",
    ]  # fmt: skip


# --------------------------------------------------------------------------- 11 ranks x workers


def test_torchrun_ranks_times_workers_against_the_cores_of_a_real_job(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """LUMI's guide: torchrun --nproc_per_node=8 in one task of 56 cores, num_workers=7 each."""
    stem = "lumi-supercomputer-lumi-ai-guide-05-multi-gpu-and-node-run_ddp_torchrun_4"
    job_text = (REAL / f"{stem}.sh").read_text()
    cores = int(re.search(r"--cpus-per-task=(\d+)", job_text)[1])  # type: ignore[index]
    ranks = int(re.search(r"--nproc_per_node=(\d+)", job_text)[1])  # type: ignore[index]
    workers = int(re.search(r"num_workers=(\d+)", (REAL / f"{stem}.py").read_text())[1])  # type: ignore[index]
    assert ranks * (workers + 1) > cores  # 64 processes on 56 cores
    doc = report(capsys, *real_args(stem))
    assert doc["advice"]["facts"]["job.ranks_per_task"] == ranks
    found = findings(doc)["too-many-workers"]
    assert found["evidence"]["processes"] == ranks * (workers + 1)
    assert found["suggest"]["script"] == {"num_workers": cores // ranks - 1}
    assert found["suggest"]["sbatch"] == {}  # 7 cores per rank leave room for 6 workers
    # The patch shares the task's cores between torchrun's local ranks.
    assert (
        'SLURM_CPUS_PER_TASK", "1")) // int(os.environ.get("LOCAL_WORLD_SIZE", "1")) - 1'
        in (doc["advice"]["script_patch"])
    )


def test_four_ranks_on_four_cores_get_more_cores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case: 20 processes on 4 cores; the fix fits: 2 cores a rank, 1 worker."""
    script = (FIXTURES / "scan_scripts" / "data_parallel.py").read_text()
    script = script.replace("shuffle=True)", "shuffle=True, num_workers=4)")
    job = (
        "#!/bin/bash\n#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=4\n#SBATCH --gres=gpu:4\n"
        "torchrun --standalone --nproc-per-node=4 train.py\n"
    )
    write(tmp_path, **{"job.sbatch": job, "train.py": script})
    doc = report(capsys, "--job", str(tmp_path / "job.sbatch"))
    assert findings(doc)["too-many-workers"]["evidence"]["processes"] == 20
    plan = doc["advice"]["plan"]
    cores, workers = (
        plan["sbatch"]["cpus-per-task"]["value"],
        plan["script"]["num_workers"]["value"],
    )
    assert 4 * (workers + 1) <= cores
    assert (cores, workers) == (8, 1)


@pytest.mark.parametrize(
    ("directives", "launch", "ranks", "task_launcher"),
    [
        ("--gres=gpu:4", "python train.py", 1, False),
        ("--gres=gpu:4", "srun python train.py", 1, True),
        ("--gres=gpu:4", "torchrun --nproc-per-node=4 train.py", 4, False),
        ("--gres=gpu:4", "srun torchrun --nproc_per_node 2 train.py", 2, True),
        ("--gres=gpu:8", "torchrun --nproc-per-node=gpu train.py", 8, False),
        ("--gres=gpu:8", "torchrun --standalone train.py", 1, False),
        (
            "--gres=gpu:8",
            "python -m torch.distributed.launch --nproc_per_node=8 --use_env t.py",
            8,
            False,
        ),
        ("--gres=gpu:4", "deepspeed train.py", 4, False),
        ("--gres=gpu:4", "accelerate launch --num_processes 8 --num_machines 2 train.py", 4, False),
        ("--gres=gpu:4", "torchrun --nproc-per-node=$NGPUS train.py", None, False),
        ("--gres=gpu:4", "accelerate launch train.py", None, False),
    ],
)
def test_ranks_per_task_from_the_launch_line(
    directives: str, launch: str, ranks: int | None, task_launcher: bool
) -> None:
    job = JobScript.parse(f"#!/bin/bash\n#SBATCH {directives}\n{launch}\n")
    facts = job_facts(job, choose_launch(find_launches(job)))
    assert facts.get("job.ranks_per_task") == ranks
    assert facts["job.task_launcher"] is task_launcher


# --------------------------------------------------------------------------- 12 unused tasks

BELUGA = "rkenny-4960a-suger-submit.beluga"


def test_tasks_no_process_uses_become_one_task_with_their_cores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """4960A: --ntasks-per-node=4 --cpus-per-task=1 --mem-per-cpu=8G and `python train.py`."""
    job_text = (REAL / f"{BELUGA}.sh").read_text()
    tasks = int(re.search(r"--ntasks-per-node=(\d+)", job_text)[1])  # type: ignore[index]
    cores = int(re.search(r"--cpus-per-task=(\d+)", job_text)[1])  # type: ignore[index]
    doc = report(capsys, *real_args(BELUGA))
    found = findings(doc)["unused-tasks"]
    assert found["evidence"]["tasks"] == tasks
    assert found["suggest"]["sbatch"] == {
        "ntasks": 1,
        "ntasks-per-node": 1,
        "cpus-per-task": tasks * cores,
    }
    out = tmp_path / "tuned.sh"
    apply(capsys, out, *real_args(BELUGA))
    tuned = JobScript.parse(out.read_text()).request()
    assert (tuned.tasks_total, tuned.task_cpus) == (1, tasks * cores)
    # --mem-per-cpu stays: the one task's memory is the four tasks' memory.
    before = JobScript.parse(job_text).request()
    assert tuned.node_mem_mib == before.node_mem_mib


def test_a_ddp_script_without_srun_is_told_to_use_srun_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stem = "princetonuniversity-multi_gpu_training-02_pytorch_ddp-job"
    job = (REAL / f"{stem}.sh").read_text().replace("srun python", "python")
    write(tmp_path, **{"job.sbatch": job, "train.py": (REAL / f"{stem}.py").read_text()})
    doc = report(capsys, "--job", str(tmp_path / "job.sbatch"))
    found = findings(doc)["unused-tasks"]
    assert "srun python" in found["rationale"]
    assert found["suggest"] == {"sbatch": {}, "script": {}, "env": {}}
    assert "ntasks" not in doc["advice"]["plan"]["sbatch"]


def test_srun_starts_the_tasks(capsys: pytest.CaptureFixture[str]) -> None:
    stem = "princetonuniversity-multi_gpu_training-02_pytorch_ddp-job"
    assert "unused-tasks" not in findings(report(capsys, *real_args(stem)))


# --------------------------------------------------------------------------- 13 set_epoch


def test_distributed_sampler_without_set_epoch(capsys: pytest.CaptureFixture[str]) -> None:
    stem = "princetonuniversity-multi_gpu_training-02_pytorch_ddp-job"
    text = (REAL / f"{stem}.py").read_text()
    assert "set_epoch" not in text
    found = findings(report(capsys, *real_args(stem)))["sampler-without-set-epoch"]
    assert found["evidence"]["DistributedSampler line"] == line_of(text, "DistributedSampler(")


def test_set_epoch_in_the_epoch_loop_is_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    stem = "mila-iqia-mila-docs-docs-examples-distributed-multi_gpu-job"
    assert "train_sampler.set_epoch(epoch)" in (REAL / f"{stem}.py").read_text()
    assert "sampler-without-set-epoch" not in findings(report(capsys, *real_args(stem)))


# --------------------------------------------------------------------------- 14 memory from seff


def test_over_requested_memory_from_seff_alone(capsys: pytest.CaptureFixture[str]) -> None:
    """CSC's 2-node seff: 6.38 % of 371.09 GB; no job script given."""
    path = ACCOUNTING / "csc-seff-puhti-2nodes.seff.txt"
    text = path.read_text()
    units = {"MB": 1.0, "GB": 1024.0}
    used = re.search(r"Memory Utilized: ([\d.]+) ([MG]B)", text)
    nodes = re.search(r"^Nodes: (\d+)", text, re.M)
    assert used and nodes
    peak = float(used[1]) * units[used[2]]
    doc = report(capsys, "--seff", str(path))
    found = findings(doc)["over-requested-memory"]
    per_node_gib = math.ceil(max(peak * 1.2 / int(nodes[1]), 1024) / 1024)
    assert found["suggest"]["sbatch"] == {"mem": f"{per_node_gib}G"}
    assert found["evidence"]["nodes"] == int(nodes[1])


def test_the_job_scripts_request_wins_over_accountings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The tutorial's seff of an 8 GB job: over-requested alone; with a job script that now
    asks for 2 GB (the request to resubmit), 1.2 x the peak is more than half of it."""
    alone = report(capsys, "--seff", str(TUTORIAL_SEFF))
    assert alone["advice"]["facts"]["usage.mem_requested_mib"] == 8192.0
    assert "over-requested-memory" in findings(alone)
    write(tmp_path, **{"job.sbatch": "#!/bin/bash\n#SBATCH --mem=2G\npython t.py\n"})
    doc = report(capsys, "--seff", str(TUTORIAL_SEFF), "--job", str(tmp_path / "job.sbatch"))
    assert doc["advice"]["facts"]["usage.mem_requested_mib"] == 2048.0
    assert "over-requested-memory" not in findings(doc)


# --------------------------------------------------------------------------- 15 kwargs dict


def test_num_workers_in_pytorchs_mnist_kwargs_dict_is_patched(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Princeton's 01_single_gpu: `cuda_kwargs = {'num_workers': 1, ...}`, one busy core."""
    stem = "princetonuniversity-multi_gpu_training-01_single_gpu-job"
    text = (REAL / f"{stem}.py").read_text()
    doc = report(capsys, *real_args(stem), "--seff", str(TUTORIAL_SEFF))
    workers = doc["advice"]["plan"]["script"]["num_workers"]["value"]
    assert workers >= 1
    patched = apply_unified_diff(text, doc["advice"]["script_patch"])
    expr = 'max(1, int(os.environ.get("SLURM_CPUS_PER_TASK", "1")) - 1)'
    assert f"cuda_kwargs = {{'num_workers': {expr}," in patched
    assert "import os\n" in patched
    assert not any("where the training DataLoader is built" in n for n in doc["advice"]["notes"])
    assert scan_script(patched).facts()["script.num_workers.source"] == "slurm_env"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("kw = {'num_workers': 2}\nloader = DataLoader(ds, **kw)\n", "kw = {'num_workers': NEW}"),
        (
            "kw = {}\nkw['num_workers'] = 2\nloader = DataLoader(ds, **kw)\n",
            "kw['num_workers'] = NEW",
        ),
        ("kw = dict(num_workers=2)\nloader = DataLoader(ds, **kw)\n", "kw = dict(num_workers=NEW)"),
        (
            "NUM_WORKERS = 8\nloader = DataLoader(ds, num_workers=NUM_WORKERS)\n",
            "NUM_WORKERS = NEW",
        ),
        (
            "loader = DataLoader(ds, batch_size=4)\n",
            "loader = DataLoader(ds, batch_size=4, num_workers=NEW)",
        ),
        (
            "loader = DataLoader(\n    ds,\n    batch_size=4\n)\n",
            "    batch_size=4,\n    num_workers=NEW,\n)",
        ),
    ],
)
def test_where_a_num_workers_patch_goes(source: str, expected: str) -> None:
    text = "import os\nfrom torch.utils.data import DataLoader\n" + source
    edits = write_settings({"num_workers": 3}, Target(scan_script(text), "t.py", text), None, None)
    patched = apply_unified_diff(text, edits.patch)
    new = 'max(1, int(os.environ.get("SLURM_CPUS_PER_TASK", "1")) - 1)'
    assert expected.replace("NEW", new) in patched
    ast.parse(patched)
    assert edits.notes == ()


def test_one_task_may_have_all_the_node_cores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two tasks fill a 2-core node; as one task (unused-tasks), it may have both cores."""
    write(
        tmp_path,
        **{
            "job.sbatch": "#!/bin/bash\n#SBATCH --ntasks-per-node=2\npython train.py\n",
            "train.py": DATA_PARALLEL_TEXT,
            "site.toml": "[partitions.cpu]\ncores = 2\ndefault = true\n",
        },
    )
    doc = report(
        capsys, "--job", str(tmp_path / "job.sbatch"), "--site", str(tmp_path / "site.toml")
    )
    sbatch = {k: v["value"] for k, v in doc["advice"]["plan"]["sbatch"].items()}
    assert sbatch == {"ntasks": 1, "ntasks-per-node": 1, "cpus-per-task": 2}
