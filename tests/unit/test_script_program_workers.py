"""Worker counts that are not a literal in the launched file (issue 20, point 11): followed
through the program's other modules, module-level values, class attributes and a helper's
parameter defaults; torchrun's process count from CUDA_VISIBLE_DEVICES; and said, with why,
where they cannot be resolved."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO
from tuneadvisor.cli import main
from tuneadvisor.slurm.launch_line.visible_gpus import counts_visible_gpus
from tuneadvisor.trainscript.parsed import parse_script
from tuneadvisor.trainscript.program_facts import elsewhere_for, module_dotted
from tuneadvisor.trainscript.scan import scan_script


def _workers(files: dict[str, str], launch: dict[str, str] | None = None) -> dict[str, object]:
    """The num_workers facts of the first file, read with the others as its program."""
    names = list(files)
    modules = [parse_script(textwrap.dedent(files[n])) for n in names]
    scan = scan_script(modules[0], launch, elsewhere_for(modules, names))
    return {k: v for k, v in scan.facts().items() if k.startswith("script.num_workers")}


LOOP = "for batch in loader:\n    pass\n"


def test_an_option_defined_in_another_module_takes_the_launch_line_s_value() -> None:
    files = {
        "train.py": "from config import get_args\nfrom torch.utils.data import DataLoader\n"
        "args = get_args()\nloader = DataLoader(ds, num_workers=args.workers)\n" + LOOP,
        "config.py": """
            import argparse
            def get_args():
                p = argparse.ArgumentParser()
                p.add_argument("--workers", type=int, default=2)
                return p.parse_args()
        """,
    }
    passed = _workers(files, {"--workers": "8"})
    assert passed["script.num_workers"] == 8
    assert passed["script.num_workers.source"] == "argparse"
    assert passed["script.num_workers.option"] == "--workers"
    assert _workers(files, {})["script.num_workers"] == 2  # the other module's default
    alone = _workers({"train.py": files["train.py"]}, {"--workers": "8"})
    assert "script.num_workers" not in alone  # without config.py it is not known


@pytest.mark.parametrize(
    "read", ["config.NUM_WORKERS", "NUM_WORKERS"], ids=["module.attribute", "from-import"]
)
def test_a_module_level_value_of_a_local_module(read: str) -> None:
    train = (
        "import config\nfrom config import NUM_WORKERS\nfrom torch.utils.data import DataLoader\n"
        f"loader = DataLoader(ds, num_workers={read})\n" + LOOP
    )
    facts = _workers({"train.py": train, "config.py": "NUM_WORKERS = 6\n"})
    assert facts["script.num_workers"] == 6
    assert facts["script.num_workers.expr"] == read
    assert "script.num_workers.line" not in facts  # its line is config.py's, not train.py's


def test_a_package_module_s_value_is_named_by_its_dotted_path() -> None:
    assert module_dotted("project_pkg/data.py") == "project_pkg.data"
    assert module_dotted("project_pkg/__init__.py") == "project_pkg"
    train = (
        "from project_pkg.data import WORKERS\nfrom torch.utils.data import DataLoader\n"
        "loader = DataLoader(ds, num_workers=WORKERS)\n" + LOOP
    )
    facts = _workers({"train.py": train, "project_pkg/data.py": "WORKERS = 3\n"})
    assert facts["script.num_workers"] == 3


def test_a_class_attribute_set_at_module_level() -> None:
    train = """
        from torch.utils.data import DataLoader
        class Config:
            num_workers = 6
        cfg = Config()
        loader = DataLoader(ds, num_workers=cfg.num_workers)
    """
    facts = _workers({"train.py": textwrap.dedent(train) + LOOP})
    assert facts["script.num_workers"] == 6
    assert facts["script.num_workers.line"] == 4
    # Set again somewhere: the class value is not the one read.
    changed = textwrap.dedent(train) + "cfg.num_workers = 2\n" + LOOP
    assert "script.num_workers" not in _workers({"train.py": changed})


HELPER = """
    from torch.utils.data import DataLoader
    def load(batch_size, num_workers=0):
        return DataLoader(ds, batch_size=batch_size, num_workers=num_workers)
"""


@pytest.mark.parametrize(
    ("call", "expected"),
    [("load(batch_size=32)", 0), ("load(32, 4)", 4), ("load(32, num_workers=5)", 5)],
)
def test_a_helper_s_parameter_default_or_what_its_one_call_passes(call: str, expected: int) -> None:
    train = textwrap.dedent(HELPER) + f"loader = {call}\n" + LOOP
    assert _workers({"train.py": train})["script.num_workers"] == expected


def test_a_parameter_passed_differently_by_two_calls_is_not_guessed() -> None:
    train = textwrap.dedent(HELPER) + "loader = load(32)\nval = load(32, num_workers=2)\n" + LOOP
    assert "script.num_workers" not in _workers({"train.py": train})


def _report(folder: Path, job: str, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    (folder / "job.sh").write_text(job)
    assert main(["report", "--job", str(folder / "job.sh"), "--format", "json"]) == 0
    advice: dict[str, object] = json.loads(capsys.readouterr().out)["advice"]
    return advice


JOB = "#!/bin/bash\n#SBATCH --cpus-per-task=4\n#SBATCH --gres=gpu:1\npython train.py\n"


def test_a_helper_module_called_without_the_argument_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The DataLoader in a package module beside the script, its num_workers a parameter
    the script's call leaves out: 0 workers on 4 cores is no-loader-workers."""
    (tmp_path / "project_pkg").mkdir()
    (tmp_path / "project_pkg" / "__init__.py").write_text("")
    (tmp_path / "project_pkg" / "data.py").write_text(
        "from .loaders import load\n\ndef get_data(batch_size):\n    return load(batch_size)\n"
    )
    (tmp_path / "project_pkg" / "loaders.py").write_text(textwrap.dedent(HELPER))
    (tmp_path / "train.py").write_text(
        "from project_pkg.data import get_data\nfrom project_pkg.loaders import load\n"
        "loader = load(batch_size=64)\nfor batch in loader:\n    pass\n"
    )
    advice = _report(tmp_path, JOB, capsys)
    facts = advice["facts"]
    assert isinstance(facts, dict)
    assert facts["script.dataloader.file"] == "project_pkg/loaders.py"
    assert facts["script.num_workers"] == 0
    assert "num_workers" in advice["plan"]["script"]  # type: ignore[index]


