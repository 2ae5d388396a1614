"""GPU and host evidence from accounting: jobstats' summary in AdminComment (blobs built in
its documented format, and the real ones its tests recorded), Slurm's GPU TRES (with the
real strings of Slurm's docs and CU Boulder's), End - Start for elapsed, and what the report,
the rules and the jobs table make of them."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tuneadvisor.advisor.engine import evaluate
from tuneadvisor.advisor.evidence import usage_facts
from tuneadvisor.present.jobs_table import render_rows
from tuneadvisor.slurm.accounting.jobstats import JobstatsError, is_jobstats, parse_jobstats
from tuneadvisor.slurm.accounting.sacct import parse_sacct
from tuneadvisor.slurm.accounting.sacct.gpu import accounting_gpu
from tuneadvisor.slurm.accounting.sacct.pipe_format import parse_sacct_pipe
from tuneadvisor.slurm.accounting.sacct.records import SacctError, SacctJob
from tuneadvisor.workspace.gather import gather
from tuneadvisor.workspace.inputs import Inputs
from tuneadvisor.workspace.jobs import job_row
from tuneadvisor.workspace.rule_files import default_rules_dir, load_rules

ACCOUNTING = REPO / "tests" / "fixtures" / "realworld" / "accounting"
GiB = 2**30


def blob(document: dict[str, Any], indent: int | None = 4) -> str:
    """As jobstats' report_job_json(True) writes it, with the epilog's JS1: prefix."""
    data = json.dumps(document, sort_keys=True, indent=indent).encode("ascii")
    packed = gzip.compress(data, mtime=0)  # the same bytes every run: a blob names a test
    return "JS1:" + base64.b64encode(packed).decode("ascii")


def gpu_node(utils: dict[str, float], used_gib: float = 10, cpus: int = 8) -> dict[str, Any]:
    return {
        "cpus": cpus,
        "total_time": 3600.0 * cpus / 2,  # half the cores busy over an hour
        "total_memory": 64 * GiB,
        "used_memory": 16 * GiB,
        "gpu_total_memory": {i: 80 * GiB for i in utils},
        "gpu_used_memory": {i: used_gib * GiB for i in utils},
        "gpu_utilization": utils,
    }


TWO_NODES = {
    "gpus": 4,
    "total_time": 3600,
    "nodes": {
        "gpu02": gpu_node({"2": 90.0, "3": 2.0}, used_gib=30),
        "gpu01": gpu_node({"0": 80.0, "1": 70.0}),
    },
}


def sacct_row(comment: str, state: str = "COMPLETED", tres: str = "gres/gpu=4") -> str:
    """sacct -P as jobstats asks for it (JobIDRaw, epoch Start/End, JobName last)."""
    return (
        "JobIDRaw|Start|End|AllocTRES|AdminComment|State|NCPUS|ReqMem|JobName\n"
        f"77|1700000000|1700003600|cpu=16,{tres},mem=128G,node=2|{comment}|{state}|16|128G|t\n"
    )


def only(jobs: tuple[SacctJob, ...]) -> SacctJob:
    assert len(jobs) == 1
    return jobs[0]


# ------------------------------------------------------------------ the summary


def test_summary_of_two_nodes_four_gpus() -> None:
    summary = parse_jobstats(blob(TWO_NODES))
    assert [n.name for n in summary.nodes] == ["gpu01", "gpu02"]
    assert [(g.node, g.index, g.util_pct) for g in summary.gpus] == [
        ("gpu01", "0", 80.0), ("gpu01", "1", 70.0), ("gpu02", "2", 90.0), ("gpu02", "3", 2.0),
    ]  # fmt: skip
    assert summary.gpus[2].mem_used_mib == 30 * 1024 and summary.gpus[2].mem_total_mib == 81920
    assert (summary.cores, summary.cpu_time_s) == (16, 3600 * 8.0)
    assert summary.cpu_efficiency_pct == pytest.approx(50.0)
    assert summary.mem_used_mib == 32 * 1024 and summary.mem_efficiency_pct == 25.0
    assert summary.sampling_rounds == 120  # an hour at jobstats' 30 s


def test_facts_of_a_summary() -> None:
    gpu, notes = accounting_gpu(only(parse_sacct(sacct_row(blob(TWO_NODES)))))
    assert gpu is not None and gpu.source == "jobstats" and notes == ()
    facts = gpu.facts
    assert facts["gpu.util.mean"] == pytest.approx((80 + 70 + 90 + 2) / 4)
    assert (facts["gpu.util.min_gpu_mean"], facts["gpu.idle_count"]) == (2.0, 1)
    assert (facts["gpu.count"], facts["gpu.samples"], facts["gpu.duration_s"]) == (4, 120, 3600)
    assert facts["gpu.mem_used.max_mib"] == 30 * 1024
    assert facts["gpu.mem_used.max_pct"] == pytest.approx(37.5)
    assert "gpu.util.p95" not in facts and "gpu.idle_share" not in facts  # no samples for them
    assert facts["jobstats.cpu_efficiency_pct"] == pytest.approx(50.0)
    assert "GPU 3 on gpu02: utilization mean 2.0 %" in gpu.summary


def test_the_real_summaries_of_jobstats_tests() -> None:
    text = (ACCOUNTING / "jobstats-sacct-P-gpu-completed-60155093.txt").read_text()
    job = only(parse_sacct(text))
    assert (job.job_id, job.elapsed_s, job.alloc_gpus) == ("60155093", 50944, 1)
    summary = parse_jobstats(job.admin_comment or "")
    [gpu] = summary.gpus
    assert (gpu.node, gpu.index, gpu.util_pct) == ("della-l01g13", "1", 98.6)
    assert gpu.mem_used_mib == pytest.approx(83314868224 / 2**20)
    text = (ACCOUNTING / "jobstats-sacct-P-gpu-no-utilization-845136.txt").read_text()
    job = only(parse_sacct(text))
    gpu_read, notes = accounting_gpu(job)
    assert gpu_read is not None and "gpu.count" not in gpu_read.facts
    assert notes == (
        "job 845136 had 1 GPU but its jobstats summary has no GPU figures (no GPU exporter data)",
    )


def test_missing_keys_leave_facts_absent() -> None:
    """jobstats' own tests: a GPU without utilization (MIG), a node without used_memory."""
    node = gpu_node({"0": 50.0})
    del node["gpu_utilization"], node["used_memory"]
    gpu, _ = accounting_gpu(only(parse_sacct(sacct_row(blob({"gpus": 1, "total_time": 60,
                                                             "nodes": {"n": node}})))))  # fmt: skip
    assert gpu is not None
    assert gpu.facts["gpu.count"] == 1 and gpu.facts["gpu.mem_used.max_mib"] == 10240
    assert not {"gpu.util.mean", "gpu.samples", "jobstats.mem_peak_mib"} & set(gpu.facts)
    assert "GPU 0 on n: no utilization" in gpu.summary


