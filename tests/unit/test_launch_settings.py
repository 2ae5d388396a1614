"""Settings for a relaunch: flags, a report's advice, the job script written from them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from tests.report_schema import minimal_report
from tuneadvisor.commands.relaunch_options import add_settings_arguments, settings_overrides
from tuneadvisor.errors import InputError
from tuneadvisor.relaunch.local_allocation import clean_environ, emulate
from tuneadvisor.relaunch.requests import SettingsOverrides, settings_with
from tuneadvisor.relaunch.saved_report import parse_report
from tuneadvisor.relaunch.settings import Settings, render_job_script, settings_from_report
from tuneadvisor.slurm.jobscript.model import JobScript

REPO = Path(__file__).resolve().parents[2]
GOLDEN = json.loads((REPO / "tests" / "golden" / "example-report.json").read_text())


def _saved(report: object, source: str = "r.json") -> Settings:
    """The settings of a saved report, read as `run --from` reads it."""
    return settings_from_report(Settings(), parse_report(report, source))


def _flags(*argv: str) -> SettingsOverrides:
    parser = argparse.ArgumentParser()
    add_settings_arguments(parser)
    return settings_overrides(parser.parse_args(argv))


def test_knobs_become_the_training_scripts_flags() -> None:
    settings = Settings(
        knobs={"num_workers": 3, "pin_memory": False, "persistent_workers": True, "amp": True,
               "batch_size": 128, "input_cost": "high", "prefetch_factor": None},
        extra_args=("--seed", "7"),
    )  # fmt: skip
    assert settings.script_args() == [
        "--num-workers", "3", "--batch-size", "128", "--no-pin-memory", "--persistent-workers",
        "--amp", "--input-cost", "high", "--seed", "7",
    ]  # fmt: skip
    assert Settings(knobs={"amp": False}).script_args() == []


def test_the_tutorial_report_advises_the_models_cores_and_workers() -> None:
    settings = _saved(GOLDEN, "example-report.json")
    # the job had 1 core, 1 worker and a GPU; the step-time model sizes 7 workers (80 % on
    # the loader) and a core each plus one for the main process
    assert settings.cpus_per_task == 8 and settings.gpus == 1 and settings.mem == "8G"
    assert settings.knobs["num_workers"] == 7
    assert settings.because["num_workers"] == ("dataloader-bound",)
    assert settings.because["sbatch.cpus-per-task"] == ("dataloader-bound",)


def test_flags_win_over_the_advice_and_lose_its_reason() -> None:
    flags = _flags("--num-workers", "1", "--cpus-per-task", "2", "--amp")
    advised = _saved(GOLDEN, "example-report.json")
    settings = settings_with(flags, advised)
    assert (settings.cpus_per_task, settings.knobs["num_workers"]) == (2, 1)
    assert settings.knobs["amp"] is True
    assert "num_workers" not in settings.because


def test_the_advice_of_the_inputs_gives_what_the_saved_report_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`run NAME INPUTS` takes the advice itself; `run --from REPORT.json` reads it back from
    the report: the same settings either way (the example's report is the golden file)."""
    from tuneadvisor.relaunch.requests import settings_from_workspace
    from tuneadvisor.workspace.inputs import Inputs
    from tuneadvisor.workspace.load import load_workspace

    monkeypatch.chdir(REPO)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(REPO / "tests" / "no-such-config"))
    monkeypatch.delenv("TUNEADVISOR_RULES", raising=False)
    monkeypatch.delenv("TUNEADVISOR_SITE", raising=False)
    inputs = Inputs(profiles=("examples/mnist/24752610.lprof",), job="examples/mnist/mnist.sbatch")
    direct = settings_from_workspace(Settings(), load_workspace(inputs), "the inputs")
    assert direct == _saved(GOLDEN, "example-report.json")
    assert direct.cpus_per_task == 8 and direct.knobs["num_workers"] == 7


def test_advice_that_is_no_knob_becomes_a_note() -> None:
    report = minimal_report(plan={"script": {
        "sampler": {"value": "DistributedSampler(dataset)",
                    "because": ["ddp-missing-distributed-sampler"]},
        "pin_memory": {"value": "True", "because": ["pin-memory-off"]},
    }})  # fmt: skip
    settings = _saved(report)
    assert settings.knobs == {"pin_memory": True}
    assert any("sampler" in n and "not a setting" in n for n in settings.notes)


def test_a_file_that_is_no_report_is_refused() -> None:
    with pytest.raises(InputError, match="not a report"):
        _saved({"findings": []}, "x.json")


