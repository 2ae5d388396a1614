"""The parsers `watch --job` uses, on real Slurm 22.05 output (tests/fixtures/slurm-local):
`scontrol listpids`, where a job runs (`scontrol show job`, `show hostnames`), and srun's
`--label` output put back together per task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tuneadvisor.slurm.client.listpids import ListpidsError, StepPid, parse_listpids
from tuneadvisor.slurm.client.placement import (
    JobArrayError,
    parse_hostnames,
    parse_placement,
    simple_names,
)
from tuneadvisor.watch.remote import LabelledLines

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slurm-local"


def output(name: str, number: int = 0) -> str:
    """The output of the NUMBERth command in a fixture (between `$ ...` and `[exit N]`)."""
    blocks: list[list[str]] = []
    for line in (FIXTURES / name).read_text().splitlines():
        if line.startswith("$ "):
            blocks.append([])
        elif line.startswith("[exit "):
            blocks[-1].append("\0")  # the end
        elif blocks and (not blocks[-1] or blocks[-1][-1] != "\0"):
            blocks[-1].append(line)
    return "\n".join(line for line in blocks[number] if line != "\0") + "\n"


def test_listpids_of_a_running_job() -> None:
    rows = parse_listpids(output("listpids-running.txt"))
    assert len(rows) == 8
    assert rows[0] == StepPid(pid=31883, job_id="144", step="batch", local_id=0)
    assert [r.pid for r in rows if r.task] == [31883, 31904]  # the batch script, step 0's task
    assert {r.step for r in rows} == {"batch", "0"}
    assert rows[1] == StepPid(pid=31900, job_id="144", step="batch", local_id=None)


def test_listpids_of_a_job_with_no_step_here_is_the_header_alone() -> None:
    assert parse_listpids(output("listpids-unknown.txt")) == ()


def test_a_task_not_started_yet_is_left_out() -> None:
    assert parse_listpids(output("listpids-starting.txt")) == ()


def test_an_overlap_step_lists_itself() -> None:
    text = output("listpids-overlap.txt")
    rows = parse_listpids(text.split("\n", 1)[1])  # after the SLURM_STEP_ID=1 line
    assert [(r.pid, r.step) for r in rows if r.step == "1"] == [(31943, "1")]


def test_not_a_listpids_table() -> None:
    with pytest.raises(ListpidsError, match="no PID JOBID STEPID header"):
        parse_listpids("JobId=1 JobState=RUNNING\n")
    with pytest.raises(ListpidsError, match="line 2: not a PID row"):
        parse_listpids("PID      JOBID    STEPID   LOCALID GLOBALID\nabc 1 batch 0 0\n")


def test_placement_of_a_running_job() -> None:
    placed = parse_placement(output("scontrol-show-job-running.txt"))
    assert (placed.job_id, placed.state, placed.node_list, placed.batch_host) == (
        "144",
        "RUNNING",
        "vm",
        "vm",
    )
    assert placed.info.cpus_per_task == 1 and placed.info.mem_per_node_mib == 200.0


def test_a_job_array_id_is_no_one_job() -> None:
    with pytest.raises(JobArrayError) as caught:
        parse_placement(output("scontrol-show-job-array.txt"))
    assert (
        str(caught.value)
        == "a job array of 2 tasks: give one task, 205_2 (running), 205_1 (running)"
    )


def test_a_pending_job_has_no_nodes_yet() -> None:
    placed = parse_placement(output("pending.txt"))
    assert (placed.state, placed.info.reason, placed.node_list) == (
        "PENDING",
        "JobHeldUser",
        None,
    )
    srun = output("pending.txt", 1)
    assert "Job is pending execution" in srun  # what srun --overlap says for it


def test_node_lists() -> None:
    assert parse_hostnames(output("hostnames.txt")) == (
        "gpu01",
        "gpu02",
        "gpu03",
        "gpu07",
        "login1",
        "n9",
        "n10",
    )
    assert simple_names("vm") == ("vm",)
    assert simple_names("a1,b2") == ("a1", "b2")
    assert simple_names("gpu[01-03]") is None  # Slurm expands that one


def test_srun_label_pieces_become_whole_lines_again() -> None:
    lines = LabelledLines()
    got = [lines.feed(line) for line in output("srun-label-long-lines.txt").splitlines()]
    whole = [(task, item) for task, item in got if item is not None]
    assert [task for task, _ in whole] == [0, 0]
    first, second = (item for _, item in whole)
    assert isinstance(first, dict) and first["task"] == 0 and len(first["pad"]) == 2500
    assert second == {"task": 0, "short": 1}
    assert sum(1 for _, item in got if item is None) == 2  # two pieces waited for the rest


def test_labelled_lines_of_two_tasks_interleaved() -> None:
    """Pieces of two tasks' long lines arriving alternately (several nodes on one srun)."""
    one = json.dumps({"node": "a", "pad": "x" * 1500})
    two = json.dumps({"node": "b", "pad": "y" * 1500})
    lines = LabelledLines()
    fed = [
        f"0: {one[:1024]}",
        f"1: {two[:1024]}",
        f"1: {two[1024:]}",
        f"0: {one[1024:]}",
        "1: Traceback (most recent call last):",
        "srun: Job step aborted",
    ]
    got = [lines.feed(line) for line in fed]
    assert got[0] == (0, None) and got[1] == (1, None)
    assert got[2] == (1, json.loads(two)) and got[3] == (0, json.loads(one))
    assert got[4] == (1, "Traceback (most recent call last):")
    assert got[5] == (None, "srun: Job step aborted")