@pytest.mark.parametrize(
    ("comment", "says"),
    [
        ("JS1:Short", "jobstats kept no summary of the job (the job ran too short)"),
        ("JS1:None", "jobstats kept no summary of the job (its monitoring had no data)"),
        ("js1:h4siabc", "in lower case (written with the sacctmgr of Slurm 22.05"),
        ("JS1:H4sI!!", "the jobstats summary in AdminComment does not decode"),
        ("JS1:" + base64.b64encode(b"not gzip").decode(), "does not decode"),
        (blob({"gpus": 0}), "has no 'nodes'"),
        (blob({"nodes": {"n": {"cpus": "many"}}}), "nodes.n.cpus is 'many', not a number"),
    ],
)
def test_unreadable_summaries_are_notes(comment: str, says: str) -> None:
    assert is_jobstats(comment)
    with pytest.raises(JobstatsError, match=None) as caught:
        parse_jobstats(comment)
    assert says in str(caught.value)
    gpu, notes = accounting_gpu(only(parse_sacct(sacct_row(comment))))
    assert gpu is None and len(notes) == 1 and notes[0].startswith("job 77: ")


def test_spaces_in_the_payload_are_dropped_and_other_comments_ignored() -> None:
    text = blob(TWO_NODES)
    spaced = text[:30] + " " + text[30:60] + "\n" + text[60:]
    assert parse_jobstats(spaced) == parse_jobstats(text)
    assert not is_jobstats("reserved for the lab") and not is_jobstats(None)
    assert accounting_gpu(only(parse_sacct(sacct_row("reserved for the lab")))) == (None, ())


# ------------------------------------------------------------------ Slurm's GPU TRES

# CU Boulder's `sacct -j 18194943 -pno JobID,TRESUsageInMax` (and TRESUsageInAve with
# --noconvert), put under a header with the job's AllocTRES and NTasks.
CURC_MAX_BATCH = (
    "cpu=00:56:24,energy=0,fs/disk=350130624578,gres/gpumem=38888M,gres/gpuutil=100,"
    "mem=10372780K,pages=3465,vmem=10194376K"
)
CURC_AVE_BATCH = (
    "cpu=00:56:24,energy=0,fs/disk=350130624578,gres/gpumem=40777023488,gres/gpuutil=100,"
    "mem=10621726720,pages=3465,vmem=10439041024"
)
CURC_EXTERN = "cpu=00:00:00,energy=0,fs/disk=5273,gres/gpumem=0,gres/gpuutil=0,mem=256K,pages=0"


