"""scontrol, sinfo and squeue output as Slurm 22.05 prints it (tests/fixtures/slurm-22.05)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuneadvisor.slurm.accounting.sacct.json_format import parse_sacct_json
from tuneadvisor.slurm.client import _stored_script
from tuneadvisor.slurm.client.scontrol import ScontrolError, parse_job, parse_records
from tuneadvisor.slurm.client.sinfo import SinfoError, default_partition, largest, parse_sinfo
from tuneadvisor.slurm.client.squeue import SqueueError, parse_squeue_json
from tuneadvisor.slurm.units import gpus_in_gres

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "slurm-22.05"


def recorded(name: str) -> dict[str, str]:
    """The fixture's outputs, keyed by the command line that printed them ("$ ...")."""
    outputs: dict[str, str] = {}
    command = None
    for line in (FIXTURES / name).read_text().splitlines(keepends=True):
        if line.startswith("$ "):
            command = line[2:].split("   #")[0].strip()
            outputs[command] = ""
        elif command is not None:
            outputs[command] += line
    return outputs


SHOW_JOB = recorded("11-scontrol-show-job.txt")


def test_finished_job() -> None:
    job = parse_job(SHOW_JOB["scontrol show job -o 4"])
    assert job.job_id == "4"
    assert job.name == "burn"
    assert job.state == "COMPLETED" and not job.active
    assert job.user == "root"
    assert job.partition == "debug"
    assert job.time_limit_s == 300
    assert job.run_time_s == 4
    assert (job.cpus_per_task, job.num_cpus, job.num_tasks, job.num_nodes) == (1, 1, 1, 1)
    assert job.mem_per_node_mib == 200 and job.mem_per_cpu_mib is None
    assert job.gpus == 0
    assert job.command == "/tmp/sl/burn.sh" and job.work_dir == "/tmp/sl"
    assert job.std_out == job.std_err == "/tmp/sl/slurm-4.out"


def test_held_gpu_job_with_a_spaced_name() -> None:
    job = parse_job(SHOW_JOB["scontrol show job -o 6"])
    assert job.name == "held gpu"  # a value with a space stays one value
    assert job.state == "PENDING" and job.active
    assert job.reason == "JobHeldUser"
    assert job.time_limit_s == 26 * 3600
    assert job.partition == "gpu"
    assert job.cpus_per_task == 2
    assert job.mem_per_cpu_mib == 300 and job.mem_per_node_mib is None
    assert job.gpus == 1
    assert job.command is None  # --wrap


def test_array_task_id() -> None:
    assert parse_job(SHOW_JOB["scontrol show job -o 7_1"]).job_id == "7_1"


def test_values_holding_equals_signs_and_spaces() -> None:
    [record] = parse_records("NodeName=vm OS=Linux 6.1 #1 SMP CfgTRES=cpu=2,mem=22899M Power=\n")
    assert record == {"NodeName": "vm", "OS": "Linux 6.1 #1 SMP", "CfgTRES": "cpu=2,mem=22899M",
                      "Power": ""}  # fmt: skip


@pytest.mark.parametrize("text", ["slurm_load_jobs error: Invalid job id specified", ""])
def test_not_a_job_record(text: str) -> None:
    with pytest.raises(ScontrolError):
        parse_job(text)


@pytest.mark.parametrize(
    ("gres", "gpus"),
    [("gpu:1", 1), ("gpu:a100:4(S:0-1)", 4), ("gres:gpu:2", 2), ("gpu:a100:2,gpu:v100:1", 3),
     ("(null)", 0), ("", 0), ("shard:8", 0)],
)  # fmt: skip
def test_gpus_in_gres(gres: str, gpus: int) -> None:
    assert gpus_in_gres(gres) == gpus


