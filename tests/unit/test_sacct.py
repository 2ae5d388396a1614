"""sacct --json and sacct -P parsing, checked against real Slurm 22.05 output and seff's numbers."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Literal

import pytest

from tuneadvisor.slurm.accounting.sacct import parse_sacct
from tuneadvisor.slurm.accounting.sacct.json_format import parse_sacct_json
from tuneadvisor.slurm.accounting.sacct.pipe_format import parse_sacct_pipe
from tuneadvisor.slurm.accounting.sacct.records import SacctError, SacctJob, select_job
from tuneadvisor.slurm.accounting.seff import parse_seff
from tuneadvisor.slurm.units import parse_duration, parse_size_mib, parse_timelimit, parse_tres

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "slurm-22.05"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def section(name: str, command: str) -> str:
    """The lines printed after ``$ <command>`` in a transcript, up to the next ``$ ``."""
    lines = fixture(name).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"$ {command}"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("$ ")), len(lines))
    return "\n".join(lines[start + 1 : end]) + "\n"


def only(jobs: tuple[SacctJob, ...]) -> SacctJob:
    assert len(jobs) == 1
    return jobs[0]


# ------------------------------------------------------------------ seff equality


def test_json_matches_seff_for_finished_job() -> None:
    job = only(parse_sacct_json(fixture("05-sacct.json")))
    seff = parse_seff(section("04-finished.txt", "seff"))
    assert job.job_id == seff.job_id == "1"
    assert job.cpu_used_s == seff.cpu_used_s == 10
    assert job.core_walltime_s == seff.core_walltime_s == 11
    assert job.cpu_efficiency_pct == pytest.approx(seff.cpu_efficiency_pct, abs=0.005)
    assert round(job.mem_peak_mib or 0, 2) == seff.mem_used_mib == 316.26
    assert job.req_mem_mib == seff.mem_requested_mib == 500.0
    assert job.mem_efficiency_pct == pytest.approx(seff.mem_efficiency_pct, abs=0.005)


def test_pipe_matches_seff_for_finished_job() -> None:
    job = only(parse_sacct_pipe(section("04-finished.txt", "sacct")))
    seff = parse_seff(section("04-finished.txt", "seff"))
    assert job.cpu_used_s == seff.cpu_used_s
    assert job.cpu_efficiency_pct == pytest.approx(seff.cpu_efficiency_pct, abs=0.005)
    assert round(job.mem_peak_mib or 0, 2) == seff.mem_used_mib
    assert job.mem_efficiency_pct == pytest.approx(seff.mem_efficiency_pct, abs=0.005)


def test_multitask_steps_match_seff_estimate() -> None:
    job = only(parse_sacct_pipe(section("06-multitask.txt", "sacct")))
    seff = parse_seff(section("06-multitask.txt", "seff"))
    assert [s.step_id for s in job.steps] == ["batch", "0", "1"]
    assert job.cores == seff.cores == 2
    assert job.cpu_used_s == seff.cpu_used_s == 3
    assert job.core_walltime_s == seff.core_walltime_s == 8
    assert job.cpu_efficiency_pct == pytest.approx(seff.cpu_efficiency_pct, abs=0.005)
    # The srun -n2 step holds the largest task peak; seff counts it once per task.
    assert job.peak_step is not None and job.peak_step.step_id == "0"
    assert job.mem_peak_mib == pytest.approx(13472 * 2 / 1024)
    assert round(job.mem_peak_mib or 0, 2) == seff.mem_used_mib == 26.31
    assert seff.mem_used_estimated and job.facts()["sacct.mem_peak_estimated"] is True
    # With the 200 MB seff read from the record, the efficiency is seff's 13.16 %.
    with_req = replace(job, req_mem_mib=seff.mem_requested_mib)
    assert with_req.mem_efficiency_pct == pytest.approx(seff.mem_efficiency_pct, abs=0.005)


def test_per_step_cpu_efficiency() -> None:
    job = only(parse_sacct_pipe(section("06-multitask.txt", "sacct")))
    step = job.step("0")
    assert step is not None
    assert (step.ntasks, step.alloc_cpus, step.elapsed_s) == (2, 2, 3.0)
    assert step.cpu_time_s == pytest.approx(3.173)
    assert step.cpu_efficiency_pct == pytest.approx(100 * 3.173 / 6)
    assert step.mem_estimate_mib == pytest.approx(13472 * 2 / 1024)
    hostname = job.step("1")
    assert hostname is not None and hostname.max_rss_mib is None


def test_oom_killed_job_memory_matches_seff() -> None:
    text = "\n".join(line for line in fixture("09-oom-enforced.txt").splitlines() if "|" in line)
    job = only(parse_sacct_pipe(text))
    assert round(job.mem_peak_mib or 0, 2) == 314.88  # seff: "Memory Utilized: 314.88 MB"
    assert (job.state, job.exit_code, job.exit_signal) == ("FAILED", 0, 9)
    assert job.req_mem_mib is None  # "16?": not filled yet; seff printed "0.00 MB"
    assert "sacct.mem_efficiency_pct" not in job.facts()
    assert not job.complete and "ReqMem unknown" in job.missing


# ------------------------------------------------------------------ JSON details


def test_json_job_fields() -> None:
    job = only(parse_sacct_json(fixture("05-sacct.json")))
    assert (job.name, job.user, job.cluster, job.partition) == ("t", "root", "ci", "debug")
    assert (job.state, job.exit_code, job.exit_signal) == ("COMPLETED", 0, 0)
    assert job.elapsed_s == 11
    assert job.timelimit_s == 60  # time.limit is in minutes
    assert (job.alloc_cpus, job.alloc_nodes, job.alloc_gpus) == (1, 1, 0)
    assert (job.req_cpus, job.req_mem_mib, job.alloc_mem_mib) == (1, 500.0, 500.0)
    assert job.end_time == 1795320481
    assert job.complete and job.missing == ()


def test_json_cpu_time_sums_steps_and_adds_microseconds_as_microseconds() -> None:
    job = only(parse_sacct_json(fixture("05-sacct.json")))
    assert job.reported_cpu_time_s == 0  # the job-level total is 0 in 22.05
    step = job.step("batch")
    assert step is not None
    assert step.cpu_time_s == pytest.approx(9 + 1089288 / 1e6)  # 10.089288, not 9.1089288
    assert job.cpu_time_s == pytest.approx(10.089288)


def test_json_step_memory_from_usage_max() -> None:
    step = only(parse_sacct_json(fixture("05-sacct.json"))).step("batch")
    assert step is not None
    assert step.max_rss_mib == pytest.approx(331624448 / 1024**2)  # = 323852K as sacct -P
    assert step.total_rss_mib == pytest.approx(331624448 / 1024**2)
    assert (step.ntasks, step.alloc_cpus, step.nodes, step.name) == (1, 1, 1, "batch")


def test_json_facts() -> None:
    facts = only(parse_sacct_json(fixture("05-sacct.json"))).facts()
    assert facts["sacct.state"] == "COMPLETED"
    assert facts["sacct.elapsed_s"] == 11
    assert facts["sacct.timelimit_s"] == 60
    assert facts["sacct.cpu_efficiency_pct"] == pytest.approx(100 * 10 / 11)
    assert facts["sacct.mem_peak_mib"] == pytest.approx(316.26, abs=0.005)
    assert facts["sacct.alloc_cpus"] == 1
    assert facts["sacct.req_mem_mib"] == 500.0
    assert facts["sacct.alloc_gpus"] == 0
    assert facts["sacct.exit_code"] == 0
    assert facts["sacct.complete"] is True


def _job_json(**changes: object) -> str:
    document = json.loads(fixture("05-sacct.json"))
    document["jobs"][0].update(changes)
    return json.dumps(document)


def test_json_newer_schema_shapes() -> None:
    """Slurm 23.x+ wraps numbers and lists states; the per-CPU memory request is explicit."""
    document = json.loads(fixture("05-sacct.json"))
    job = document["jobs"][0]
    job["state"] = {"current": ["TIMEOUT"], "reason": "None"}
    job["time"]["limit"] = {"set": True, "infinite": False, "number": 30}
    job["exit_code"] = {
        "status": ["SIGNALED"],
        "return_code": {"set": True, "number": 0},
        "signal": {"id": {"set": True, "number": 15}, "name": "TERM"},
    }
    job["required"] = {
        "CPUs": 4,
        "memory_per_cpu": {"set": True, "number": 2048},
        "memory_per_node": {"set": False, "number": 0},
    }
    job["tres"]["requested"] = [t for t in job["tres"]["requested"] if t["type"] != "mem"]
    job["tres"]["allocated"] = [
        {"type": "cpu", "name": None, "id": 1, "count": 4},
        {"type": "gres", "name": "gpu", "id": 1001, "count": 2},
    ]
    job["steps"][0]["step"]["id"] = "1.batch"
    parsed = only(parse_sacct_json(json.dumps(document)))
    assert (parsed.state, parsed.timelimit_s) == ("TIMEOUT", 1800)
    assert (parsed.exit_code, parsed.exit_signal) == (0, 15)
    assert (parsed.req_mem_mib, parsed.req_mem_per) == (2048 * 4, "cpu")
    assert (parsed.alloc_cpus, parsed.alloc_gpus) == (4, 2)
    assert parsed.steps[0].step_id == "batch"


def test_json_unlimited_time_and_array_id() -> None:
    text = _job_json(array={"job_id": 40, "task_id": 3}, time={"elapsed": 5, "limit": 4294967295})
    job = only(parse_sacct_json(text))
    assert job.job_id == "40_3"
    assert job.timelimit_s is None
    assert "sacct.timelimit_s" not in job.facts()


def test_json_lagging_record() -> None:
    text = _job_json(partition="", time={"elapsed": 1, "end": 0, "limit": 1})
    job = only(parse_sacct_json(text))
    assert not job.complete
    assert job.missing == ("partition empty", "end time unknown")


def test_json_running_job_is_not_complete() -> None:
    job = only(parse_sacct_json(_job_json(state={"current": "RUNNING", "reason": "None"})))
    assert job.missing[0] == "state RUNNING"
    assert job.facts()["sacct.complete"] is False


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not JSON"),
        ('{"meta": {}}', "no 'jobs' list"),
        ('{"jobs": [{"name": "x", "steps": []}]}', "jobs[0]: no job_id"),
        (_job_json(time={"elapsed": "eleven"}), "jobs[0].time.elapsed: 'eleven' is not a number"),
    ],
)
def test_json_bad_input(text: str, message: str) -> None:
    with pytest.raises(SacctError, match=re.escape(message)):
        parse_sacct_json(text)


def test_parse_sacct_tells_json_from_pipe() -> None:
    assert only(parse_sacct(fixture("05-sacct.json"))).job_id == "1"
    assert only(parse_sacct(section("04-finished.txt", "sacct"))).job_id == "1"


# ------------------------------------------------------------------ pipe details


def test_pipe_failures_states_exit_codes_timelimits() -> None:
    text = "\n".join(fixture("08-failures.txt").splitlines()[1:-1])
    jobs = {job.job_id: job for job in parse_sacct_pipe(text)}
    assert list(jobs) == ["7", "8", "9", "10"]
    assert (jobs["7"].state, jobs["7"].exit_code, jobs["7"].exit_signal) == ("FAILED", 3, 0)
    assert (jobs["8"].state, jobs["8"].elapsed_s, jobs["8"].timelimit_s) == ("TIMEOUT", 74, 60)
    batch = jobs["8"].step("batch")
    assert batch is not None and (batch.state, batch.exit_signal) == ("CANCELLED", 15)
    assert (jobs["9"].state, jobs["9"].state_detail, jobs["9"].steps) == ("CANCELLED", "by 0", ())
    assert jobs["9"].timelimit_s == 300
    assert jobs["10"].req_mem_mib == 100.0
    assert jobs["10"].mem_peak_mib == pytest.approx(322540 / 1024)
    assert jobs["10"].mem_efficiency_pct == pytest.approx(100 * 322540 / 1024 / 100)
    assert all(job.complete for job in jobs.values())
    # elapsed 0 -> no efficiency (not 0 %): seff's 0.00 % there means "no data".
    assert "sacct.cpu_efficiency_pct" not in jobs["7"].facts()


def test_pipe_alloc_tres_gpus_and_lag() -> None:
    lines = fixture("07-gpu1.txt").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("JobID|"))
    job = only(parse_sacct_pipe("\n".join(lines[start : start + 2])))
    assert (job.alloc_gpus, job.alloc_cpus, job.alloc_nodes, job.alloc_mem_mib) == (1, 1, 1, 100)
    assert job.facts()["sacct.alloc_gpus"] == 1
    assert job.missing == ("partition empty",)  # printed right after the job ended


LAG_HEADER = "JobID|State|AllocTRES|ReqMem|Partition|Elapsed"


def _lag_reads(job_id: int) -> tuple[str, str]:
    """The first and the final read of one job in 10-sacct-lag.txt, as sacct -P output."""
    text = fixture("10-sacct-lag.txt")
    line = next(x for x in text.splitlines() if x.startswith(f"job {job_id}:"))
    first = line.split("first read: '")[1].split("'")[0]
    final = line.split("final: '")[1].split("'")[0]
    return f"{LAG_HEADER}\n{job_id}|{first}\n", f"{LAG_HEADER}\n{job_id}|{final}\n"


def test_lagging_record_then_complete() -> None:
    first, final = (only(parse_sacct_pipe(t)) for t in _lag_reads(21))
    assert not first.complete
    assert first.missing == ("partition empty", "ReqMem unknown")
    assert first.req_mem_mib is None  # "16?"
    assert final.complete and final.partition == "debug" and final.req_mem_mib == 20


def test_record_complete_at_first_read() -> None:
    first, _ = (only(parse_sacct_pipe(t)) for t in _lag_reads(20))
    assert first.complete


def test_pipe_parsable_with_trailing_bar_and_empty_last_value() -> None:
    text = "JobID|State|MaxRSS|\n5|COMPLETED||\n5.batch|COMPLETED|1G|\n"
    job = only(parse_sacct_pipe(text))
    assert job.mem_peak_mib == 1024
    text = "JobID|State|MaxRSS\n5|COMPLETED|\n"  # -P: an empty last value stays a field
    assert only(parse_sacct_pipe(text)).state == "COMPLETED"


def test_pipe_without_header_needs_columns() -> None:
    text = "12|COMPLETED|00:01:00\n12.batch|COMPLETED|00:01:00\n"
    job = only(parse_sacct_pipe(text, columns=["JobID", "State", "Elapsed"]))
    assert (job.elapsed_s, len(job.steps)) == (60, 1)
    with pytest.raises(SacctError, match=r"line 1: a job's record where the header belongs"):
        parse_sacct_pipe(text)
    with pytest.raises(SacctError, match="no JobID or JobIDRaw column"):
        parse_sacct_pipe("State|Elapsed\nCOMPLETED|00:01:00\n")


def test_pipe_old_reqmem_suffixes_per_node_and_per_cpu() -> None:
    header = "JobID|ReqMem|AllocCPUS|NNodes|State"
    per_cpu = only(parse_sacct_pipe(f"{header}\n1|2Gc|4|1|COMPLETED\n"))
    assert (per_cpu.req_mem_mib, per_cpu.req_mem_per) == (8192, "cpu")
    per_node = only(parse_sacct_pipe(f"{header}\n1|4000Mn|8|2|COMPLETED\n"))
    assert (per_node.req_mem_mib, per_node.req_mem_per) == (8000, "node")


def test_array_and_orphan_steps() -> None:
    text = "JobID|State\n7_1|COMPLETED\n7_1.batch|COMPLETED\n8.batch|RUNNING\n"
    jobs = parse_sacct_pipe(text)
    assert [j.job_id for j in jobs] == ["7_1", "8"]
    assert jobs[1].missing == ("state unknown", "job line missing")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the file is empty"),
        ("       JobID    JobName\n------------ ----------\n", "line 1: columns aligned by spaces"),
        ("JobId=5 JobName=x\n   UserId=a(1)\n", "line 1: this is scontrol show job output"),
        ("Job ID: 5\nCluster: c\n", "line 1: this is seff output"),
        ("hello\n", "line 1: no '|' between fields"),
        ("JobID|State\n1|COMPLETED|extra\n", r"line 2: 3 fields where the header has 2"),
        ("JobID|Elapsed\n1|eleven\n", r"line 2, job 1: 'eleven' is not a duration"),
        ("JobID|MaxRSS\n1.batch|lots\n", r"line 2, step batch: 'lots' is not a size"),
        ("JobID|ExitCode\n1|x:y\n", r"line 2, job 1: 'x:y' is not an exit code"),
        ("JobID|AllocCPUS\n1|two\n", r"'two' is not a whole number"),
        ("JobID|State\n|COMPLETED\n", "line 2: empty JobID"),
        ("JobID|AllocTRES\n1|cpu\n", "'cpu' in TRES 'cpu' is not name=value"),
    ],
)
def test_pipe_bad_input(text: str, message: str) -> None:
    with pytest.raises(SacctError, match=message):
        parse_sacct_pipe(text)


# ------------------------------------------------------------------ values


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("00:10.089", 10.089),
        ("59:59.999", 3599.999),
        ("00:00:11", 11),
        ("01:02:03", 3723),
        ("1-00:00:00", 86400),
        ("2-03:04:05", 2 * 86400 + 3 * 3600 + 4 * 60 + 5),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


def test_parse_timelimit() -> None:
    assert parse_timelimit("00:01:00") == 60
    assert parse_timelimit("1-00:00:00") == 86400
    assert parse_timelimit("UNLIMITED") is None
    assert parse_timelimit("Partition_Limit") is None
    assert parse_timelimit("INFINITE") is None  # sinfo's word, read by the same function


@pytest.mark.parametrize(
    ("text", "bare", "mib"),
    [
        ("323852K", "", 323852 / 1024),
        ("500M", "M", 500.0),
        ("1.50G", "M", 1536.0),
        ("2T", "M", 2 * 1024**2),
        ("1048576", "", 1.0),  # MaxRSS without suffix: bytes
        ("500", "M", 500.0),  # ReqMem without suffix: MiB
    ],
)
def test_parse_size_mib(text: str, bare: Literal["", "K", "M"], mib: float) -> None:
    assert parse_size_mib(text, bare) == pytest.approx(mib)


@pytest.mark.parametrize("text", ["16?", "", "  "])
def test_unknown_size_is_none(text: str) -> None:
    assert parse_size_mib(text, "M") is None


def test_parse_tres() -> None:
    tres = parse_tres("billing=1,cpu=8,gres/gpu=2,gres/gpu:a100=2,mem=64G,node=1")
    assert tres == {
        "billing": 1,
        "cpu": 8,
        "gres/gpu": 2,
        "gres/gpu:a100": 2,
        "mem": 65536,
        "node": 1,
    }


def test_select_job() -> None:
    jobs = parse_sacct_pipe("\n".join(fixture("08-failures.txt").splitlines()[1:-1]))
    assert select_job(jobs, "9").state == "CANCELLED"
    with pytest.raises(SacctError, match=r"4 jobs in the sacct output \(7, 8, 9, 10\)"):
        select_job(jobs)
    with pytest.raises(SacctError, match="no job 99"):
        select_job(jobs, "99")


# ------------------------------------------------------------------ issue 11: other shapes


def test_pipe_keyed_on_jobidraw() -> None:
    """Princeton's jobstats asks for JobIDRaw, NCPUS, ReqMem, ElapsedRaw, TimelimitRaw (-X)."""
    text = (
        "JobIDRaw|State|NNodes|NCPUS|ReqMem|ElapsedRaw|TimelimitRaw|Partition\n"
        "1853|COMPLETED|1|4|16G|3600|120|gpu\n"
    )
    job = only(parse_sacct_pipe(text))
    assert (job.job_id, job.alloc_cpus, job.alloc_nodes) == ("1853", 4, 1)
    assert (job.elapsed_s, job.timelimit_s, job.req_mem_mib) == (3600, 7200, 16384)
    both = "JobID|JobIDRaw|State\n7_2|9|COMPLETED\n7_2.batch|9.batch|COMPLETED\n"
    assert only(parse_sacct_pipe(both)).job_id == "7_2"  # JobID wins: it keeps the array form