def curc(gpus: int = 1, tasks: int = 1) -> SacctJob:
    text = (
        "JobID|State|AllocTRES|NTasks|TRESUsageInAve|TRESUsageInMax\n"
        f"18194943|COMPLETED|cpu=8,gres/gpu={gpus},mem=64G,node=1|||\n"
        f"18194943.batch|COMPLETED||{tasks}|{CURC_AVE_BATCH}|{CURC_MAX_BATCH}\n"
        f"18194943.extern|COMPLETED||1|{CURC_EXTERN}|{CURC_EXTERN}\n"
    )
    return only(parse_sacct_pipe(text))


def test_tres_usage_is_read_per_step() -> None:
    batch, extern = curc().steps
    assert (batch.gpu_util_max_pct, batch.gpu_util_ave_pct) == (100, 100)
    assert batch.gpu_mem_max_mib == 38888  # 38888M, and 40777023488 bytes printed bare
    assert (extern.gpu_util_max_pct, extern.gpu_mem_max_mib) == (0, 0)


def test_tres_one_gpu_gives_peaks_but_no_mean() -> None:
    gpu, _ = accounting_gpu(curc())
    assert gpu is not None and gpu.source == "slurm-tres"
    assert gpu.facts == {
        "gpu.source": "slurm-tres",
        "gpu.count": 1,
        "gpu.util.max": 100,
        "gpu.mem_used.max_mib": 38888,
    }
    assert (gpu.util_pct, gpu.util_bound) == (100, True)
    assert "no mean over time" in gpu.summary


def test_tres_of_one_task_on_four_gpus_is_a_sum_not_a_gpu() -> None:
    gpu, _ = accounting_gpu(curc(gpus=4, tasks=1))
    assert gpu is not None and "gpu.util.max" not in gpu.facts
    assert "gpu.mem_used.max_mib" not in gpu.facts
    assert gpu.util_pct == 25.0  # the four GPUs' mean is at most 100 % / 4
    assert "per task, summed over its GPUs" in gpu.summary


def test_tres_from_sacct_json() -> None:
    """Slurm's gres.shtml: a step of two tasks, one A100 each (Ave 100, Tot 200)."""
    document = json.loads((REPO / "tests/fixtures/slurm-22.05/15-sacct-multitask.json").read_text())
    job = document["jobs"][0]
    job["tres"]["allocated"].append({"type": "gres", "name": "gpu", "id": 1001, "count": 2})
    step = job["steps"][-1]
    step["tasks"]["count"] = 2
    usage = step["tres"]["requested"]
    usage["max"] += [
        {"type": "gres", "name": "gpumem", "id": 1002, "count": 36266 * 2**20},
        {"type": "gres", "name": "gpuutil", "id": 1003, "count": 100},
    ]
    usage["average"] += [{"type": "gres", "name": "gpuutil", "id": 1003, "count": 100}]
    parsed = parse_sacct(json.dumps(document))[0]
    gpu, _ = accounting_gpu(parsed)
    assert gpu is not None
    assert (gpu.facts["gpu.util.max"], gpu.facts["gpu.mem_used.max_mib"]) == (100, 36266)
    assert gpu.facts["gpu.count"] == 2


def test_slurm_22_05_steps_have_no_gpu_tres() -> None:
    text = (REPO / "tests/fixtures/slurm-22.05/17-gpu-tres-admincomment.txt").read_text()
    table = text.split("$ sacct -j 17 -P ", 1)[1].split("\n", 1)[1].split("$ ", 1)[0]
    job = only(parse_sacct(table))
    assert job.alloc_gpus == 1 and job.elapsed_s == 10  # End - Start, ISO times
    assert all(s.gpu_util_max_pct is None for s in job.steps)
    gpu, _ = accounting_gpu(job)  # the made-up summary set with scontrol, read back verbatim
    assert gpu is not None and gpu.source == "jobstats" and gpu.facts["gpu.util.mean"] == 12.5


# ------------------------------------------------------------------ sacct -P details


def test_elapsed_from_start_and_end() -> None:
    def elapsed(start: str, end: str) -> float | None:
        return only(parse_sacct(f"JobIDRaw|Start|End|State\n5|{start}|{end}|X\n")).elapsed_s

    assert elapsed("1690927903", "1690964225") == 36322
    assert elapsed("2026-11-26T04:17:15", "2026-11-26T04:17:25") == 10
    assert elapsed("1690927903", "Unknown") is None  # running
    assert elapsed("Unknown", "Unknown") is None  # pending
    assert elapsed("Mon 12:00", "Mon 13:00") is None  # a site's SLURM_TIME_FORMAT
    with_elapsed = "JobID|Start|End|Elapsed|State\n5|1|100|00:00:42|X\n"
    assert only(parse_sacct(with_elapsed)).elapsed_s == 42  # sacct's own figure wins


