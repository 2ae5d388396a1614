"""The plan keeps coupled knobs consistent and within the node."""

from __future__ import annotations

import pytest

from tuneadvisor.advisor.findings import Finding, Severity, Suggestion
from tuneadvisor.advisor.plan import make_plan


def finding(fid: str, sbatch: dict[str, object] | None = None,
            script: dict[str, object] | None = None) -> Finding:  # fmt: skip
    return Finding(
        id=fid, title=fid, severity=Severity.WARNING, group="g", evidence=(),
        suggest=Suggestion(sbatch=sbatch or {}, script=script or {}), rationale="",
        references=(), rule_path="",
    )  # fmt: skip


def test_more_cores_wins_and_records_both_causes() -> None:
    plan = make_plan(
        [finding("a", {"cpus-per-task": 4}), finding("b", {"cpus-per-task": 8})],
        {"job.cpus_per_task": 1},
    )
    assert plan.sbatch["cpus-per-task"].value == 8
    assert plan.sbatch["cpus-per-task"].because == ("a", "b")


def test_cores_are_capped_by_the_node_and_workers_follow() -> None:
    facts = {"job.cpus_per_task": 2, "node.cores": 32, "job.tasks_per_node": 4}
    plan = make_plan(
        [finding("dataloader-bound", {"cpus-per-task": 16}, {"num_workers": 15})], facts
    )
    assert plan.sbatch["cpus-per-task"].value == 8  # 32 cores / 4 tasks
    assert plan.script["num_workers"].value == 7
    assert any("capped" in note for note in plan.notes)


def test_cores_per_gpu_limit() -> None:
    facts = {"job.cpus_per_task": 2, "node.max_cores_per_gpu": 6, "job.gpus": 1}
    plan = make_plan([finding("x", {"cpus-per-task": 16}, {"num_workers": 15})], facts)
    assert plan.sbatch["cpus-per-task"].value == 6
    assert plan.script["num_workers"].value == 5


def test_memory_never_below_the_peak() -> None:
    facts = {"usage.mem_peak_mib": 3000.0, "job.mem_mib": 16384.0}
    plan = make_plan([finding("x", {"mem": "2G"})], facts)
    assert plan.sbatch["mem"].value == "4G"  # 1.2 x 3000 MiB rounded up to whole GiB


def test_memory_capped_by_the_node() -> None:
    plan = make_plan([finding("x", {"mem": "600G"})], {"node.mem_mib": 256000.0})
    assert plan.sbatch["mem"].value == "250G"  # 256000 MiB


def test_a_request_over_the_sites_node_is_lowered_to_it() -> None:
    """The script asks more than a node has (sbatch refuses it): no finding asked for a
    memory change, and the plan writes the node's, saying why."""
    facts = {"job.mem_mib": 524288.0, "node.mem_mib": 262144.0}
    plan = make_plan([finding("x", {"cpus-per-task": 24})], facts)
    assert plan.sbatch["mem"].value == "256G"
    assert any("lowered to the node's 256G" in n for n in plan.notes)


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ({"node.assumed": True}, None),  # the default ceiling: the node's size is not known
        ({"usage.mem_peak_mib": 300000.0}, "check the site file"),  # it ran on more
    ],
)
def test_over_the_node_left_where_the_node_is_not_known(
    extra: dict[str, object], why: str | None
) -> None:
    facts = {"job.mem_mib": 524288.0, "node.mem_mib": 262144.0, **extra}
    plan = make_plan([finding("x", {"cpus-per-task": 24})], facts)
    assert "mem" not in plan.sbatch
    assert why is None or any(why in n for n in plan.notes)


def test_larger_memory_wins_between_findings() -> None:
    plan = make_plan([finding("down", {"mem": "2G"}), finding("oom", {"mem": "24G"})], {})
    assert plan.sbatch["mem"].value == "24G"