def test_an_unresolved_worker_count_is_said_with_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "train.py").write_text(
        "import os\nfrom torch.utils.data import DataLoader\n"
        "loader = DataLoader(ds, num_workers=pick_workers())\nfor b in loader:\n    pass\n"
    )
    not_read = _report(tmp_path, JOB, capsys)["not_read"]
    assert isinstance(not_read, list)
    (note,) = [n for n in not_read if "could not be resolved" in n]
    assert note.startswith("train.py: num_workers of the training DataLoader (line 3:")
    assert "what `pick_workers()` returns" in note


def test_a_script_whose_modules_are_not_beside_it_is_not_said_to_import_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "train.py").write_text("from mylab.data import get_loader\nget_loader()\n")
    notes = _report(tmp_path, JOB, capsys)["notes"]
    assert isinstance(notes, list)
    (note,) = [n for n in notes if "no DataLoader is built" in n]
    assert "none of the modules it imports was found as a file beside it" in note
    assert "imports no module" not in note


@pytest.mark.parametrize(
    "nproc",
    [
        'NGPUS=$(echo "$CUDA_VISIBLE_DEVICES" | tr "," "\\n" | wc -l)\n',
        "export NGPUS=$(python -c 'import os; "
        'print(len(os.environ["CUDA_VISIBLE_DEVICES"].split(",")))\')\n',
    ],
)
def test_torchrun_s_process_count_from_cuda_visible_devices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], nproc: str
) -> None:
    (tmp_path / "train.py").write_text(
        "from torch.utils.data import DataLoader\n"
        "loader = DataLoader(ds, num_workers=4)\nfor b in loader:\n    pass\n"
    )
    job = (
        "#!/bin/bash\n#SBATCH --cpus-per-task=8\n#SBATCH --gres=gpu:4\n"
        + nproc
        + "torchrun --standalone --nproc-per-node=$NGPUS train.py\n"
    )
    advice = _report(tmp_path, job, capsys)
    assert advice["facts"]["job.ranks_per_task"] == 4  # type: ignore[index]
    notes = advice["notes"]
    assert isinstance(notes, list)
    assert any("counted from CUDA_VISIBLE_DEVICES" in n and "assumed" in n for n in notes)


STONE = REPO / "tests" / "fixtures" / "realworld" / "projects" / "jerry-723-stone-cls"


def test_a_real_project_s_helper_default_through_a_package(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Jerry-723/stone-cls: main.py calls common.get_dataloader(...) with four arguments;
    num_workers is the helper's default, 16, too many for 4 cores."""
    job = tmp_path / "job.sh"
    job.write_text("#!/bin/bash\n#SBATCH --cpus-per-task=4\npython main.py --method lrprob\n")
    args = ["report", "--job", str(job), "--script", str(STONE / "main.py"), "--format", "json"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    facts = doc["advice"]["facts"]
    assert facts["script.dataloader.file"] == "common/get_dataloader.py"
    assert facts["script.num_workers"] == 16
    assert "too-many-workers" in {f["id"] for f in doc["findings"]}
    patch = doc["advice"]["script_patch"]
    assert patch.startswith("--- a/common/get_dataloader.py")
    assert "-def get_dataloader(" in patch and "num_workers=16)" in patch


def test_a_count_of_every_gpu_on_the_node_is_not_taken_for_the_job_s(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """nvidia-smi lists what the node shows, not what Slurm gave: no assumption is made."""
    (tmp_path / "train.py").write_text("import torch\n")
    job = (
        "#!/bin/bash\n#SBATCH --gres=gpu:4\nNGPUS=$(nvidia-smi -L | wc -l)\n"
        "torchrun --standalone --nproc-per-node=$NGPUS train.py\n"
    )
    advice = _report(tmp_path, job, capsys)
    assert "job.ranks_per_task" not in advice["facts"]  # type: ignore[operator]


def test_the_variable_s_last_assignment_before_the_launch_decides() -> None:
    lines = [
        "#!/bin/bash",
        "N=$(echo $CUDA_VISIBLE_DEVICES | tr ',' '\\n' | wc -l)",
        "torchrun --nproc-per-node=$N a.py",
        "N=2",
        "torchrun --nproc-per-node=$N b.py",
    ]
    assert counts_visible_gpus("$N", lines, 3)
    assert not counts_visible_gpus("${N}", lines, 5)
    assert not counts_visible_gpus("$N", lines[:1], 2)  # never assigned
    assert counts_visible_gpus("$(echo $CUDA_VISIBLE_DEVICES | wc -w)", [], 1)