def test_job_script_carries_the_settings_and_parses_back(tmp_path: Path) -> None:
    settings = Settings(
        ntasks=2, cpus_per_task=4, gpus=2, mem="16G", time="00:30:00", knobs={"num_workers": 3},
        because={"num_workers": ("dataloader-bound",)},
    )  # fmt: skip
    text = render_job_script(
        settings, name="mnist_ddp", launch=["srun", "python", "train.py", "--num-workers", "3"],
        workdir=tmp_path, output="slurm-%j.out",
    )  # fmt: skip
    directives = JobScript.parse(text).directives()
    assert directives["ntasks"] == "2" and directives["cpus-per-task"] == "4"
    assert directives["gres"] == "gpu:2" and directives["mem"] == "16G"
    assert "srun python train.py --num-workers 3" in text
    assert "export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}" in text


def test_nodes_spread_the_tasks_evenly_in_the_job_script(tmp_path: Path) -> None:
    settings = settings_with(_flags("--nodes", "2", "--ntasks-per-node", "3"))
    assert (settings.nodes, settings.ntasks, settings.tasks_per_node) == (2, 6, 3)
    text = render_job_script(settings, name="ddp", launch=["srun", "python", "t.py"],
                             workdir=tmp_path, output="o")  # fmt: skip
    directives = JobScript.parse(text).directives()
    assert (directives["nodes"], directives["ntasks-per-node"]) == ("2", "3")
    assert "ntasks" not in directives  # --ntasks could pile the tasks on the first node
    assert "2 nodes x 3 tasks" in settings.describe()
    # read back from the job script it wrote, and from a record
    again = _saved(minimal_report(directives))
    assert (again.nodes, again.ntasks) == (2, 6)
    assert Settings.from_json(settings.to_json()) == settings
    one = render_job_script(Settings(ntasks=2), name="x", launch=["srun", "python", "t.py"],
                            workdir=tmp_path, output="o")  # fmt: skip
    assert "#SBATCH --nodes=1\n#SBATCH --ntasks=2\n" in one


def test_nodes_alone_keep_the_tasks_of_each_node() -> None:
    assert settings_with(_flags("--nodes", "3")).ntasks == 3  # one task a node
    assert settings_with(_flags("--ntasks", "6", "--nodes", "3")).tasks_per_node == 2
    advised = Settings(ntasks=2)
    assert settings_with(_flags("--nodes", "3"), advised).ntasks == 6
    # --nodes=2-4: the fewest the job is sure to get
    ranged = _saved(minimal_report({"nodes": "2-4", "ntasks-per-node": "2"}))
    assert (ranged.nodes, ranged.ntasks) == (2, 4)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--ntasks", "3", "--nodes", "2"), "do not share out evenly over 2 nodes"),
        (("--ntasks", "4", "--nodes", "2", "--ntasks-per-node", "3"), "is not --nodes 2 x"),
        (("--nodes", "0"), "--nodes must be at least 1"),
    ],
)
def test_a_shape_that_does_not_fit_is_one_clear_error(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(InputError, match=message):
        settings_with(_flags(*argv))


def test_emulated_allocation_gives_each_task_its_own_cores() -> None:
    settings = Settings(ntasks=2, cpus_per_task=1)
    alloc = emulate(settings, name="mnist_ddp", submit_dir="/tmp", cores=[0, 1])
    assert alloc.cores == ((0,), (1,))
    assert alloc.env["SLURM_NTASKS"] == "2" and alloc.env["SLURM_CPUS_PER_TASK"] == "1"
    assert alloc.env["SLURM_JOB_ID"] == alloc.env["SLURM_JOBID"]
    assert alloc.task_env(1)["SLURM_PROCID"] == "1" and not alloc.notes


def test_asking_for_more_cores_than_there_are_shares_them_with_a_note() -> None:
    alloc = emulate(Settings(cpus_per_task=4), name="x", submit_dir="/tmp", cores=[0, 1])
    assert alloc.cores == ((0, 1),)
    assert "asked for 4 cores" in alloc.notes[0]


def test_the_callers_own_job_variables_do_not_leak_into_a_run() -> None:
    env = clean_environ({"PATH": "/bin", "SLURM_JOB_ID": "9", "RANK": "3", "MASTER_PORT": "1"})
    assert env == {"PATH": "/bin"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("mnist_ddp", "--nodes", "2"), "a run here is on this one machine; add --submit"),
        (("mnist_single", "--nodes", "2", "--submit"), "mnist_single is one process"),
        (("mnist_torchrun", "--nodes", "2", "--submit"), "slurm/mnist_torchrun.sbatch"),
    ],
)
def test_several_nodes_need_sbatch_and_srun_ranks(
    argv: tuple[str, ...], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tuneadvisor.cli import main

    assert main(["run", *argv, "--runs", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not (tmp_path / "runs").exists()  # refused before anything is written