def test_no_change_when_the_job_already_has_it() -> None:
    plan = make_plan([finding("x", {"cpus-per-task": 4})], {"job.cpus_per_task": 4})
    assert plan.is_empty()


def test_time_capped_at_the_partition_limit() -> None:
    # job-timed-out asks for twice what ran; sbatch would refuse more than MaxTime.
    plan = make_plan([finding("job-timed-out", {"time": "2-00:00:00"})], {"node.max_time_s": 86400})
    assert plan.sbatch["time"].value == "1-00:00:00"
    assert any("partition's limit 1-00:00:00" in note for note in plan.notes)


def test_time_within_the_limit_is_kept() -> None:
    plan = make_plan([finding("job-timed-out", {"time": "04:00:00"})], {"node.max_time_s": 86400})
    assert plan.sbatch["time"].value == "04:00:00"
    assert not plan.notes


def test_the_rules_workers_are_kept_when_the_cores_fit() -> None:
    """The rule computed its workers (and whether a core stays with the main process): the
    plan does not recompute them with a threshold of its own."""
    facts = {"job.cpus_per_task": 1, "profile.loader_share": 0.3, "node.cores": 64}
    plan = make_plan([finding("r", {"cpus-per-task": 4}, {"num_workers": 4})], facts)
    assert plan.script["num_workers"].value == 4 and not plan.notes
    assert plan.reserve_main_core is False


def test_capped_cores_take_as_many_workers_away() -> None:
    facts = {"job.cpus_per_task": 1, "node.cores": 6}
    plan = make_plan([finding("r", {"cpus-per-task": 8}, {"num_workers": 8})], facts)
    assert plan.sbatch["cpus-per-task"].value == 6 and plan.script["num_workers"].value == 6
    assert plan.reserve_main_core is False
    one = make_plan([finding("r", {"cpus-per-task": 4}, {"num_workers": 3})], {"node.cores": 1})
    assert one.script["num_workers"].value == 1 and one.reserve_main_core is True


def test_the_plan_is_read_only() -> None:
    plan = make_plan([finding("x", {"cpus-per-task": 4})], {"job.cpus_per_task": 1})
    with pytest.raises(TypeError):
        plan.sbatch["mem"] = plan.sbatch["cpus-per-task"]  # type: ignore[index]


# The memory note names the workers of the run whose peak it is (issue 24, point 12): the
# peak is accounting's, of the job, so the job script's own count (its launch line's
# --num-workers 1) outranks a profile's run record (0 workers); a script `apply` tuned is no
# longer as it ran, so there the measured run's count stays; none known is said so.
PEAK = {"usage.mem_peak_mib": 1000.0, "job.mem_mib": 8192.0, "job.cpus_per_task": 1}
LAUNCH_SAYS_1 = {"script.num_workers": 1, "script.num_workers.passed_source": "literal"}


def memory_note(facts: dict[str, object]) -> str:
    asks = [
        finding("dataloader-bound", script={"num_workers": 4}),
        finding("over-requested-memory", {"mem": "2G"}),  # the floor is checked on a cut
    ]
    plan = make_plan(asks, facts)
    (note,) = [n for n in plan.notes if n.startswith("memory:")]
    return note


@pytest.mark.parametrize(
    ("facts", "had", "more"),
    [
        ({**PEAK, **LAUNCH_SAYS_1, "alloc.workers": 0}, "1 DataLoader worker;", 3),
        ({**PEAK, "alloc.workers": 2}, "2 DataLoader workers;", 2),
        (
            {**PEAK, **LAUNCH_SAYS_1, "alloc.workers": 0, "job.tuned_from.digest": "ab"},
            "0 DataLoader workers;",
            4,
        ),
        (PEAK, "an unknown number of DataLoader workers (counted as none);", 4),
    ],
)
def test_the_memory_note_counts_the_workers_of_the_peaks_run(
    facts: dict[str, object], had: str, more: int
) -> None:
    note = memory_note(facts)
    assert f"was measured with {had} {more} more add {more * 512:,} MiB" in note
