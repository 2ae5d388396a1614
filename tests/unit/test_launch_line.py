"""Finding the training command in a job script's body."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.launch_line.choose import choose_launch
from tuneadvisor.slurm.launch_line.edit import set_flag, set_option
from tuneadvisor.slurm.launch_line.lexing import unclosed_quote
from tuneadvisor.slurm.launch_line.model import LaunchLine, option_values
from tuneadvisor.slurm.launch_line.search import find_launches, unfollowed_launch
from tuneadvisor.workspace.read_files import read_job


def launch(body: str, path: Path | None = None, header: str = "#SBATCH -c 4\n") -> LaunchLine:
    found = choose_launch(find_launches("#!/bin/bash\n" + header + body, path))
    assert found is not None, body
    return found


def names(found: LaunchLine) -> list[str]:
    return [launcher.name for launcher in found.launchers]


@pytest.mark.parametrize(
    ("body", "launchers", "script", "args"),
    [
        ("python X.py args\n", [], "X.py", ["args"]),
        ("python3 -u X.py\n", [], "X.py", []),
        ("python3.11 -Wignore -X dev -B X.py --a 1\n", [], "X.py", ["--a", "1"]),
        (
            "python -m torch.distributed.run --nproc_per_node=2 --nnodes 1 X.py --epochs 3\n",
            ["python -m torch.distributed.run"],
            "X.py",
            ["--epochs", "3"],
        ),
        (
            "kernprof -l -o ${SLURM_JOBID}.lprof X.py --batch-size 64\n",
            ["kernprof"],
            "X.py",
            ["--batch-size", "64"],
        ),
        ("srun python X.py\n", ["srun"], "X.py", []),
        ("srun --cpu-bind=cores python X.py\n", ["srun"], "X.py", []),
        ("srun -n 2 --ntasks-per-node 2 -l python X.py\n", ["srun"], "X.py", []),
        ("mpirun -np 2 python X.py\n", ["mpirun"], "X.py", []),
        ("mpiexec -n 2 --mca btl self python X.py -v\n", ["mpiexec"], "X.py", ["-v"]),
        (
            "torchrun --nproc_per_node=4 --standalone X.py --lr 0.1\n",
            ["torchrun"],
            "X.py",
            ["--lr", "0.1"],
        ),
        (
            "accelerate launch --multi_gpu --num_processes 2 X.py --fp16\n",
            ["accelerate launch"],
            "X.py",
            ["--fp16"],
        ),
        (
            "deepspeed --num_gpus 2 X.py --deepspeed ds.json\n",
            ["deepspeed"],
            "X.py",
            ["--deepspeed", "ds.json"],
        ),
        ("srun kernprof -lo out.lprof X.py $@\n", ["srun", "kernprof"], "X.py", ["$@"]),
        ("srun python -m kernprof -l X.py\n", ["srun", "kernprof"], "X.py", []),
        ("python -m cProfile -o out.prof -s time X.py\n", ["python -m cProfile"], "X.py", []),
        (
            "srun apptainer exec --nv -B /data:/data img.sif python X.py --a\n",
            ["srun", "apptainer exec"],
            "X.py",
            ["--a"],
        ),
        ("conda run -n torch --no-capture-output python X.py\n", ["conda run"], "X.py", []),
        ("uv run --with torch python X.py\n", ["uv run"], "X.py", []),
        (
            "srun --ntasks 2 \\\n   python X.py \\\n   --num-workers 4\n",
            ["srun"],
            "X.py",
            ["--num-workers", "4"],
        ),
    ],
)
def test_launch_forms(body: str, launchers: list[str], script: str, args: list[str]) -> None:
    found = launch(body)
    assert names(found) == launchers
    assert found.script == script
    assert list(found.args) == args


@pytest.mark.parametrize(
    ("body", "launchers", "script", "args"),
    [
        # --use_env takes no value: the script is main.py, not --use_env's value
        (
            "python -m torch.distributed.launch --nproc_per_node=8 --use_env main.py --lr 1\n",
            ["python -m torch.distributed.launch"],
            "main.py",
            ["--lr", "1"],
        ),
        (
            "torchrun --virtual-local-rank --nnodes 2 -t 3 X.py --a\n",
            ["torchrun"],
            "X.py",
            ["--a"],
        ),
        (
            "accelerate launch --multi-gpu --same-network --debug -t 1 --num_processes 8 X.py\n",
            ["accelerate launch"],
            "X.py",
            [],
        ),
        (
            "accelerate launch --enable_cpu_affinity --dynamo_use_fullgraph -q X.py --b 2\n",
            ["accelerate launch"],
            "X.py",
            ["--b", "2"],
        ),
        (
            "deepspeed -H hostfile -i worker-0 --save_pid --no_local_rank X.py --ds\n",
            ["deepspeed"],
            "X.py",
            ["--ds"],
        ),
        (
            "lightning run model --accelerator gpu --devices 4 X.py --e 1\n",
            ["lightning run model"],
            "X.py",
            ["--e", "1"],
        ),
        ("fabric run model --devices=2 X.py\n", ["fabric run"], "X.py", []),
        (
            "mpirun -np 4 --oversubscribe --report-bindings -x NCCL_DEBUG=INFO python X.py\n",
            ["mpirun"],
            "X.py",
            [],
        ),
        ("mpiexec -n 8 -ppn 4 -genvall -l python X.py\n", ["mpiexec"], "X.py", []),
        # srun -s is --oversubscribe (no value), -r is --relative (a value)
        ("srun -s -r 1 python X.py\n", ["srun"], "X.py", []),
        # site wrappers and container runtimes are skipped like `apptainer exec`
        (
            "srun apptainer_wrapper exec accelerate launch --num_processes 8 X.py --bs 2\n",
            ["srun", "apptainer_wrapper exec", "accelerate launch"],
            "X.py",
            ["--bs", "2"],
        ),
        (
            "srun singularity_wrapper exec deepspeed X.py --deepspeed\n",
            ["srun", "singularity_wrapper exec", "deepspeed"],
            "X.py",
            ["--deepspeed"],
        ),
        ("srun my-wrapper python X.py\n", ["srun", "my-wrapper"], "X.py", []),
        (
            "srun --container-image=nvcr.io/nvidia/pytorch:24.01-py3 --container-mounts /d:/d "
            "sh -c 'cd /d && python X.py --x 1'\n",
            ["srun"],
            "X.py",
            ["--x", "1"],
        ),
        (
            "srun singularity run --nv -B /d img.sif python X.py\n",
            ["srun", "singularity run"],
            "X.py",
            [],
        ),
        (
            "docker run --rm --gpus all -it -v /d:/d img:1 python X.py\n",
            ["docker run"],
            "X.py",
            [],
        ),
        (
            "podman run --rm --device nvidia.com/gpu=all img torchrun --nproc-per-node 2 X.py\n",
            ["podman run", "torchrun"],
            "X.py",
            [],
        ),
        (
            "srun enroot start --rw -m /d pytorch python X.py\n",
            ["srun", "enroot start"],
            "X.py",
            [],
        ),
        ("srun ch-run -b /d:/d /img/torch -- python X.py\n", ["srun", "ch-run"], "X.py", []),
        ("srun shifter --image=docker:a/b:1 python X.py\n", ["srun", "shifter"], "X.py", []),
        ("numactl --cpunodebind=0 -m 0 python X.py\n", ["numactl"], "X.py", []),
        ("srun taskset -c 0-7 python X.py\n", ["srun", "taskset"], "X.py", []),
    ],
)
def test_launchers_and_their_flags(
    body: str, launchers: list[str], script: str, args: list[str]
) -> None:
    found = launch(body)
    assert names(found) == launchers
    assert found.script == script
    assert list(found.args) == args


@pytest.mark.parametrize(
    ("body", "launchers", "script", "args"),
    [
        ("SCRIPT=train.py\npython $SCRIPT --a 1\n", [], "train.py", ["--a", "1"]),
        (
            'TRAINING_SCRIPT="train_ddp.py --batch-size 1024"\nsrun python $TRAINING_SCRIPT\n',
            ["srun"],
            "train_ddp.py",
            ["--batch-size", "1024"],
        ),
        # quoted, the value is one word, as bash passes it
        ('S="a b.py"\npython "$S" --x\n', [], "a b.py", ["--x"]),
        (
            "DIR=/p/src\nexport SCRIPT=${DIR}/main.py\nsrun python ${SCRIPT} --seed $SEED\n",
            ["srun"],
            "/p/src/main.py",
            ["--seed", "$SEED"],
        ),
        (
            'SCRIPT=${SCRIPT:-train.py}\nARGS="--lr 0.1 --epochs 3"\n'
            "torchrun --nproc_per_node 2 $SCRIPT $ARGS\n",
            ["torchrun"],
            "train.py",
            ["--lr", "0.1", "--epochs", "3"],
        ),
        ('CMD="python X.py --x 1"\nsrun bash -c "$CMD"\n', ["srun"], "X.py", ["--x", "1"]),
        ('CMD="python X.py --x 1"\nsrun $CMD\n', ["srun"], "X.py", ["--x", "1"]),
        # what running would tell stays as written
        ("SCRIPT=$(ls *.py)\npython $SCRIPT --a\n", [], "$(ls *.py)", ["--a"]),
        ("SCRIPT=x.py\nSCRIPT=`ls`\npython $SCRIPT\n", [], "`ls`", []),
        ("S=$HOME/x.py\npython $S\n", [], "$HOME/x.py", []),
        (
            'N=4\nC="accelerate launch --num_processes=$(expr $N \\* 2) '
            '--machine_rank=\\${R} X.py"\n'
            'srun bash -c "$C --lr 1"\n',
            ["srun", "accelerate launch"],
            "X.py",
            ["--lr", "1"],
        ),
        # a quoted string over several lines is one command
        (
            'export CMD="\n  torchrun --nproc_per_node 4 \\\n  X.py --b 1\n"\nsrun sh -c "$CMD"\n',
            ["srun", "torchrun"],
            "X.py",
            ["--b", "1"],
        ),
        # a here-document's body is no command
        ("cat > cfg.sh <<'EOF'\npython other.py\nEOF\npython X.py\n", [], "X.py", []),
        (
            "python X.py --nw ${SLURM_CPUS_PER_TASK:-4} '$S'\n",
            [],
            "X.py",
            ["--nw", "${SLURM_CPUS_PER_TASK:-4}", "$S"],
        ),
        ("python $SCRIPT\nSCRIPT=x.py\n", [], "$SCRIPT", []),  # set after the line
        # set perhaps (after &&, in a block, in a subshell): as written
        ("W=$((N - 1))\n[ $W -lt 0 ] && W=0\npython X.py --nw $W\n", [], "X.py", ["--nw", "$W"]),
        ('S=a.py\nif [ -n "$B" ]; then\n  S=b.py\nfi\npython $S\n', [], "$S", []),
        ("S=a.py\nf() {\n  S=b.py\n}\npython $S\n", [], "$S", []),  # if f ran
        ("S=a.py\n( S=b.py )\npython $S\n", [], "$S", []),
        ("for S in a.py b.py; do\n  python $S\ndone\n", [], "$S", []),
    ],
)
def test_variables_the_script_sets_are_followed(
    body: str, launchers: list[str], script: str, args: list[str]
) -> None:
    found = launch(body)
    assert names(found) == launchers
    assert found.script == script
    assert list(found.args) == args


def test_a_variable_names_the_script_on_disk(project: Path) -> None:
    found = launch('S="train.py --epochs 1"\nsrun python $S\n', project / "job.sh")
    assert found.script_path == project / "train.py"
    assert found.options == {"--epochs": "1"}


@pytest.mark.parametrize(
    ("body", "command"),
    [
        ("srun hostname\nsrun ./run_training.sh --x\n", "srun ./run_training.sh --x"),
        ("python -c 'import torch'\nsrun bash train.sh\n", "srun bash train.sh"),
        ("accelerate launch\n", "accelerate launch"),
        ("srun apptainer exec img.sif ./run.sh\n", "srun apptainer exec img.sif ./run.sh"),
        # followed, or nothing handed to a launcher: nothing to say
        ("srun ./prepare.sh\nsrun python X.py\n", None),
        ("srun nvidia-smi\necho done\n", None),
        ("./run.sh\n", None),
        ("", None),
    ],
)
def test_a_launch_that_cannot_be_followed_is_named(body: str, command: str | None) -> None:
    unfollowed = unfollowed_launch("#!/bin/bash\n" + body)
    assert (unfollowed.command if unfollowed else None) == command


def test_variables_stay_as_written() -> None:
    found = launch('python train.py --num-workers "${SLURM_CPUS_PER_TASK}" --seed $SEED\n')
    assert found.options == {"--num-workers": "${SLURM_CPUS_PER_TASK}", "--seed": "$SEED"}


def test_environment_before_the_command() -> None:
    found = launch("export OMP_NUM_THREADS=8\nOMP_NUM_THREADS=4 MKL_NUM_THREADS=1 python X.py\n")
    assert found.env == {"OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "1"}
    assert found.exported == {"OMP_NUM_THREADS": "8"}
    wrapped = launch("env CUDA_VISIBLE_DEVICES=0 nohup time -p python X.py\n")
    assert wrapped.env == {"CUDA_VISIBLE_DEVICES": "0"}
    assert wrapped.script == "X.py"


def test_continuations_report_their_lines() -> None:
    found = launch("module load cuda\n\nsrun \\\n  python X.py \\\n  --epochs 2\necho done\n")
    assert (found.line, found.end_line) == (5, 7)
    assert found.text == "srun   python X.py   --epochs 2"


@pytest.mark.parametrize(
    "body",
    [
        "module load cuda && python X.py --a 1 > log.txt 2>&1 &\n",
        "python X.py --a 1 | tee log.txt\n",
        "cd work; python X.py --a 1; echo done  # python other.py\n",
        "if true; then python X.py --a 1; fi\n",
        "for s in 1 2; do python X.py --a 1; done\n",
        "python X.py --a 1 &> log.txt\n",
    ],
)
def test_the_command_is_cut_out_of_shell_syntax(body: str) -> None:
    found = launch(body)
    assert (found.script, found.args) == ("X.py", ("--a", "1"))


def test_modules_and_non_launches() -> None:
    module = launch("python -m mypkg.train --epochs 2\n")
    assert (module.module, module.script, module.args) == ("mypkg.train", None, ("--epochs", "2"))
    torchrun_module = launch("torchrun --nproc_per_node 2 -m mypkg.train\n")
    assert torchrun_module.module == "mypkg.train"
    for body in ["python -c 'print(1)'\n", "python\n", "python --version\n", "echo hi\n", ""]:
        assert choose_launch(find_launches("#!/bin/bash\n" + body)) is None


def test_every_launch_is_found_in_order() -> None:
    text = "#!/bin/bash\npython prepare.py\nsrun python train.py\n"
    assert [f.script for f in find_launches(text)] == ["prepare.py", "train.py"]


@pytest.mark.parametrize(
    ("body", "training"),
    [
        ("srun python prepare_data.py\nsrun python main.py\n", "main.py"),  # Mila's imagenet
        ("python train.py\npython evaluate.py\n", "train.py"),
        ("python download.py\npython model.py\npython plot_curves.py\n", "model.py"),
        ("python preprocessData.py\ntorchrun --standalone net.py\n", "net.py"),
        ("python setup_env.py\npython train_and_eval.py\n", "train_and_eval.py"),
        ("python run_eval.py\npython -m mypkg.finetune\n", None),  # -m mypkg.finetune
        ("python retrieval.py\npython a.py\n", "retrieval.py"),  # no "eval" in retrieval
        ("python train.py --lr 1\npython train.py --lr 2\n", "train.py"),
        ("python test.py\n", "test.py"),  # the only one
    ],
)
def test_the_training_launch_is_chosen_as_a_reader_does(body: str, training: str | None) -> None:
    found = choose_launch(find_launches("#!/bin/bash\n" + body))
    assert found is not None
    assert found.script == training
    if training is None:
        assert found.module == "mypkg.finetune"
    if body.count("train.py") == 2:
        assert found.args == ("--lr", "1")  # between equals, the first


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('#!/bin/bash\necho hi\necho "a\nb\n', (3, 3, '"')),
        ("#!/bin/bash\nx='a\nb\n", (2, 2, "'")),
        # reopened: bash names the line where the last quote left open starts
        ('#!/bin/bash\nA="x \\\n  y\nB="z"\necho ""\n', (5, 2, '"')),
        ("#!/bin/bash\necho \"it's\" 'a \"b' $'c\\'d'\n", None),
        ("#!/bin/bash\ncat <<EOF\nit's\nEOF\necho ok # don't\n", None),
        ('#!/bin/bash\nS="multi\nline"\n', None),
    ],
)
def test_a_quote_that_never_closes_is_found_where_bash_finds_it(
    text: str, expected: tuple[int, int, str] | None
) -> None:
    assert unclosed_quote(list(enumerate(text.split("\n"), start=1))) == expected


def test_directives_are_not_commands() -> None:
    # A header comment that reads like a command is not a launch line.
    assert (
        choose_launch(find_launches("#!/bin/bash\n#SBATCH --wrap='python x.py'\n# python y.py\n"))
        is None
    )


def test_launcher_options() -> None:
    found = launch("srun -n 2 --cpu-bind=cores torchrun --nproc_per_node=4 X.py\n")
    srun, torchrun = found.launchers
    assert srun.options == {"-n": "2", "--cpu-bind": "cores"}
    assert torchrun.options == {"--nproc_per_node": "4"}
    assert found.launcher("torchrun") is torchrun and found.launcher("mpirun") is None


def test_the_launch_chain() -> None:
    assert launch("srun torchrun --nproc_per_node 2 X.py\n").chain == "srun -> torchrun -> X.py"
    assert launch("python X.py\n").chain == "X.py"
    assert launch("srun python -m pkg.train\n").chain == "srun -> -m pkg.train"


def test_option_values() -> None:
    words = ["--lr", "-0.1", "--amp", "--epochs=3", "-j", "4", "data/", "--last"]
    assert option_values(words) == {
        "--lr": "-0.1",
        "--amp": "",
        "--epochs": "3",
        "-j": "4",
        "--last": "",
    }


# ----------------------------------------------------------------------------- paths


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text("")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("")
    return tmp_path


def test_script_resolved_from_the_job_scripts_directory(project: Path) -> None:
    assert launch("python train.py\n", project / "job.sh").script_path == project / "train.py"
    assert launch("python missing.py\n", project / "job.sh").script_path is None
    assert launch("python $HOME/train.py\n", project / "job.sh").script_path is None


def test_script_resolved_after_chdir_and_cd(project: Path) -> None:
    job = project / "job.sh"
    assert launch("python main.py\n", job, "#SBATCH -D src\n").script_path == (
        project / "src" / "main.py"
    )
    assert launch("cd src\npython main.py\n", job).script_path == project / "src" / "main.py"
    assert launch('cd "$SLURM_SUBMIT_DIR"\npython train.py\n', job).script_path == (
        project / "train.py"
    )
    absolute = launch(f"python {project}/src/main.py\n")
    assert absolute.script_path == project / "src" / "main.py"


def test_a_job_script_object_brings_its_path(project: Path) -> None:
    path = project / "job.sh"
    path.write_text("#!/bin/bash\n#SBATCH -c 2\nsrun python train.py\n")
    found = choose_launch(find_launches(read_job(str(path))))
    assert found is not None and found.script_path == project / "train.py"
    moved = choose_launch(find_launches(read_job(str(path)), chdir="src"))
    assert moved is not None and moved.script_path == project / "train.py"  # falls back


@pytest.mark.parametrize(
    ("body", "launchers", "script", "args"),
    [
        (
            'srun bash -c \'exec kernprof -l -o "${SLURM_JOB_ID}_${SLURM_PROCID}.lprof" '
            "X.py --num-workers $((SLURM_CPUS_PER_TASK - 1))'\n",
            ["srun", "kernprof"],
            "X.py",
            ["--num-workers", "$((SLURM_CPUS_PER_TASK - 1))"],
        ),
        ("sh -c 'cd /tmp; python X.py --lr 1'\n", [], "X.py", ["--lr", "1"]),
        (
            "torchrun --standalone --nproc-per-node=2 --no-python bash -c "
            "'exec kernprof -l -o ${RANK}.lprof X.py --epochs 2'\n",
            ["torchrun", "kernprof"],
            "X.py",
            ["--epochs", "2"],
        ),
        ('"${watch[@]}" srun python X.py -v\n', ["srun"], "X.py", ["-v"]),
        (
            "srun sh -c 'exec python X.py \"$@\"' sh --data-dir d --num-workers 3\n",
            ["srun"],
            "X.py",
            ["--data-dir", "d", "--num-workers", "3"],
        ),
        ("bash -c 'python X.py $2' bash a b c\n", [], "X.py", ["b"]),
        (  # single quotes keep `\<newline>`: the inner shell joins the lines (Mila's docs)
            "srun bash -c 'accelerate launch \\\n    --machine_rank=$SLURM_NODEID \\\n"
            "    --num_machines='$N' \\\n    main.py --lr 1'\n",
            ["srun", "accelerate launch"],
            "main.py",
            ["--lr", "1"],
        ),
        ("$PROFILER python X.py\n", [], "X.py", []),
        (
            "tuneadvisor watch --headless --record m.jsonl -- python X.py --b 2\n",
            [],
            "X.py",
            ["--b", "2"],
        ),
    ],
)
def test_commands_inside_shell_strings_and_wrappers(
    body: str, launchers: list[str], script: str, args: list[str]
) -> None:
    found = launch(body)
    assert names(found) == launchers
    assert found.script == script
    assert list(found.args) == args


def test_bash_without_a_command_string_is_not_training() -> None:
    assert choose_launch(find_launches("#!/bin/bash\nbash setup.sh\nsh -c 'echo hi'\n")) is None


REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["mnist_single", "mnist_ddp", "mnist_torchrun", "cifar100_wrn"])
def test_bundled_job_scripts_name_their_training_script(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # `sbatch slurm/X.sbatch` from the project: `training/X.py` is relative to the project,
    # the job script's parent, wherever `report` is run from.
    monkeypatch.chdir(tmp_path)
    job = REPO_ROOT / "slurm" / f"{name}.sbatch"
    found = choose_launch(find_launches(job.read_text(), job))
    assert found is not None
    assert found.script == f"training/{name}.py"
    assert found.script_path == REPO_ROOT / "training" / f"{name}.py"
    assert "--num-workers" in found.options  # the arguments too, also through "$@"


# --------------------------------------------------------------------------- editing


def edited_body(body: str, option: str, value: str) -> str | None:
    job = JobScript.parse("#!/bin/bash\n#SBATCH -c 4\n" + body)
    found = choose_launch(find_launches(job))
    assert found is not None, body
    result = set_option(job, found, option, value)
    return None if result is None else result.render_text().split("\n", 2)[2]


@pytest.mark.parametrize(
    ("body", "tuned"),
    [
        ("python X.py --num-workers 1 --epochs 3\n", "python X.py --num-workers 3 --epochs 3\n"),
        ("python X.py --num-workers=1\n", "python X.py --num-workers=3\n"),
        ("python X.py --epochs 3   \n", "python X.py --epochs 3 --num-workers 3\n"),
        # continuation lines, CRLF kept: only the value's bytes change
        (
            "srun python X.py \\\r\n  --num-workers 1 \\\r\n  --epochs 3\r\n",
            "srun python X.py \\\r\n  --num-workers 3 \\\r\n  --epochs 3\r\n",
        ),
        (
            "srun python X.py \\\n  --epochs 3\n",
            "srun python X.py \\\n  --epochs 3 --num-workers 3\n",
        ),
        # inside bash -c: the closing quote and "$@" stay
        (
            "srun bash -c 'exec python X.py --num-workers 1 \"$@\"' sh --lr 1\n",
            "srun bash -c 'exec python X.py --num-workers 3 \"$@\"' sh --lr 1\n",
        ),
        ("python X.py --tag 'a|b'\n", "python X.py --tag 'a|b' --num-workers 3\n"),
        # not safe: an arithmetic expansion, a pipe, a comment, a bash -c string's end
        ("python X.py --num-workers $((SLURM_CPUS_PER_TASK - 1))\n", None),
        ("python X.py --epochs 3 | tee log\n", None),
        ("python X.py --epochs 3  # three\n", None),
        ("srun bash -c 'exec python X.py --epochs 3'\n", None),
    ],
)
def test_set_option_on_the_model(body: str, tuned: str | None) -> None:
    assert edited_body(body, "--num-workers", "3") == tuned


@pytest.mark.parametrize(
    ("body", "tuned"),
    [
        ("python X.py --no-pin-memory --epochs 2\n", "python X.py --pin-memory --epochs 2\n"),
        ("python X.py --pin-memory\n", "python X.py --pin-memory\n"),
        ("python X.py\n", "python X.py --pin-memory\n"),
    ],
)
def test_set_flag_on_the_model(body: str, tuned: str) -> None:
    job = JobScript.parse("#!/bin/bash\n" + body)
    found = choose_launch(find_launches(job))
    assert found is not None
    result = set_flag(job, found, "--pin-memory", {"--no-pin-memory"})
    assert result is not None and result.render_text() == "#!/bin/bash\n" + tuned


# ------------------------------------------------------------------ real job scripts

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "jobscripts"
CSC = "cscfi-pytorch-ddp-examples-"


@pytest.mark.parametrize(
    ("name", "launchers", "script", "args"),
    [
        (
            f"{CSC}run-accelerate-gpu8.sh",
            ["srun", "singularity_wrapper exec", "accelerate launch"],
            "mnist_accelerate.py",
            ["--epochs=100"],
        ),
        (
            f"{CSC}run-accelerate-gpu4.sh",
            ["srun", "apptainer_wrapper exec", "accelerate launch"],
            "mnist_accelerate.py",
            ["--epochs=100"],
        ),
        (
            f"{CSC}run-deepspeed-gpu4.sh",
            ["srun", "singularity_wrapper exec", "deepspeed"],
            "mnist_deepspeed.py",
            ["--epochs=100", "--deepspeed", "--deepspeed_config", "ds_config.json"],
        ),
        (
            f"{CSC}run-ddp-gpu4.sh",
            ["srun", "torchrun"],
            "mnist_ddp.py",
            ["--epochs=100"],
        ),
        (
            "ds4dh-hai_project-run_controls.sh",
            ["srun", "apptainer run"],
            "run_controls.py",
            [],
        ),
        (
            "jh-lee-kr-nodestest-template.sh",
            ["python -m torch.distributed.launch"],
            "main.py",
            [],
        ),
    ],
)
def test_real_job_scripts(name: str, launchers: list[str], script: str, args: list[str]) -> None:
    found = choose_launch(find_launches(read_job(str(REAL / name))))
    assert found is not None
    assert (names(found), found.script, list(found.args)) == (launchers, script, args)


def test_a_real_job_script_whose_script_comes_from_sbatch() -> None:
    job = read_job(str(REAL / f"{CSC}run-gpu4-deepspeed-mahti.sh"))
    found = choose_launch(find_launches(job))
    assert found is not None and found.script == "$*"  # gather says it cannot follow it
    assert names(found) == ["srun", "singularity_wrapper exec", "deepspeed"]


def test_every_real_job_script_is_tested_and_listed() -> None:
    manifest = (REAL / "MANIFEST.md").read_text()
    scripts = sorted(p.name for p in REAL.glob("*.sh"))
    assert all(f"`{name}`" in manifest for name in scripts)
    # the rest have a row each in tests/process/test_realworld_jobscripts.py
    assert len(scripts) >= 40


@given(st.text(alphabet="ab$-_={}/.# \t\n\x0b\u00a0'\"\\", max_size=12))
@example("a" * 5000)
def test_unquote_without_quoting_reads_as_shlex_does(word: str) -> None:
    """unquote skips shlex (O(n^2) on a long word: a 1 MB word took 19 s) where nothing in
    the word needs it; what it returns is still what shlex's reading gives."""
    import shlex

    from tuneadvisor.slurm.launch_line.lexing import unquote

    if "$(" in word or "`" in word:
        return
    try:
        parts = shlex.split(word)
        expected = parts[0] if len(parts) == 1 else (word if parts else "")
    except ValueError:
        expected = word
    assert unquote(word) == expected