def test_json_empty_allocated_falls_back_to_requested() -> None:
    document = json.loads(fixture("05-sacct.json"))
    job = document["jobs"][0]
    job["tres"]["allocated"] = []
    job["tres"]["requested"] = [
        {"type": "cpu", "name": None, "id": 1, "count": 8},
        {"type": "mem", "name": None, "id": 2, "count": 4096},
        {"type": "node", "name": None, "id": 4, "count": 2},
        {"type": "gres", "name": "gpu", "id": 1001, "count": 1},
    ]
    parsed = only(parse_sacct_json(json.dumps(document)))
    assert (parsed.alloc_cpus, parsed.alloc_mem_mib, parsed.alloc_gpus) == (8, 4096, 1)
    assert parsed.req_mem_mib == 4096
    job["tres"]["requested"] = []
    job["required"] = {"CPUs": 6, "memory_per_node": {"set": True, "number": 1000}}
    job["allocation_nodes"] = 2
    parsed = only(parse_sacct_json(json.dumps(document)))
    assert (parsed.alloc_cpus, parsed.req_mem_mib, parsed.req_mem_per) == (6, 2000, "node")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (fixture("03-squeue.json"), "this is squeue or scontrol --json, not sacct --json"),
        ('{"jobs": [{"job_id": 1}]}', "jobs[0] has no steps or time: not the output of sacct"),
        ('{"jobs": [3]}', "jobs[0] is not an object"),
        (section("11-scontrol-show-job.txt", "scontrol show job"), "scontrol show job output"),
        ("", "the file is empty"),
        ("\n\n", "the file is empty"),
    ],
)
def test_not_sacct_is_refused(text: str, message: str) -> None:
    with pytest.raises(SacctError, match=re.escape(message)):
        parse_sacct(text)