def test_a_bar_in_the_last_free_text_column() -> None:
    text = "JobID|State|AdminComment\n5|COMPLETED|moved | requeued\n"
    assert only(parse_sacct(text)).admin_comment == "moved | requeued"
    with pytest.raises(SacctError, match="4 fields where the header has 3"):
        parse_sacct("JobID|AdminComment|State\n5|a|b|COMPLETED\n")


# ------------------------------------------------------------------ gather, rules, jobs table


def _gather(tmp_path: Path, text: str, *metrics: str) -> tuple[dict[str, object], list[str]]:
    path = tmp_path / "sacct.txt"
    path.write_text(text)
    got = gather(Inputs(sacct=str(path), metrics=metrics), None, env={})
    return dict(got.facts), list(got.notes)


def _fires(facts: dict[str, object]) -> set[str]:
    return {f.id for f in evaluate(load_rules([default_rules_dir()]), facts).findings}


def test_gpu_rules_fire_on_jobstats_alone(tmp_path: Path) -> None:
    facts, notes = _gather(tmp_path, sacct_row(blob(TWO_NODES)))
    assert facts["gpu.source"] == "jobstats" and facts["usage.mem_peak_mib"] == 32 * 1024
    assert notes[0].startswith("GPU: from jobstats (AdminComment): over 60 min, GPU 0 on gpu01")
    assert "some-gpus-idle" in _fires(facts)  # GPU 3 at 2 % while the others work
    idle = {"gpus": 1, "total_time": 600, "nodes": {"n": gpu_node({"0": 3.0})}}
    assert "gpu-idle" in _fires(_gather(tmp_path, sacct_row(blob(idle)))[0])
    short = {**idle, "total_time": 240}  # 8 samples' worth: too little, as jobstats says too
    facts = _gather(tmp_path, sacct_row(blob(short)))[0]
    assert facts["gpu.samples"] == 8 and "gpu-idle" not in _fires(facts)


def test_a_log_wins_over_the_accounting(tmp_path: Path) -> None:
    log = str(REPO / "tests/fixtures/nvidia-smi/a100-2gpu-one-idle.csv")
    facts, notes = _gather(tmp_path, sacct_row(blob(TWO_NODES)), log)
    assert facts["gpu.source"] == "nvidia-smi" and facts["gpu.count"] == 2
    assert any(n.startswith("GPU: from the nvidia-smi samples; jobstats") for n in notes)


def test_a_running_job_gives_no_gpu_facts(tmp_path: Path) -> None:
    facts, _ = _gather(tmp_path, sacct_row(blob(TWO_NODES), state="RUNNING"))
    assert not any(name.startswith(("gpu.", "jobstats.")) for name in facts)


def test_jobs_table_shows_gpu_use() -> None:
    rules = load_rules([default_rules_dir()])
    stats = job_row(only(parse_sacct(sacct_row(blob(TWO_NODES)))), None, rules)
    assert stats.gpu_util_pct == pytest.approx(60.5) and not stats.gpu_util_bound
    assert stats.top_finding == "some-gpus-idle"
    tres = job_row(curc(gpus=4, tasks=1), None, rules)
    plain = job_row(only(parse_sacct("JobID|State\n9|COMPLETED\n")), None, rules)
    rows = render_rows([stats, tres, plain]).splitlines()
    column = rows[0].index(" GPU ") + 1
    assert [row[column:].split()[0] for row in rows[1:]] == ["60%", "<=25%", "-"]


def test_the_memory_peak_is_the_largest_source_never_the_lower() -> None:
    """jobstats samples every 30 s and can miss a spike MaxRSS caught: memory advice rests on
    the larger peak, whichever source has it; CPU efficiency still prefers jobstats."""
    facts: dict[str, object] = {
        "sacct.state": "COMPLETED",
        "jobstats.mem_peak_mib": 3000.0,
        "sacct.mem_peak_mib": 5000.0,
        "jobstats.cpu_efficiency_pct": 40.0,
        "sacct.cpu_efficiency_pct": 55.0,
    }
    usage_facts(facts)
    assert facts["usage.mem_peak_mib"] == 5000.0
    assert facts["usage.cpu_efficiency_pct"] == 40.0
    facts = {"sacct.state": "COMPLETED", "jobstats.mem_peak_mib": 7000.0, "seff.mem_used_mib": 10}
    usage_facts(facts)
    assert facts["usage.mem_peak_mib"] == 7000.0
