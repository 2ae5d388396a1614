"""Evidence files in, facts out: what each input adds, which inputs are missing, and bad
files as one line naming them (through `gather` and through the CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO
from tuneadvisor.advisor.evidence import Gathered
from tuneadvisor.advisor.facts import FACTS
from tuneadvisor.cli import main
from tuneadvisor.errors import InputError
from tuneadvisor.workspace.gather import gather
from tuneadvisor.workspace.inputs import Inputs

FIXTURES = REPO / "tests" / "fixtures"
SLURM = FIXTURES / "slurm-22.05"
TUTORIAL = FIXTURES / "advice" / "tutorial"
SMI = FIXTURES / "nvidia-smi"

TRAIN = """\
import argparse
from torch.utils.data import DataLoader

parser = argparse.ArgumentParser()
parser.add_argument("--num-workers", type=int, default=2)
args = parser.parse_args()
loader = DataLoader(dataset, num_workers=args.num_workers, pin_memory=True)
for data, target in loader:
    pass
"""

SEFF = """\
Job ID: 77
Cluster: della
User/Group: alice/users
State: COMPLETED (exit code 0)
Cores: 2
CPU Utilized: 00:30:00
CPU Efficiency: 75.00% of 00:40:00 core-walltime
Job Wall-clock time: 00:20:00
Memory Utilized: 3.00 GB
Memory Efficiency: 37.50% of 8.00 GB
"""


def write_job(folder: Path, launch: str = "python train.py", *directives: str) -> Path:
    path = folder / "job.sbatch"
    lines = ["#!/bin/bash", "#SBATCH --cpus-per-task=2", *directives, "", launch]
    path.write_text("\n".join(f"#SBATCH {d}" if d.startswith("--") else d for d in lines) + "\n")
    return path


def run(inputs: Inputs) -> Gathered:
    return gather(inputs, None, env={})


# --------------------------------------------------------------------------- what is read


def test_nothing_given_means_no_facts_and_every_input_to_sharpen() -> None:
    gathered = run(Inputs())
    assert gathered.facts == {}
    sharpen = " | ".join(gathered.sharpen)
    for needle in ("line_profiler", "--job", "--script", "--seff", "--metrics"):
        assert needle in sharpen
    assert gathered.job is None and gathered.scan is None and gathered.metrics is None


def test_job_finds_the_training_script_on_its_launch_line(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    job = write_job(tmp_path, "srun python train.py --num-workers 5")
    gathered = run(Inputs(job=str(job)))
    assert gathered.script_path is not None
    assert Path(gathered.script_path).resolve() == (tmp_path / "train.py").resolve()
    facts = gathered.facts
    assert facts["job.cpus_per_task"] == 2
    assert facts["job.launcher"] == "srun"
    # Arguments on the launch line are evidence.
    assert facts["script.num_workers.source"] == "argparse"
    assert facts["script.num_workers.passed"] == "5"
    assert facts["script.num_workers"] == 5
    assert not any("--job" in s or "--script" in s for s in gathered.sharpen)


def test_script_copied_off_the_cluster_is_found_beside_the_job(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    job = write_job(tmp_path, "python /home/alice/project/train.py")
    gathered = run(Inputs(job=str(job)))
    assert gathered.script_path == str(tmp_path / "train.py")
    assert gathered.facts["script.num_workers"] == 2  # the option's default


def test_script_that_is_not_here_is_said_not_read_not_an_error(tmp_path: Path) -> None:
    job = write_job(tmp_path, "python /home/alice/project/missing.py")
    gathered = run(Inputs(job=str(job)))
    assert gathered.script_path is None
    said = [n.line() for n in gathered.not_read]
    assert any("/home/alice/project/missing.py" in n and "--script" in n for n in said)
    assert any("--script" in s for s in gathered.sharpen)
    assert not [name for name in gathered.facts if name.startswith("script.")]


OWN = "is the job's own script, and it is neither beside the job script nor in its working"


@pytest.mark.parametrize(
    ("launch", "why"),
    [
        ("srun ./run_training.sh --epochs 3", f"./run_training.sh {OWN} directory"),
        ("srun apptainer exec img.sif bash train.sh", f"train.sh {OWN} directory"),
        ("srun ./bin/launcher", "./bin/launcher " + OWN + " directory"),
        ("srun my_launcher --gpus 2", "my_launcher is no launcher tuneadvisor knows"),
    ],
)
def test_a_launch_that_cannot_be_followed_is_said_not_read_with_the_reason(
    tmp_path: Path, launch: str, why: str
) -> None:
    job = write_job(tmp_path, "srun hostname\n" + launch)
    gathered = run(Inputs(job=str(job)))
    assert gathered.script_path is None
    note = (
        f"the job runs `{launch}`; tuneadvisor could not find the training script in it: "
        f"{why}; give --script"
    )
    assert note in [n.line() for n in gathered.not_read]


@pytest.mark.parametrize(
    ("launch", "command"),
    [
        ("torchrun --nproc_per_node 2 $(ls *.py)", "torchrun --nproc_per_node 2 $(ls *.py)"),
        ("srun python $TRAINING_SCRIPT", "srun python $TRAINING_SCRIPT"),  # set outside
    ],
)
def test_a_launch_line_that_cannot_be_followed_is_said_not_read(
    tmp_path: Path, launch: str, command: str
) -> None:
    job = write_job(tmp_path, "srun hostname\n" + launch)
    gathered = run(Inputs(job=str(job)))
    assert gathered.script_path is None
    note = (
        f"the job runs `{command}`; tuneadvisor could not find the training script in it: "
        "give --script"
    )
    assert note in [n.line() for n in gathered.not_read]
    assert not run(Inputs(job=str(write_job(tmp_path, "srun hostname")))).notes


def test_the_cannot_follow_note_reaches_the_text_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = write_job(tmp_path, "srun ./run_training.sh")
    assert main(["report", "--job", str(job)]) == 0
    out = capsys.readouterr().out
    assert "could not find the training script in it: ./run_training.sh is the job's own" in out
    (tmp_path / "run_training.sh").write_text("#!/bin/bash\nsrun hostname\n")
    assert main(["report", "--job", str(job)]) == 0
    out = capsys.readouterr().out
    assert "./run_training.sh, the job's own shell script, starts no Python program" in out


def test_the_text_report_names_the_training_script_and_its_launch_chain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    job = write_job(tmp_path, "srun torchrun --nproc_per_node 2 train.py --num-workers 5")
    assert main(["report", "--job", str(job)]) == 0
    out = capsys.readouterr().out
    train = tmp_path / "train.py"
    assert f"Training script: {train}, run as srun -> torchrun -> train.py\n" in out
    assert main(["report", "--job", str(job), "--script", str(train)]) == 0
    assert f"Training script: {train} (--script)\n" in capsys.readouterr().out
    away = tmp_path / "away.sbatch"
    away.write_text("#!/bin/bash\nsrun python /elsewhere/missing.py\n")
    assert main(["report", "--job", str(away)]) == 0
    out = capsys.readouterr().out
    assert "Training script: not read; the job runs srun -> /elsewhere/missing.py\n" in out


def test_script_option_wins_over_the_launch_line(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    other = tmp_path / "other.py"
    other.write_text(TRAIN.replace("default=2", "default=6"))
    job = write_job(tmp_path, "python train.py")
    gathered = run(Inputs(job=str(job), script=str(other)))
    assert gathered.script_path == str(other)
    assert gathered.facts["script.num_workers"] == 6


def test_script_that_does_not_parse_is_a_note(tmp_path: Path) -> None:
    broken = tmp_path / "train.py"
    broken.write_text("def train(:\n")
    gathered = run(Inputs(script=str(broken)))
    said = [n.line() for n in gathered.not_read]
    assert any(str(broken) in n and "does not parse" in n for n in said)
    assert not [name for name in gathered.facts if name.startswith("script.")]


def test_seff_gives_usage_facts(tmp_path: Path) -> None:
    seff = tmp_path / "seff.txt"
    seff.write_text(SEFF)
    facts = run(Inputs(seff=str(seff))).facts
    assert facts["usage.cores"] == 2
    assert facts["usage.cpu_efficiency_pct"] == 75.0
    assert facts["usage.mem_peak_mib"] == 3.0 * 1024
    assert facts["usage.elapsed_s"] == 20 * 60
    assert facts["usage.state"] == "COMPLETED"


def test_seff_lines_not_understood_are_said_not_read(tmp_path: Path) -> None:
    seff = tmp_path / "seff.txt"
    seff.write_text(SEFF + "GPU Utilisation: 45%\nEnergy: 3 kWh\nGPU Memory Efficiency: 9%\n")
    gathered = run(Inputs(seff=str(seff)))
    assert gathered.facts["usage.cores"] == 2  # what is known is still read
    lines = [n.line() for n in gathered.not_read]
    (note,) = [n for n in lines if n.startswith(str(seff)) and "not understood" in n]
    assert note.endswith(
        "lines not understood, left out: line 12: 'Energy: 3 kWh';"
        " line 13: 'GPU Memory Efficiency: 9%'"
    )


def test_sacct_wins_over_seff_for_usage(tmp_path: Path) -> None:
    seff = tmp_path / "seff.txt"
    seff.write_text(SEFF)
    sacct = json.loads((SLURM / "05-sacct.json").read_text())
    (job,) = sacct["jobs"]
    facts = run(Inputs(seff=str(seff), sacct=str(SLURM / "05-sacct.json"))).facts
    assert facts["usage.elapsed_s"] == job["time"]["elapsed"]  # sacct's, not seff's 1200 s
    assert facts["seff.wall_s"] == 20 * 60  # seff's own facts stay
    assert facts["usage.state"] == job["state"]["current"]


def test_jobid_picks_one_job_of_several(tmp_path: Path) -> None:
    transcript = (SLURM / "08-failures.txt").read_text().splitlines()
    table = tmp_path / "sacct.txt"
    table.write_text("\n".join(ln for ln in transcript if "|" in ln) + "\n")
    facts = run(Inputs(sacct=str(table), jobid="8")).facts
    assert facts["usage.state"] == "TIMEOUT"
    assert facts["sacct.timelimit_s"] == 60
    with pytest.raises(InputError) as caught:
        run(Inputs(sacct=str(table)))
    assert caught.value.path == str(table)
    assert (
        caught.value.problem == "4 jobs in the sacct output (7, 8, 9, 10): choose one with --jobid"
    )
    with pytest.raises(InputError) as caught:
        run(Inputs(sacct=str(table), jobid="99"))
    assert "99" in caught.value.problem


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("03-squeue.json", "not sacct output: jobs[0] has job_state but no steps or time"),
        ("11-scontrol-show-job.txt", "not sacct output: line 1: "),
    ],
)
def test_other_outputs_given_as_sacct_are_refused(name: str, problem: str) -> None:
    with pytest.raises(InputError) as caught:
        run(Inputs(sacct=str(SLURM / name)))
    assert caught.value.path == str(SLURM / name)
    assert caught.value.problem.startswith(problem)


def test_metrics_files_are_merged(tmp_path: Path) -> None:
    one = SMI / "a100-2gpu-one-idle.csv"
    alone = run(Inputs(metrics=(str(one),)))
    assert alone.metrics is not None
    assert alone.facts["gpu.count"] == 2
    both = run(Inputs(metrics=(str(one), str(SMI / "power-na.csv"))))
    assert both.facts["gpu.count"] == 3  # two A100s and a GRID vGPU
    rows = (SMI / "power-na.csv").read_text().splitlines()[1:]
    # Samples per GPU: the vGPU's few rows are the fewest any GPU of the merged input has.
    alone_samples = alone.facts["gpu.samples"]
    assert isinstance(alone_samples, int)
    assert both.facts["gpu.samples"] == min(alone_samples, len(rows))
    assert not any("--metrics" in s for s in both.sharpen)


def test_only_registered_facts_reach_the_rules() -> None:
    tutorial = Inputs(
        job=str(TUTORIAL / "job.sbatch"),
        seff=str(TUTORIAL / "seff.txt"),
        sacct=str(SLURM / "05-sacct.json"),
        metrics=(str(SMI / "a100-2gpu-one-idle.csv"),),
    )
    facts = run(tutorial).facts
    assert facts
    assert set(facts) <= set(FACTS)


# --------------------------------------------------------------------------- bad inputs

BAD = {
    "seff": ("--seff", "seff.txt", "Job not found\n", "seff"),
    "seff with a broken line": (
        "--seff",
        "seff.txt",
        "Job ID: 5\nCPU Efficiency: lots of it\n",
        "CPU Efficiency",
    ),
    "sacct json": ("--sacct", "sacct.json", '{"jobs": [', "sacct"),
    "sacct nothing": ("--sacct", "sacct.json", "hello\n", "sacct"),
    "nvidia-smi csv": ("--metrics", "gpu.csv", "this is not a log\nat all\n", "nvidia-smi"),
    "nvidia-smi header only": (
        "--metrics",
        "gpu.csv",
        "timestamp, index, utilization.gpu [%]\n",
        "nvidia-smi",
    ),
    "site unknown key": ("--site", "site.toml", "[partitions.gpu]\ncpus = 4\n", "cpus"),
    "job not UTF-8": ("--job", "bad.sbatch", "#!/bin/bash\n\udcff\n", "UTF-8"),
    "missing seff": ("--seff", "absent.txt", None, "no such file"),
}


def _write_bad(tmp_path: Path, name: str, content: str | None) -> Path:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content.encode("utf-8", "surrogateescape"))
    return path


@pytest.mark.parametrize("kind", list(BAD))
def test_bad_input_through_the_cli(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    monkeypatch.delenv("TUNEADVISOR_SITE", raising=False)
    option, name, content, needle = BAD[kind]
    bad = _write_bad(tmp_path, name, content)
    args = ["report", "--format", "json", option, str(bad)]
    if option != "--job":
        args += ["--job", str(write_job(tmp_path))]
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert str(bad) in lines[0]
    assert needle in lines[0]
    assert "Traceback" not in err


BROKEN_RULE = """\
id = "broken"
title = "A rule with a typo"
severity = "warning"
when = "profile.loader_shar >= 0.1"
rationale = "Nothing."
"""


def test_rules_folder_with_a_broken_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "broken.toml").write_text(BROKEN_RULE)
    code = main(["report", "--job", str(write_job(tmp_path)), "--rules", str(rules)])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert f"{rules / 'broken.toml'}:4:" in lines[0]  # the `when` line
    assert "profile.loader_shar" in lines[0]


def test_rules_folder_that_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-rules"
    code = main(["report", "--job", str(write_job(tmp_path)), "--rules", str(missing)])
    _, err = capsys.readouterr()
    assert code == 2
    assert len(err.splitlines()) == 1 and str(missing) in err


def test_rules_from_the_environment_are_checked_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "broken.toml").write_text(BROKEN_RULE)
    monkeypatch.setenv("TUNEADVISOR_RULES", str(rules))
    code = main(["report", "--job", str(write_job(tmp_path))])
    _, err = capsys.readouterr()
    assert code == 2
    assert str(rules / "broken.toml") in err


def test_job_script_alone_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --cpus-per-task=1\npython train.py\n")
    assert main(["report", "--job", str(job), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["profile"] is None
    assert doc["job"]["path"] == str(job)


def test_a_running_job_gives_no_usage_but_its_state(tmp_path: Path) -> None:
    # Real `seff` of a job 4 s into a 30 s sleep on the local cluster (0 MB used so far).
    seff = Path(__file__).parents[1] / "fixtures/slurm-22.05/seff-running-local.txt"
    gathered = run(Inputs(seff=str(seff)))
    assert gathered.facts["usage.state"] == "RUNNING"
    assert gathered.facts["seff.final"] is False
    partial = ("usage.mem_peak_mib", "usage.cpu_efficiency_pct", "usage.elapsed_s", "usage.cores")
    assert not [name for name in partial if name in gathered.facts]
    assert any("running" in note and "partial" in note for note in gathered.notes)


# --------------------------------------------------------------------------- one parse


EXAMPLE_PROFILE = REPO / "examples" / "mnist" / "24752610.lprof"
EXAMPLE_JOB = REPO / "examples" / "mnist" / "mnist.sbatch"


def test_the_scan_reuses_the_profile_analysis_parse_of_the_training_script(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Line kinds and the scan read the example's mnist_classify.py from one parse."""
    from tuneadvisor.trainscript import scan
    from tuneadvisor.workspace.load import analyze_profiles

    inputs = Inputs(profiles=(str(EXAMPLE_PROFILE),), job=str(EXAMPLE_JOB))
    analysis = analyze_profiles(inputs, cwd=REPO)
    assert [Path(p).name for p in analysis.parsed_sources] == ["mnist_classify.py"]
    expected = gather(inputs, None, env={}).facts  # parsed by the scan itself

    def no_second_parse(text: str) -> object:
        raise AssertionError("the training script was parsed a second time")

    monkeypatch.setattr(scan, "parse_script", no_second_parse)
    gathered = gather(inputs, analysis, env={})
    script_facts = {k: v for k, v in gathered.facts.items() if k.startswith("script.")}
    assert script_facts == {k: v for k, v in expected.items() if k.startswith("script.")}
    assert script_facts["script.num_workers.source"]