def test_many_jobs_message_names_jobid_and_shortens() -> None:
    text = "JobID|State\n" + "".join(f"{n}|COMPLETED\n" for n in range(100, 120))
    jobs = parse_sacct_pipe(text)
    with pytest.raises(SacctError) as err:
        select_job(jobs)
    assert str(err.value) == (
        "20 jobs in the sacct output (100, 101, 102, 103, 104 and 15 more): choose one with --jobid"
    )
    with pytest.raises(SacctError, match=r"no job 99 in the sacct output \(it has 100, 101"):
        select_job(jobs, "99")


HET = """\
JobID|State|AllocCPUS|NNodes|ReqMem|Elapsed|TotalCPU|MaxRSS|NTasks
1853+0|COMPLETED|4|1|4G|00:10:00|00:20:00||
1853+0.batch|COMPLETED|4|1||00:10:00|00:20:00|1000M|1
1853+1|COMPLETED|8|2|8G|00:10:00|01:00:00||
1853+1.0|COMPLETED|8|2||00:09:00|01:00:00|3000M|2
1854_4|FAILED|2|1|1G|00:01:00|00:00:30||
1854_4.batch|FAILED|2|1||00:01:00|00:00:30|10M|1
"""


def test_het_components_are_one_job_by_base_id() -> None:
    jobs = parse_sacct_pipe(HET)
    assert [j.job_id for j in jobs] == ["1853+0", "1853+1", "1854_4"]
    job = select_job(jobs, "1853")
    assert (job.job_id, job.alloc_cpus, job.alloc_nodes, job.req_mem_mib) == ("1853", 12, 3, 12288)
    assert (job.cpu_used_s, job.core_walltime_s) == (4800, 7200)
    assert job.mem_peak_mib == 6000  # 3000M x 2 tasks of component 1's step
    assert select_job(jobs, "1853+1").alloc_cpus == 8  # a component asked for by name
    assert select_job(jobs, "1854_4").state == "FAILED"
    assert select_job(jobs, "1854").job_id == "1854_4"  # the only task of array 1854 here
    with pytest.raises(SacctError, match=r"2 jobs in the sacct output \(1853, 1854_4\)"):
        select_job(jobs)
    assert select_job(parse_sacct_pipe("\n".join(HET.splitlines()[:5]))).job_id == "1853"


