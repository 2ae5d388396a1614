"""The job-script readers of issue 20's launch mistakes: a launch started with ``&`` that
nothing waits for, an ``--array`` past the literal list its tasks index, and the tasks
srun's own line asks for on each node."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tuneadvisor.slurm.jobscript.array_range import array_task_ids, indexed_list
from tuneadvisor.slurm.jobscript.facts import job_facts
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.slurm.launch_line.background import unwaited_launches
from tuneadvisor.slurm.launch_line.choose import choose_launch
from tuneadvisor.slurm.launch_line.search import find_launches
from tuneadvisor.slurm.launch_line.step_tasks import srun_tasks_per_node

HEAD = "#!/bin/bash\n#SBATCH --gres=gpu:4\n"


def _job(body: str, head: str = HEAD) -> JobScript:
    return JobScript.parse(head + body)


def _unwaited(body: str) -> list[int]:
    job = _job(body)
    return [launch.line for launch in unwaited_launches(job, find_launches(job))]


# ------------------------------------------------------------------------ background launches


@pytest.mark.parametrize(
    ("body", "lines"),
    [
        ("python train.py > log 2>&1 &\n", [3]),
        ("nohup python train.py --lr 0.1 &\necho started\n", [3]),
        ("srun python train.py &\nsrun python train.py --seed 2 &\n", [3, 4]),
        ("for i in 0 1 2 3; do\n  CUDA_VISIBLE_DEVICES=$i python train.py &\ndone\n", [4]),
        ("srun \\\n  python train.py &\n", [3]),
        ("python train.py &\nwait\n", []),
        ("python train.py &\nPID=$!\nwait $PID\n", []),
        ("python train.py &\nwhile kill -0 $!; do sleep 60; done\n", []),
        ("python train.py &\ntail -f log\n", []),
        ("python prepare_data.py &\nsrun python train.py\n", []),  # the training keeps bash
        ("nvidia-smi -l 1 > smi.csv &\nsrun python train.py\n", []),  # a sampler, no launch
        ("srun python train.py\nnvidia-smi -l 1 > smi.csv &\n", []),
        ("python train.py\n", []),
        ("python train.py && echo done\n", []),
        ("python train.py &\nsleep 5 &\n", [3]),  # a sleep in the background waits for nothing
    ],
)
def test_a_launch_nothing_waits_for(body: str, lines: list[int]) -> None:
    assert _unwaited(body) == lines


_STEPS = st.lists(st.sampled_from(["bg", "fg", "wait", "echo", "sampler"]), max_size=8)
_TEXT = {
    "bg": "srun python train.py --part {n} &",
    "fg": "srun python train.py --part {n}",
    "wait": "wait",
    "echo": "echo step {n}",
    "sampler": "nvidia-smi -l 1 >> gpu{n}.csv &",
}


@given(steps=_STEPS)
def test_a_background_launch_is_flagged_exactly_when_nothing_later_blocks(
    steps: list[str],
) -> None:
    body = "".join(_TEXT[step].format(n=n) + "\n" for n, step in enumerate(steps))
    expected = [
        n + 3
        for n, step in enumerate(steps)
        if step == "bg" and not any(later in ("fg", "wait") for later in steps[n + 1 :])
    ]
    assert _unwaited(body) == expected


def test_job_facts_name_the_lines() -> None:
    job = _job("module load pytorch\nsrun python train.py --a &\nsrun python train.py --b &\n")
    facts = job_facts(job, choose_launch(find_launches(job)))
    assert facts["job.background_launches"] == 2
    assert facts["job.background_launch.lines"] == (
        "line 4: srun python train.py --a &; line 5: srun python train.py --b &"
    )


# ------------------------------------------------------------------------------ array ranges


@given(
    parts=st.lists(
        st.tuples(st.integers(0, 500), st.integers(0, 60), st.integers(1, 7)),
        min_size=1,
        max_size=4,
    ),
    throttle=st.one_of(st.none(), st.integers(1, 20)),
)
def test_array_task_ids_are_slurms_ranges(
    parts: list[tuple[int, int, int]], throttle: int | None
) -> None:
    text = ",".join(f"{a}-{a + span}:{step}" for a, span, step in parts)
    text += f"%{throttle}" if throttle is not None else ""
    expected = [i for a, span, step in parts for i in range(a, a + span + 1, step)]
    assert array_task_ids(text) == expected


@pytest.mark.parametrize("value", ["", "a-b", "5-1", "0-15:0", "$N", "0-", "0-2000000"])
def test_array_values_that_are_no_plain_numbers(value: str) -> None:
    assert array_task_ids(value) is None


@pytest.mark.parametrize(
    ("body", "found"),
    [
        ("files=(a b c)\npython t.py ${files[$SLURM_ARRAY_TASK_ID]}\n", ("files", 3, 3, 0)),
        ("f=(a b c)\npython t.py ${f[${SLURM_ARRAY_TASK_ID}]}\n", ("f", 3, 3, 0)),
        ("f=(a b c)\npython t.py ${f[SLURM_ARRAY_TASK_ID]}\n", ("f", 3, 3, 0)),
        ("f=(a b c)\npython t.py ${f[$((SLURM_ARRAY_TASK_ID - 1))]}\n", ("f", 3, 3, -1)),
        ("f=(a b c)\npython t.py ${f[$SLURM_ARRAY_TASK_ID-1]}\n", ("f", 3, 3, -1)),
        (  # over lines, with comments and a quoted element holding a blank
            "lrs=(\n  0.1   # large\n  '1e-3 x'\n  \"$BASE\"\n)\n"
            "python t.py ${lrs[$SLURM_ARRAY_TASK_ID]}\n",
            ("lrs", 3, 3, 0),
        ),
        ("declare -a f=(a b)\npython t.py ${f[$SLURM_ARRAY_TASK_ID]}\n", ("f", 2, 3, 0)),
    ],
)
def test_a_literal_list_indexed_by_the_task_id(body: str, found: tuple[str, int, int, int]) -> None:
    listed = indexed_list(_job(body))
    assert listed is not None
    assert (listed.name, listed.size, listed.line, listed.offset) == found


@pytest.mark.parametrize(
    "body",
    [
        "files=(data/*.csv)\npython t.py ${files[$SLURM_ARRAY_TASK_ID]}\n",  # a glob
        "files=($LIST)\npython t.py ${files[$SLURM_ARRAY_TASK_ID]}\n",  # splits into any
        "files=($(ls data))\npython t.py ${files[$SLURM_ARRAY_TASK_ID]}\n",
        "files=(f{1..9}.csv)\npython t.py ${files[$SLURM_ARRAY_TASK_ID]}\n",  # braces
        "files=(a b)\nfiles+=(c)\npython t.py ${files[$SLURM_ARRAY_TASK_ID]}\n",
        "files=(a b)\nfiles[5]=z\npython t.py ${files[$SLURM_ARRAY_TASK_ID]}\n",
        "files=(a)\nfiles=(a b c d)\npython t.py ${files[$SLURM_ARRAY_TASK_ID]}\n",
        "mapfile -t files < list.txt\npython t.py ${files[$SLURM_ARRAY_TASK_ID]}\n",
        "i=$SLURM_ARRAY_TASK_ID\nfiles=(a b)\npython t.py ${files[$i]}\n",  # not the id itself
        "files=(a b)\npython t.py ${files[$SLURM_ARRAY_TASK_ID * 2]}\n",
        "files=(a b)\npython t.py ${files[0]}\n",
    ],
)
def test_lists_that_do_not_read_for_sure_are_not_judged(body: str) -> None:
    assert indexed_list(_job(body)) is None


def test_array_facts() -> None:
    head = "#!/bin/bash\n#SBATCH --array=0-15%4\n"
    job = _job("files=(a b c)\npython train.py ${files[$SLURM_ARRAY_TASK_ID]}\n", head)
    facts = job_facts(job, choose_launch(find_launches(job)))
    assert facts["job.array.max_task_id"] == 15
    assert (facts["job.array.list_size"], facts["job.array.list_offset"]) == (3, 0)
    assert facts["job.array.list"] == "files (line 3, 3 elements)"


# ------------------------------------------------------------------------ srun's tasks per node


@pytest.mark.parametrize(
    ("srun", "nodes", "per_node"),
    [
        ("srun", 2, 0),
        ("srun --ntasks-per-node=8", 1, 8),
        ("srun --ntasks-per-node 8", 1, 8),
        ("srun -n 8", 2, 4),
        ("srun -n8", 1, 8),
        ("srun --ntasks=8 -N 4", 1, 2),
        ("srun -n 6 --nodes=2-4", 1, 3),
        ("srun -n $SLURM_NTASKS", 2, 0),  # the job's own count
        ("srun --ntasks=${SLURM_NTASKS}", 2, 0),
        ("srun -n $WORLD", 1, None),  # only running would tell
    ],
)
def test_srun_tasks_per_node(srun: str, nodes: int, per_node: int | None) -> None:
    launch = choose_launch(find_launches(_job(f"{srun} python train.py\n")))
    assert launch is not None
    assert srun_tasks_per_node(launch, nodes) == per_node


def test_no_srun_no_count_of_its_own() -> None:
    launch = choose_launch(find_launches(_job("torchrun --nproc-per-node=4 train.py\n")))
    assert launch is not None and srun_tasks_per_node(launch, 1) == 0


@pytest.mark.parametrize(("directive", "count"), [("", 0), ("#SBATCH --ntasks-per-gpu=2\n", 2)])
def test_ntasks_per_gpu_is_always_a_fact(directive: str, count: int) -> None:
    job = _job("srun python train.py\n", HEAD + directive)
    assert job_facts(job, choose_launch(find_launches(job)))["job.ntasks_per_gpu"] == count