def test_a_changed_script_is_parsed_again_not_taken_from_the_profile_analysis(
    tmp_path: Path,
) -> None:
    from tuneadvisor.profile.analysis import ProfileAnalysis
    from tuneadvisor.trainscript.parsed import parse_script

    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    stale = parse_script(TRAIN.replace("default=2", "default=6"))
    analysis = ProfileAnalysis(
        origins=(),
        unit_s=1e-6,
        total_s=0.0,
        functions=(),
        kinds=(),
        parts=(),
        missing_sources=(),
        notes=(),
        parsed_sources={str(script): stale},
    )
    gathered = gather(Inputs(script=str(script)), analysis, env={})
    assert gathered.facts["script.num_workers"] == 2


def test_a_sites_seff_gpu_lines_are_said_but_not_gpu_facts() -> None:
    """NeSI's seff prints a GPU utilisation and memory; how they were sampled is not said
    (Slurm's gres/gpuutil is a last reading), so they are a note and no gpu.* fact."""
    seff = FIXTURES / "realworld" / "accounting" / "nesi-seff-gpu-timeout.seff.txt"
    got = gather(Inputs(seff=str(seff)), None, env={})
    assert not [k for k in got.facts if k.startswith("gpu.")]
    (note,) = [n for n in got.notes if "GPU utilisation" in n]
    assert "43 %" in note and "510 MiB of 23,552 MiB" in note
    assert (
        "GPU metrics (--metrics: an nvidia-smi CSV log, a watch recording or DCGM output)"
        in got.sharpen
    )


@pytest.mark.parametrize(
    "beside", ["[1, 2]", '{"kind": "tuneadvisor-run", "settings": 3}', "not json", "fifo"]
)
def test_a_run_json_beside_a_profile_that_is_no_run_record_is_left_alone(
    tmp_path: Path, beside: str
) -> None:
    """The measured allocation may come from the run.json `tuneadvisor run` writes beside a
    profile; anything else there (a list, wrong types, a FIFO that would block) is ignored."""
    import os

    profile = tmp_path / "profile.txt"
    profile.write_bytes((FIXTURES / "realworld" / "profiles" / "lp4.0.3-wide.txt").read_bytes())
    record = tmp_path / "run.json"
    if beside == "fifo":
        os.mkfifo(record)
    else:
        record.write_text(beside)
    got = gather(Inputs(profiles=(str(profile),)), None, env={})
    assert "alloc.cpus_per_task" not in got.facts
    record.unlink()
    record.write_text('{"kind": "tuneadvisor-run", "settings": {"cpus_per_task": 2}}')
    assert gather(Inputs(profiles=(str(profile),)), None, env={}).facts["alloc.cpus_per_task"] == 2