def test_sinfo_recorded() -> None:
    rows = parse_sinfo(recorded("12-sinfo.txt")["sinfo -h -o '%P|%c|%m|%G|%D|%l'"])
    assert default_partition(rows) == "debug"
    debug = largest(rows)["debug"]
    assert (debug.cpus, debug.mem_mib, debug.gpus, debug.nodes) == (2, 22899, 1, 1)
    assert debug.max_time_s is None  # infinite


def test_sinfo_keeps_the_biggest_kind_of_node() -> None:
    rows = parse_sinfo(
        "gpu|32|256000|gpu:a100:4|10|2-00:00:00\n"
        "gpu|64+|512000|gpu:a100:8(S:0-1)|2|2-00:00:00\n"
        "cpu*|128|1000000|(null)|50|1-00:00:00\n"
    )
    gpu = largest(rows)["gpu"]
    assert (gpu.cpus, gpu.mem_mib, gpu.gpus, gpu.max_time_s) == (64, 512000, 8, 172800)
    assert default_partition(rows) == "cpu"


@pytest.mark.parametrize("text", ["debug*|2|22899\n", "debug|two|22899|gpu:1|1|infinite\n"])
def test_sinfo_errors_name_the_line(text: str) -> None:
    with pytest.raises(SinfoError, match="line 1"):
        parse_sinfo(text)


def test_squeue_json_recorded() -> None:
    [job] = parse_squeue_json((FIXTURES / "03-squeue.json").read_text())
    assert (job.job_id, job.name, job.user, job.state) == ("1", "t", "root", "RUNNING")
    assert job.partition == "debug"
    assert job.time_limit_s == 60
    assert job.reason is None


def test_squeue_json_later_schemas() -> None:
    text = (
        '{"jobs": [{"job_id": 5, "job_state": ["PENDING"], "state_reason": "Resources",'
        ' "time_limit": {"set": true, "infinite": false, "number": 30}, "user_name": "al"}]}'
    )
    [job] = parse_squeue_json(text)
    assert (job.state, job.reason, job.time_limit_s) == ("PENDING", "Resources", 1800)


@pytest.mark.parametrize("text", ["not json", '{"meta": {}}'])
def test_squeue_json_errors(text: str) -> None:
    with pytest.raises(SqueueError):
        parse_squeue_json(text)


def test_script_stored_in_accounting() -> None:
    outputs = recorded("13-batch-script.txt")
    script = _stored_script(outputs["sacct -B -j 4"])
    assert script is not None and script.startswith("#!/bin/bash\n#SBATCH --job-name=burn\n")
    assert script.endswith('"\n')
    assert _stored_script(outputs["sacct -B -j 1"]) is None  # NONE: the site keeps no scripts


def test_srun_steps_have_numeric_ids_in_json() -> None:
    [job] = parse_sacct_json((FIXTURES / "15-sacct-multitask.json").read_text())
    assert [s.step_id for s in job.steps] == ["batch", "0", "1"]
    assert job.peak_step is job.step("0")
    assert job.step("0").ntasks == 2  # type: ignore[union-attr]


def test_a_cpus_per_gpu_job_ran_with_the_cores_its_script_asked_for() -> None:
    """`--gpus=1 --cpus-per-gpu=2`: slurmctld says CPUs/Task=1 but NumCPUs=2 and
    CpusPerTres=gres:gpu:2. The job ran with 2 cores per task, as its script says: no note
    that the command line overrode the script."""
    from tuneadvisor.advisor.measured_allocation import ran_differently
    from tuneadvisor.slurm.accounting.as_run import as_run_facts

    text = (FIXTURES / "18-scontrol-cpus-per-gpu.txt").read_text()
    job = parse_job(next(line for line in text.splitlines() if line.startswith("JobId=")))
    assert (job.cpus_per_task, job.num_cpus, job.cpus_per_gpu, job.gpus) == (1, 2, 2, 1)
    ran = as_run_facts(job, None)
    assert ran["job.cpus_per_task"] == 2
    assert ran_differently({"job.cpus_per_task": 2}, ran) == []
