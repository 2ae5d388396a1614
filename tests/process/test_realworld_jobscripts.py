"""What a careful reader concludes from each real job script (tests/fixtures/realworld/
jobscripts/), written by reading the files, checked against what tuneadvisor reads: the
request per node as Slurm allocates it, the launchers and the training script, whether it is
an array, whether sbatch would refuse it and which #SBATCH lines it ignores.

A row that tuneadvisor still reads differently is an xfail naming the gap; each is listed in
the corpus MANIFEST."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tuneadvisor.cli import main
from tuneadvisor.slurm.jobscript.syntax import DIRECTIVE_AFTER_COMMAND
from tuneadvisor.slurm.launch_line.choose import choose_launch
from tuneadvisor.slurm.launch_line.search import find_launches, unfollowed_launch
from tuneadvisor.workspace.read_files import read_job

JOBS = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "jobscripts"

G = 1024  # MiB in a GiB
H = 3600
DAY = 24 * H


@dataclass(frozen=True)
class Reading:
    file: str
    nodes: int
    tasks_per_node: int
    cpus_per_task: int  # cores each task has (Slurm's default 1; --cpus-per-gpu counts)
    gpus_per_node: int | None
    mem_mib: int | None  # per node; None when not asked for or --mem=0 (the whole node)
    time_s: int | None
    launchers: tuple[str, ...]  # outermost first
    script: str | None  # as written; None: no training script can be named from the file
    why: str = ""  # why there is none
    array: bool = False
    refused: bool = False  # sbatch would not submit it
    ignored: int = 0  # #SBATCH lines after the first command
    gap: str = ""  # tuneadvisor reads it differently (an xfail, listed in the MANIFEST)


SRUN = ("srun",)
UV = ("srun", "uv run")
TORCH_RUN = ("srun", "python -m torch.distributed.run")
LAUNCH = ("python -m torch.distributed.launch",)
CSC = "cscfi-pytorch-ddp-examples-"
MILA = "mila-iqia-mila-docs-docs-examples-"
PRINCETON = "princetonuniversity-multi_gpu_training-"
LUMI = "lumi-supercomputer-lumi-ai-guide-"
STAS = "stas00-ml-engineering-orchestration-slurm-"
HF = "huggingface-accelerate-examples-slurm-"
HF_SCRIPT = "/accelerate/examples/complete_nlp_example.py"  # ${ACCELERATE_DIR:-/accelerate}
STAS_SCRIPT = "torch-distributed-gpu-test.py"

# One row per file, its fields in Reading's order: a table, kept as one.
# fmt: off
ROWS = [
    Reading("777pomingzi-urs-test.sh", 1, 1, 1, 2, None, None, LAUNCH, "main.py"),
    # two `nohup python -m torch.distributed.launch ... &` and no wait: launch-in-background
    Reading(
        "allenzyd1997-weight_nowcasting-train_batch.sh", 1, 1, 4, 1, None, None, LAUNCH, "main.py",
    ),
    Reading(
        "amitaysicherman-reactome-protein_drug-train_eavl_all.sh",
        1, 1, 4, 1, 64 * G, 3 * H, (), "train_eval.py", array=True,
    ),
    # `--mail-user=<Your email>` is two arguments: sbatch stops at "email>"
    Reading(
        "anttitapsa-tcr_transformer-code-run_train.sh",
        1, 1, 1, 4, 50 * G, 5 * DAY, SRUN, "train.py", refused=True,
    ),
    Reading("carbon225-poleval-2022-abbr-gpu-job.sh", 1, 1, 8, 1, None, 6 * H, SRUN, "train.py"),
    # CRLF line ends (sbatch refuses them); --mem-per-cpu=23000 on one core
    Reading(
        "chhajedvaibhav-aimos-codes-pyramidnet-schedular.sh",
        1, 1, 1, 4, 23000, H, (), "train.py", refused=True,
    ),
    Reading(
        f"{CSC}run-accelerate-gpu4.sh", 1, 1, 40, 4, 320 * G, 900,
        ("srun", "apptainer_wrapper exec", "accelerate launch"), "mnist_accelerate.py",
    ),
    Reading(
        f"{CSC}run-accelerate-gpu8.sh", 2, 1, 40, 4, 320 * G, 900,
        ("srun", "singularity_wrapper exec", "accelerate launch"), "mnist_accelerate.py",
    ),
    Reading(f"{CSC}run-ddp-gpu4.sh", 1, 1, 40, 4, None, 900, ("srun", "torchrun"), "mnist_ddp.py"),
    Reading(
        f"{CSC}run-deepspeed-gpu4.sh", 1, 1, 40, 4, None, 900,
        ("srun", "singularity_wrapper exec", "deepspeed"), "mnist_deepspeed.py",
    ),
    Reading(  # `deepspeed $*`: the script is given to sbatch
        f"{CSC}run-gpu4-deepspeed-mahti.sh", 1, 1, 40, 4, None, 900,
        ("srun", "singularity_wrapper exec", "deepspeed"), "$*",
    ),
    Reading(
        "ds4dh-hai_project-run_controls.sh", 1, 1, 10, 1, 96 * G, 6 * DAY,
        ("srun", "apptainer run"), "run_controls.py",
    ),
    Reading(
        f"{HF}submit_multicpu.sh", 2, 1, 1, None, None, None, (), None,
        why="bash cannot parse it (the LAUNCHER quote never closes); it runs `eval $CMD`",
    ),
    Reading(f"{HF}submit_multigpu.sh", 1, 1, 160, 4, None, 7140, ("accelerate launch",), HF_SCRIPT),
    Reading(
        f"{HF}submit_multinode.sh", 4, 1, 160, 4, None, 7140, ("srun", "accelerate launch"),
        HF_SCRIPT,
    ),
    Reading(
        f"{HF}submit_multinode_fsdp.sh", 4, 1, 160, 4, None, 7140,
        ("srun", "accelerate launch"), HF_SCRIPT,
    ),
    Reading(  # the task comes from the command line: scripts/$TASK.py
        "huggingface-alignment-handbook-recipes-launch.sh", 1, 1, 1, 8, None, 3 * DAY,
        ("srun", "accelerate launch"), "scripts/$TASK.py",
    ),
    Reading(
        "jamesafranke-vit_clouds-scripts-jim_bash.sh", 1, 1, 1, 4, None, 1800, ("torchrun",),
        "torchrun_test.py",
    ),
    Reading(  # --cpus-per-gpu=4 and --mem-per-gpu=20G times 8 GPUs, for the one task
        "jh-lee-kr-nodestest-template.sh", 1, 1, 32, 8, 160 * G, DAY, LAUNCH, "main.py",
    ),
    Reading("lhfazry-sdacd-train.sh", 1, 1, 4, 2, None, 5 * DAY + 5400, LAUNCH, "train.py"),
    Reading(
        f"{LUMI}01-quickstart-run.sh", 1, 1, 7, 1, 60 * G, H, ("singularity run",),
        "visiontransformer.py",
    ),
    Reading(
        f"{LUMI}05-multi-gpu-and-node-run_ddp_srun.sh", 1, 8, 7, 8, 480 * G, H,
        ("srun", "singularity run"), "ddp_visiontransformer.py",
    ),
    Reading(  # --tasks-per-node is sbatch's other name for --ntasks-per-node
        f"{LUMI}05-multi-gpu-and-node-run_ddp_torchrun_4.sh", 4, 1, 56, 8, 480 * G, H,
        ("srun", "singularity run", "python -m torch.distributed.run"),
        "ddp_visiontransformer.py",
    ),
    Reading(
        f"{LUMI}05-multi-gpu-and-node-run_ds_srun_4.sh", 4, 8, 7, 8, 480 * G, H,
        ("srun", "singularity run"), "ds_visiontransformer.py",
    ),
    Reading(
        "lzzppp-trajectory_similarity_experiment-trajectory_similarity_matrix_learning-"
        "produce_similarity.sh", 1, 1, 4, 1, None, 3 * DAY, (), "train.py",
    ),
    Reading(  # the first srun stages the data (prepare_data.py); the second one trains
        f"{MILA}advanced-imagenet-job.sh", 1, 1, 4, 1, 16 * G, 2 * H, UV, "main.py",
    ),
    Reading(  # --gpus-per-task=rtx8000:1 times 4 tasks on a node
        f"{MILA}distributed-003_multi_node-job.sh", 2, 4, 1, 4, 16 * G, 900, SRUN, "main.py",
    ),
    Reading(  # the wrapper, accelerate_launch.sh, is kept beside job.sh upstream, not here
        f"{MILA}distributed-accelerate_example-job.sh", 1, 1, 48, 4, None, None, (), None,
        why="srun runs ./accelerate_launch.sh, the job's own script, which is not kept here",
    ),
    Reading(  # bash -c '... \<newline> ...'$VAR'...': continuations inside the string
        f"{MILA}distributed-llm_training-job.sh", 2, 1, 12, 2, 512 * G, H,
        ("srun", "accelerate launch"), "main.py",
    ),
    Reading(f"{MILA}distributed-multi_gpu-job.sh", 1, 2, 4, 2, 32 * G, 900, UV, "main.py"),
    Reading(  # --ntasks=4 at most 2 a node: two nodes
        f"{MILA}distributed-multi_node-job.sh", 2, 2, 4, 2, 32 * G, 900, UV, "main.py",
    ),
    Reading(f"{MILA}distributed-single_gpu-job.sh", 1, 1, 4, 1, 16 * G, 900, UV, "main.py"),
    Reading(f"{MILA}good_practices-checkpointing-job.sh", 1, 1, 4, 1, 16 * G, 900, UV, "main.py"),
    Reading(
        f"{MILA}good_practices-launch_many_jobs-job.sh", 1, 1, 4, 1, 16 * G, 900, UV, "main.py",
    ),
    Reading(
        f"{MILA}good_practices-many_tasks_per_gpu-job.sh", 1, 2, 4, 1, 16 * G, 900, UV, "main.py",
    ),
    Reading("mmmmayi-grad-w-irm-run.sh", 1, 1, 8, 1, None, None, ("torchrun",), "train.py"),
    # --image/--module: options of Shifter, a site plugin (a note, not refused). Refused all
    # the same: --gpus-per-task with no task count (sbatch's man page: "requires an explicit
    # task count"); found once Shifter's options no longer hid it.
    Reading(
        "nersc-sc23-dl-tutorial-submit_pm.sh", 1, 1, 32, 1, None, H, ("srun", "shifter"),
        "train.py", refused=True,
    ),
    Reading(
        "nersc-sc23-dl-tutorial-submit_pm_mp.sh", 1, 4, 32, 4, None, H, ("srun", "shifter"),
        "train_mp.py",
    ),
    Reading(
        "nigelawj-mmalnet-randaug-mmal-net-master-job.sh", 1, 1, 1, 1, 8000, None, (), "train.py",
    ),
    Reading(  # `--time=00:5:00`; `--cpus-per-task 80` with a space; no newline at the end
        "niccolo-ajroldi-nanogpt-scripts-run.sh", 1, 1, 80, 8, 475000, 300, ("torchrun",),
        "train.py",
    ),
    Reading(  # a GPU node by --constraint=gpu (Piz Daint), no GPU asked for
        "noabauma-3d-shampoo-examples-simple_deepspeed_examples-launch.sh", 1, 1, 1, None, None,
        120, SRUN, "ds_pp.py",
    ),
    Reading(
        f"{PRINCETON}01_single_gpu-job.sh", 1, 1, 1, 1, 8 * G, 300, ("kernprof",),
        "mnist_classify.py",
    ),
    Reading(
        f"{PRINCETON}02_pytorch_ddp-job.sh", 2, 2, 8, 2, 32 * G, 300, SRUN, "mnist_classify_ddp.py",
    ),
    Reading(f"{PRINCETON}02_pytorch_ddp-simple.sh", 2, 2, 8, 2, 32 * G, 60, SRUN, "simple_dpp.py"),
    Reading(  # --mem-per-cpu=4G times 2 tasks x 8 cores
        f"{PRINCETON}03_pytorch_lightning-multi-job.sh", 1, 2, 8, 2, 64 * G, 120, SRUN,
        "myscript.py",
    ),
    Reading(
        f"{PRINCETON}03_pytorch_lightning-simple-job.sh", 1, 1, 4, 1, 16 * G, 120, SRUN,
        "example.py",
    ),
    Reading(
        "pytorch-examples-distributed-ddp-tutorial-series-slurm-sbatch_run.sh", 4, 1, 4, 1, None,
        None, ("srun", "torchrun"), "/shared/examples/multinode_torchrun.py",
    ),
    Reading(
        "pytorch-examples-distributed-mingpt-ddp-mingpt-slurm-sbatch_run.sh", 2, 1, 4, 1, None,
        None, ("srun", "torchrun"), "/shared/examples/mingpt/main.py",
    ),
    # Lightning's template with 8 tasks per node on gpu:4: tasks-share-gpus; --mem=0: no figure
    Reading("nrt-hackathon-2022-gore-submit.sh", 2, 8, 1, 4, None, 2 * H, SRUN, "lpdgen/train.py"),
    Reading(  # python without srun: one process, though 4 tasks are asked for
        "rkenny-4960a-suger-submit.beluga.sh", 1, 4, 1, 1, 32 * G, None, (), "train.py",
    ),
    Reading(  # -n 4 on one node (no --nodes), --gpus=1 for the job, 4000 MiB a core
        "android-xd-deep-learning-with-curiosity-and-perseverance-scripts-job.sh", 1, 4, 1, 1,
        16000, 10 * H, (), "train.py",
    ),
    Reading(  # accelerate by its absolute path in a conda env
        "shujun-he-ribonanzanet2-job.sh", 1, 1, 1, 8, None, None, ("accelerate launch",),
        "run.py",
    ),
    Reading(f"{STAS}example.sh", 2, 1, 96, 8, None, 600, TORCH_RUN, STAS_SCRIPT),
    Reading(
        f"{STAS}launchers-accelerate-launcher.sh", 2, 1, 96, 8, None, 600,
        ("srun", "accelerate launch"), STAS_SCRIPT,
    ),
    Reading(f"{STAS}launchers-lightning-launcher.sh", 2, 8, 12, 8, None, 600, SRUN, STAS_SCRIPT),
    Reading(f"{STAS}launchers-srun-launcher.sh", 2, 8, 10, 8, None, 600, SRUN, STAS_SCRIPT),
    Reading(
        f"{STAS}launchers-torchrun-launcher.sh", 2, 1, 96, 8, None, 600, TORCH_RUN, STAS_SCRIPT,
    ),
    Reading(
        "stijndebeer-nncv_0941451-final_assignment-jobscript_slurm.sh", 1, 1, 18, 1, None, 7 * H,
        (), None, why="the container runs main.sh, a shell script that names the training",
    ),
    Reading(  # two `python train.py ... &`, then `wait`: nothing to say
        "teamofprofguo-sseg-experiments-prl_basenet-prltrain.sh", 1, 1, 4, 1, 20 * G, 40 * H, (),
        "train.py",
    ),
    Reading(  # every #SBATCH line comes after `PARTITION=$1`: sbatch reads none of them
        "wusize-raw_ovd-slurm_train.sh", 1, 1, 1, None, None, None, (), None,
        why="srun runs multi-node_run.sh, a shell script", ignored=8,
    ),
    Reading(  # --exclusive: each task has the node's cores (1 is sbatch's request count)
        "mashooo-pytorch_examples-distributed-ddp-tutorial-series-slurm-sbatch_run.sh",
        2, 1, 1, 1, None, None, (), None,
        why="srun runs \"slurm/torchrun.sh $head_node_ip\", one quoted word, not kept here",
    ),
]
# fmt: on


def test_every_job_script_has_one_row() -> None:
    files = sorted(p.name for p in JOBS.glob("*.sh"))
    assert sorted(row.file for row in ROWS) == files


def _param(row: Reading) -> object:
    marks = [pytest.mark.xfail(reason=row.gap, strict=True)] if row.gap else []
    return pytest.param(row, id=row.file, marks=marks)


@pytest.mark.parametrize("row", [_param(row) for row in ROWS])
def test_tuneadvisor_reads_the_job_script_as_a_careful_reader(row: Reading) -> None:
    job = read_job(str(JOBS / row.file))
    request = job.request()
    limit = request.time_limit.seconds if request.time_limit is not None else None
    ignored = sum(1 for p in job.problems if p.id == DIRECTIVE_AFTER_COMMAND)
    launch = choose_launch(find_launches(job))
    seen = Reading(
        row.file,
        request.node_count,
        request.tasks_per_node,
        request.task_cpus,
        request.node_gpus,
        request.node_mem_mib,
        limit,
        tuple(launcher.name for launcher in launch.launchers) if launch else (),
        launch.script if launch else None,
        row.why,
        "array" in job.directives(),
        job.refused,
        ignored,
        row.gap,
    )
    assert seen == row
    if row.script is None:  # the report says it cannot name one, or there is no hand-off
        assert launch is None


@pytest.mark.parametrize(
    "row",
    [row for row in ROWS if row.script is None and "eval" not in row.why],
    ids=lambda row: row.file,
)
def test_a_launch_that_cannot_be_followed_is_named_in_the_report(
    row: Reading, capsys: pytest.CaptureFixture[str]
) -> None:
    line = unfollowed_launch(read_job(str(JOBS / row.file)))
    assert line is not None
    assert main(["report", "--job", str(JOBS / row.file), "--format", "json"]) == 0
    not_read = json.loads(capsys.readouterr().out)["advice"]["not_read"]
    assert any("could not find the training script" in item for item in not_read)


@pytest.mark.parametrize(
    ("file", "finding", "note"),
    [
        ("wusize-raw_ovd-slurm_train.sh", "directive-after-command", "multi-node_run.sh"),
        ("nersc-sc23-dl-tutorial-submit_pm.sh", None, "--image, --module: options of NERSC's"),
        (f"{HF}submit_multicpu.sh", None, "bash -n would refuse it (line 61: unexpected EOF"),
        (f"{MILA}advanced-imagenet-job.sh", None, "prepare_data.py (line 30), main.py (line 66)"),
        (f"{MILA}distributed-accelerate_example-job.sh", None, "./accelerate_launch.sh is the"),
    ],
)
def test_what_the_report_says_of_the_scripts_gaps(
    file: str, finding: str | None, note: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", "--job", str(JOBS / file), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    ids = {f["id"] for f in report["findings"]}
    assert (finding in ids) if finding else "invalid-directive" not in ids
    said = [*report["advice"]["notes"], *report["advice"]["not_read"]]
    assert any(note in line for line in said)


def test_ignored_directives_are_a_warning_with_their_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["report", "--job", str(JOBS / "wusize-raw_ovd-slurm_train.sh")]) == 0
    out = capsys.readouterr().out
    assert "Findings: none" not in out
    assert "[warning] directive-after-command: These #SBATCH lines are ignored by sbatch" in out
    assert "where: lines 6-13: #SBATCH -p ${PARTITION}; #SBATCH --nodes=2;" in out


COMPANIONS = sorted(JOBS.glob("*.py"))


def test_each_kept_training_script_belongs_to_a_job_script() -> None:
    assert len(COMPANIONS) >= 20
    assert all(py.with_suffix(".sh").is_file() for py in COMPANIONS)


@pytest.mark.parametrize("script", COMPANIONS, ids=[p.name for p in COMPANIONS])
def test_a_job_script_is_reported_with_its_training_script(
    script: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = script.with_suffix(".sh")
    code = main(["report", "--job", str(job), "--script", str(script), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["job"]["path"] == str(job)