def test_array_base_with_several_tasks_asks_which() -> None:
    text = "JobID|State\n7_1|COMPLETED\n7_2|FAILED\n"
    with pytest.raises(SacctError, match=r"job 7 is an array of 2 tasks .*--jobid 7_1"):
        select_job(parse_sacct_pipe(text), "7")


def test_json_het_component_ids() -> None:
    text = _job_json(het={"job_id": 1853, "job_offset": 1})
    assert only(parse_sacct_json(text)).job_id == "1853+1"
    plain = _job_json(het={"job_id": 0, "job_offset": {"set": False, "number": 0}})
    assert only(parse_sacct_json(plain)).job_id != "0+0"


# ------------------------------------------------------------------ real-world outputs

REALWORLD = Path(__file__).resolve().parent.parent / "fixtures" / "realworld" / "accounting"


def realworld(name: str) -> str:
    return (REALWORLD / name).read_text(encoding="utf-8")


def test_realworld_torchx_het_job_is_one_job() -> None:
    jobs = parse_sacct(realworld("torchx-sacct-het-1853.txt"))
    assert [j.job_id for j in jobs] == ["1853+0", "1853+1", "1853+2"]
    for job in (select_job(jobs), select_job(jobs, "1853")):
        assert (job.job_id, job.state, job.exit_code, job.alloc_cpus) == ("1853", "COMPLETED", 0, 3)
        assert job.elapsed_s is None and job.cpu_efficiency_pct is None
        assert job.mem_peak_mib is None
    assert select_job(jobs, "1853+2").name == "echo-2"


def test_realworld_torchx_cancelled_job() -> None:
    job = select_job(parse_sacct(realworld("torchx-sacct-cancelled-89.txt")), "89")
    assert (job.state, job.state_detail, job.alloc_cpus) == ("CANCELLED", "by 2166", 8)
    assert (job.exit_code, job.exit_signal, job.elapsed_s) == (0, 0, None)
    batch = job.step("batch")
    assert batch is not None and (batch.state, batch.exit_signal) == ("CANCELLED", 15)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "torchx-slurm-squeue-output.json",
            "jobs[0] has job_state but no steps or time: this is squeue or scontrol --json,"
            " not sacct --json",
        ),
        (
            "hb-jobinfo-sacct.txt",
            "line 1: fields separated by '☃', not '|': print it with sacct -P, without"
            " --delimiter or -n (--noheader)",
        ),
    ],
)
def test_realworld_outputs_refused_with_one_line(name: str, message: str) -> None:
    with pytest.raises(SacctError) as err:
        parse_sacct(realworld(name))
    assert str(err.value) == message
