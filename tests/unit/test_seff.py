"""seff report parsing: real Slurm 22.05 output and the variants seff's Perl script prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuneadvisor.slurm.accounting.seff import SeffError, parse_duration, parse_seff, parse_size_mib

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "slurm-22.05"


def seff_section(name: str) -> str:
    """What ``$ seff N`` printed in a transcript."""
    text = (FIXTURES / name).read_text()
    return text[text.index("$ seff") :].split("\n", 1)[1]


MULTI_NODE = """\
Job ID: 24752610
Cluster: hpc
User/Group: alice/staff
State: COMPLETED (exit code 0)
Nodes: 2
Cores per node: 16
CPU Utilized: 1-02:03:04
CPU Efficiency: 40.71% of 2-16:00:00 core-walltime
Job Wall-clock time: 02:00:00
Memory Utilized: 12.50 GB (estimated maximum)
Memory Efficiency: 19.53% of 64.00 GB (32.00 GB/node)
"""

PER_CORE_ARRAY = """\
Job ID: 981
Array Job ID: 977_4
Cluster: hpc
User/Group: bob/<GID 5001>
State: TIMEOUT (exit code 0)
Nodes: 1
Cores per node: 4
CPU Utilized: 00:59:00
CPU Efficiency: 24.58% of 04:00:00 core-walltime
Job Wall-clock time: 01:00:00
Memory Utilized: 812.00 KB (estimated maximum)
Memory Efficiency: 0.02% of 4.00 GB (1.00 GB/core)
"""

RUNNING = """\
Job ID: 55
Cluster: ci
User/Group: root/root
State: RUNNING
Cores: 1
CPU Utilized: 00:00:00
CPU Efficiency: 0.00% of 00:00:07 core-walltime
Job Wall-clock time: 00:00:07
Memory Utilized: 0.00 MB (estimated maximum)
Memory Efficiency: 0.00% of 500.00 MB (500.00 MB/node)
WARNING: Efficiency statistics may be misleading for RUNNING jobs.
"""

PENDING = """\
Job ID: 56
Cluster: ci
User/Group: root/root
State: PENDING
Cores: 1
Efficiency not available for jobs in the PENDING state.
"""


def test_single_node_real_output() -> None:
    report = parse_seff(seff_section("04-finished.txt"))
    assert (report.job_id, report.cluster, report.user, report.group) == ("1", "ci", "root", "root")
    assert (report.state, report.exit_code) == ("COMPLETED", 0)
    assert (report.nodes, report.cores, report.cores_per_node) == (1, 1, 1)
    assert (report.cpu_used_s, report.core_walltime_s, report.wall_s) == (10, 11, 11)
    assert report.cpu_efficiency_pct == 90.91
    assert (report.mem_used_mib, report.mem_used_estimated) == (316.26, False)
    assert (report.mem_efficiency_pct, report.mem_requested_mib) == (63.25, 500.0)
    assert report.mem_requested_per is None
    assert report.final and report.warnings == ()


def test_multitask_real_output() -> None:
    report = parse_seff(seff_section("06-multitask.txt"))
    assert (report.nodes, report.cores_per_node, report.cores) == (1, 2, 2)
    assert (report.cpu_used_s, report.cpu_efficiency_pct, report.core_walltime_s) == (3, 37.5, 8)
    assert (report.mem_used_mib, report.mem_used_estimated) == (26.31, True)
    assert report.mem_requested_mib == 200.0
    assert (report.mem_requested_per, report.mem_requested_per_unit_mib) == ("node", 200.0)


def test_facts_single_node() -> None:
    facts = parse_seff(seff_section("04-finished.txt")).facts()
    assert facts == {
        "seff.state": "COMPLETED",
        "seff.final": True,
        "seff.exit_code": 0,
        "seff.nodes": 1,
        "seff.cores": 1,
        "seff.cores_per_node": 1,
        "seff.cpu_used_s": 10,
        "seff.cpu_efficiency_pct": 90.91,
        "seff.core_walltime_s": 11,
        "seff.wall_s": 11,
        "seff.mem_used_mib": 316.26,
        "seff.mem_used_estimated": False,
        "seff.mem_used_node_mib": 316.26,
        "seff.mem_efficiency_pct": 63.25,
        "seff.mem_requested_mib": 500.0,
    }


def test_multi_node() -> None:
    report = parse_seff(MULTI_NODE)
    assert (report.nodes, report.cores_per_node, report.cores) == (2, 16, 32)
    assert report.cpu_used_s == 26 * 3600 + 3 * 60 + 4
    assert report.core_walltime_s == 64 * 3600
    assert report.wall_s == 7200
    assert report.mem_used_mib == 12.5 * 1024
    assert report.mem_requested_mib == 64 * 1024
    assert (report.mem_requested_per, report.mem_requested_per_unit_mib) == ("node", 32 * 1024)
    assert report.facts()["seff.mem_requested_per"] == "node"


def test_uneven_cores_per_node_comes_from_core_walltime() -> None:
    """seff prints cores per node with %d: 5 cores on 2 nodes shows 2; core-walltime knows 5."""
    text = MULTI_NODE.replace("Cores per node: 16", "Cores per node: 2").replace(
        "2-16:00:00 core-walltime", "10:00:00 core-walltime"
    )
    assert parse_seff(text).cores == 5


def test_per_core_request_array_job_and_kb() -> None:
    report = parse_seff(PER_CORE_ARRAY)
    assert (report.job_id, report.array_job_id) == ("981", "977_4")
    assert (report.user, report.group) == ("bob", "<GID 5001>")
    assert (report.state, report.exit_code) == ("TIMEOUT", 0)
    assert report.mem_used_mib == pytest.approx(812 / 1024)
    assert (report.mem_requested_mib, report.mem_requested_per) == (4096, "core")
    assert report.mem_requested_per_unit_mib == 1024


def test_running_job() -> None:
    report = parse_seff(RUNNING)
    assert (report.state, report.exit_code, report.final) == ("RUNNING", None, False)
    assert report.mem_used_mib == 0.0
    assert report.warnings == (
        "WARNING: Efficiency statistics may be misleading for RUNNING jobs.",
    )
    facts = report.facts()
    assert facts["seff.final"] is False and "seff.exit_code" not in facts


def test_pending_job_has_no_efficiency_lines() -> None:
    report = parse_seff(PENDING)
    assert report.state == "PENDING" and not report.final
    facts = report.facts()
    assert "seff.cpu_efficiency_pct" not in facts
    assert "seff.mem_used_mib" not in facts
    assert "seff.mem_used_estimated" not in facts
    assert report.warnings == ("Efficiency not available for jobs in the PENDING state.",)


def test_zero_request_means_unknown_not_zero_efficiency() -> None:
    """09-oom-enforced.txt: read before accounting caught up, seff printed 0.00% of 0.00 MB."""
    lines = (FIXTURES / "09-oom-enforced.txt").read_text().splitlines()
    text = "Job ID: 14\n" + "\n".join(x for x in lines if x.startswith(("State:", "Memory")))
    report = parse_seff(text)
    assert (report.state, report.exit_code, report.mem_used_mib) == ("FAILED", 0, 314.88)
    assert report.mem_requested_mib is None and report.mem_efficiency_pct is None
    assert "seff.mem_efficiency_pct" not in report.facts()
    assert any("accounting record incomplete" in w for w in report.warnings)


def test_zero_core_walltime_means_unknown_cpu_efficiency() -> None:
    text = RUNNING.replace("00:00:07 core-walltime", "00:00:00 core-walltime")
    assert parse_seff(text).cpu_efficiency_pct is None


def test_newer_seff_lines_are_read_or_set_aside() -> None:
    text = seff_section("04-finished.txt") + (
        "The task which had the largest memory consumption differs by 100.00% from the average"
        " task max memory consumption\nGPU Utilized: 12%\nSlurm data: 1 root ...\n"
    )
    report = parse_seff(text)
    assert (report.mem_used_mib, report.gpu_util_pct, report.unread) == (316.26, 12, ())


SITE_VARIANT = """Job ID: 3141
Cluster: gpucluster
User/Group: carol/users
State: TIMEOUT (exit code 0)
Nodes: 2
Cores per node: 4
CPU Utilized: 01:30:00
CPU Efficiency: 18.75% (01:30:00 of 08:00:00 core-walltime)
Job Wall-clock time: 01:00:00
Job Wall-time: 100.0% of 01:00:00 time limit
Memory Utilized: 0.00 MB (estimated maximum)
Memory Efficiency: 0.00% of 1.95 GB (1.95 GB/core)
GPU Utilisation: 37.5% (2 GPUs)
GPU Memory Utilised: 3.50 GB
GPU Memory Efficiency: 21.9% of 16.00 GB
Energy: 1.2 kWh
"""


def test_site_variant_lines_are_read_and_the_rest_listed() -> None:
    report = parse_seff(SITE_VARIANT)
    assert (report.nodes, report.cores_per_node, report.cores) == (2, 4, 8)
    assert (report.cpu_used_s, report.cpu_efficiency_pct, report.core_walltime_s) == (
        5400,
        18.75,
        8 * 3600,
    )
    assert (report.timelimit_s, report.wall_pct_of_limit) == (3600, 100.0)
    assert (report.mem_requested_mib, report.mem_requested_per) == (1.95 * 1024, "core")
    assert report.mem_requested_per_unit_mib == 1.95 * 1024
    assert (report.gpu_util_pct, report.gpu_mem_used_mib) == (37.5, 3.5 * 1024)
    assert report.unread == (
        "line 15: 'GPU Memory Efficiency: 21.9% of 16.00 GB'",
        "line 16: 'Energy: 1.2 kWh'",
    )


def test_cpu_efficiency_forms() -> None:
    base = "Job ID: 1\nCPU Utilized: 00:01:00\nCPU Efficiency: {}\n"
    for form in ("50.00% of 00:02:00 core-walltime", "50.00% (00:02:00 core-walltime)"):
        report = parse_seff(base.format(form))
        assert (report.cpu_efficiency_pct, report.core_walltime_s, report.cpu_used_s) == (
            50.0,
            120,
            60,
        )


def test_gpu_line_in_an_unknown_form_is_listed() -> None:
    report = parse_seff("Job ID: 1\nGPU Utilization: n/a\nGPU Memory Used: 80% of 40 GB\n")
    assert report.gpu_util_pct is None and report.gpu_mem_used_mib is None
    assert report.unread == (
        "line 2: 'GPU Utilization: n/a'",
        "line 3: 'GPU Memory Used: 80% of 40 GB'",
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "not a seff report: no 'Job ID:' line"),
        ("JobID|State\n1|COMPLETED\n", "not a seff report"),
        ("Job not found.\n", "seff did not report on a job: 'Job not found.'"),
        ("Usage: seff [Options] <Jobid>\n", "seff did not report on a job"),
        ("Job ID: 1\nCPU Efficiency: lots\n", r"line 2 \(CPU Efficiency\): 'lots' is not like"),
        ("Job ID: 1\nJob Wall-clock time: 5 min\n", r"line 2 .*'5 min' is not a duration"),
        ("Job ID: 1\nMemory Utilized: 3 bytes\n", r"line 2 \(Memory Utilized\)"),
        ("Job ID: 1\nCores: many\n", r"line 2 \(Cores\): 'many' is not a whole number"),
        ("Job ID: 1\nJob ID: 2\n", "line 2: a second report"),
        ("Job ID:\n", r"line 1 \(Job ID\): empty job id"),
    ],
)
def test_bad_input(text: str, message: str) -> None:
    with pytest.raises(SeffError, match=message):
        parse_seff(text)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("00:00:11", 11),
        ("28-17:52:34", 28 * 86400 + 17 * 3600 + 52 * 60 + 34),
        ("100:00:00", 360000),
    ],
)
def test_parse_duration(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("number", "unit", "mib"),
    [
        ("316.26", "MB", 316.26),
        ("8.00", "GB", 8192.0),
        ("512.00", "KB", 0.5),
        ("1.00", "TB", 1024**2),
    ],
)
def test_parse_size_mib(number: str, unit: str, mib: float) -> None:
    assert parse_size_mib(number, unit) == mib


# ------------------------------------------------------------------ real-world outputs

REALWORLD = Path(__file__).resolve().parent.parent / "fixtures" / "realworld" / "accounting"


def test_realworld_sheffield_two_nodes_per_core_request() -> None:
    """The seff block of a documentation page, as shown there (indented by four spaces)."""
    page = (REALWORLD / "sheffield-hpc-memory-used-commands.rst").read_text(encoding="utf-8")
    lines = page.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("$ seff"))
    end = next(i for i in range(start, len(lines)) if not lines[i].strip())
    report = parse_seff("\n".join(lines[start + 1 : end]))
    assert (report.job_id, report.state, report.exit_code) == ("64626", "COMPLETED", 0)
    assert (report.nodes, report.cores_per_node, report.cores) == (2, 1, 2)
    assert (report.cpu_used_s, report.cpu_efficiency_pct, report.core_walltime_s) == (
        157,
        35.68,
        440,
    )
    assert report.wall_s == 220
    assert (report.mem_used_mib, report.mem_used_estimated) == (137.64, True)
    assert report.mem_requested_mib == pytest.approx(7.84 * 1024)
    assert report.mem_requested_per == "core"
    assert report.mem_requested_per_unit_mib == pytest.approx(3.92 * 1024)
    assert report.unread == ()


def realworld(name: str) -> str:
    return (REALWORLD / name).read_text(encoding="utf-8")


# NeSI's seff, as read from each file: state, exit code, wall s, limit s, cores, nodes, tasks,
# CPU used s, CPU %, core-walltime s, memory used MiB, memory %, memory requested MiB.
NESI = {
    "nesi-seff-completed.seff.txt": (
        ("COMPLETED", 0, 69, 900, 1, 1, 1),
        (68, 98.55, 69, 111.0, 10.84, 1024.0),
    ),
    "nesi-seff-cpu-over-100.seff.txt": (
        ("COMPLETED", 0, 46, 900, 1, 1, 1),
        (65, 141.30, 46, 233.29, 93.31, 250.0),
    ),
    "nesi-seff-gpu-timeout.seff.txt": (
        ("TIMEOUT", None, 15 * 60 + 4, 900, 4, 1, 1),
        (59 * 60 + 20, 98.5, 3600 + 16, 284.46, 1.2, 24 * 1024),
    ),
    "nesi-seff-nextflow-completed.seff.txt": (
        ("COMPLETED", None, 11 * 3600 + 17 * 60 + 4, 12 * 3600, 16, 1, 1),
        (
            5 * 86400 + 18 * 3600 + 19 * 60 + 39,
            76.6,
            7 * 86400 + 12 * 3600 + 33 * 60 + 4,
            107.69 * 1024,
            53.8,
            200 * 1024,
        ),
    ),
    "nesi-seff-nextflow-oom.seff.txt": (
        ("OUT_OF_MEMORY", None, 5 * 3600 + 20 * 60 + 1, 12 * 3600, 12, 1, 1),
        (
            2 * 86400 + 2 * 3600 + 47 * 60 + 46,
            79.4,
            2 * 86400 + 16 * 3600 + 12,
            44.55 * 1024,
            61.9,
            72 * 1024,
        ),
    ),
    "nesi-seff-nextflow-3nodes.seff.txt": (
        ("COMPLETED", None, 86400 + 3 * 3600 + 24 * 60 + 26, 2 * 86400, 36, 3, 3),
        (
            14 * 86400 + 7 * 3600 + 51 * 60 + 2,
            34.8,
            41 * 86400 + 2 * 3600 + 39 * 60 + 36,
            170.59 * 1024,
            28.4,
            600 * 1024,
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(NESI))
def test_realworld_nesi_seff_is_read_whole(name: str) -> None:
    """NeSI's seff: 'Job Wall-time: P% ELAPSED of LIMIT time limit', 'CPU Efficiency: P% USED
    of CORE-WALLTIME', 'Mem Efficiency: P% USED of REQUESTED', 'State: ['COMPLETED']'."""
    report = parse_seff(realworld(name))
    job, usage = NESI[name]
    assert (
        report.state,
        report.exit_code,
        report.wall_s,
        report.timelimit_s,
        report.cores,
        report.nodes,
        report.tasks,
    ) == job
    cpu_used, cpu_pct, core_walltime, mem_used, mem_pct, mem_requested = usage
    assert (report.cpu_used_s, report.cpu_efficiency_pct, report.core_walltime_s) == (
        cpu_used,
        cpu_pct,
        core_walltime,
    )
    assert report.mem_used_mib == pytest.approx(mem_used)
    assert (report.mem_efficiency_pct, report.mem_requested_mib) == (mem_pct, mem_requested)
    assert report.mem_used_estimated is False  # NeSI prints the total, not max x tasks
    assert report.final and report.unread == () and report.warnings == ()
    # the printed percentages agree with the numbers read (as printed, rounded)
    wall, limit = job[2], job[3]
    assert 100 * wall / limit == pytest.approx(report.wall_pct_of_limit, abs=0.06)
    assert 100 * mem_used / mem_requested == pytest.approx(mem_pct, abs=0.06)


def test_realworld_nesi_gpu_lines() -> None:
    report = parse_seff(realworld("nesi-seff-gpu-timeout.seff.txt"))
    assert report.gpu_util_pct == 43.0
    assert (report.gpu_mem_used_mib, report.gpu_mem_total_mib) == (510.0, 23 * 1024)
    assert (report.timelimit_s, report.wall_pct_of_limit) == (900, 100.4)


def test_realworld_nesi_three_nodes_memory_per_task() -> None:
    report = parse_seff(realworld("nesi-seff-nextflow-3nodes.seff.txt"))
    assert (report.nodes, report.cores_per_node, report.cores, report.tasks) == (3, 12, 36, 3)
    assert report.mem_used_task_min_mib == pytest.approx(55.79 * 1024)
    assert report.mem_used_task_max_mib == 58 * 1024
    assert (report.mem_requested_per, report.mem_requested_per_unit_mib) == ("task", 200 * 1024)
    assert report.facts()["seff.mem_requested_per"] == "task"


def test_nesi_state_lists() -> None:
    base = "Job ID: 7\nState: {}\n"
    assert parse_seff(base.format("['OUT_OF_MEMORY']")).state == "OUT_OF_MEMORY"
    several = parse_seff(base.format("['COMPLETED', 'FAILED']"))
    assert several.state is None and "seff.state" not in several.facts()
    assert several.unread == ("line 2: \"State: ['COMPLETED', 'FAILED']\"",)


def test_realworld_banner_form() -> None:
    """reportseff #41: every line behind '# ', framed by lines of '#'."""
    report = parse_seff(realworld("reportseff-issue41-seff-banner.seff.txt"))
    assert (report.job_id, report.state, report.exit_code) == ("131042", "COMPLETED", 0)
    assert (report.cpu_used_s, report.cpu_efficiency_pct, report.core_walltime_s) == (
        6 * 60 + 58,
        98.58,
        7 * 60 + 4,
    )
    assert (report.wall_s, report.cores) == (53, 8)
    assert (report.mem_used_mib, report.mem_used_estimated) == (14.86 * 1024, True)
    # "Cores: 8" and no "Nodes:" line: how many nodes is not said, so not guessed
    assert report.nodes is None and report.cores_per_node is None
    assert report.unread == () and report.mem_requested_mib is None


def test_banner_lines_not_understood_are_still_listed() -> None:
    text = "#### REPORT ####\n# Job ID: 5\n## Cores: 1\n# Energy: 3 kWh\n######\n"
    report = parse_seff(text)
    assert (report.job_id, report.cores) == ("5", 1)
    assert report.unread == ("line 4: 'Energy: 3 kWh'",)


# What seff prints since Slurm 24.11 (contribs/seff/seff after commits 42ea3cf and 1f1c492,
# 2024-10): Memory Utilized is the step's TRESUsageInTot (the tasks' peaks summed), without
# "(estimated maximum)"; "(X/node)" always; a note when one task's peak is far above the
# average; the running-job warning reworded (478e485, 2024-09). Written from its printf lines.
SLURM_24_11 = """\
Job ID: 812
Cluster: hpc
User/Group: dana/staff
State: COMPLETED (exit code 0)
Nodes: 1
Cores per node: 8
CPU Utilized: 03:12:00
CPU Efficiency: 80.00% of 04:00:00 core-walltime
Job Wall-clock time: 00:30:00
Memory Utilized: 9.50 GB
Memory Efficiency: 29.69% of 32.00 GB (32.00 GB/node)
The task which had the largest memory consumption differs by 180.00% from the average task max memory consumption
"""  # noqa: E501

SLURM_24_11_RUNNING = """\
Job ID: 813
Cluster: hpc
User/Group: dana/staff
State: RUNNING
Cores: 1
CPU Utilized: 00:00:03
CPU Efficiency: 50.00% of 00:00:06 core-walltime
Job Wall-clock time: 00:00:06
Memory Utilized: 1.20 MB
Memory Efficiency: 0.12% of 1.00 GB (1.00 GB/core)
WARNING: Efficiency statistics can only be obtained after the job has ended as seff tool is based on the accounting database data.
"""  # noqa: E501


def test_slurm_24_11_seff() -> None:
    report = parse_seff(SLURM_24_11)
    assert (report.nodes, report.cores_per_node, report.cores) == (1, 8, 8)
    assert (report.cpu_used_s, report.cpu_efficiency_pct, report.wall_s) == (11520, 80.0, 1800)
    assert (report.mem_used_mib, report.mem_used_estimated) == (9.5 * 1024, False)
    assert (report.mem_requested_mib, report.mem_requested_per) == (32 * 1024, "node")
    assert report.unread == () and report.warnings == () and report.final


def test_slurm_24_11_seff_of_a_running_job() -> None:
    report = parse_seff(SLURM_24_11_RUNNING)
    assert (report.state, report.final, report.exit_code) == ("RUNNING", False, None)
    assert (report.nodes, report.cores, report.mem_requested_per) == (1, 1, "core")
    assert report.warnings[0].startswith("WARNING: Efficiency statistics can only be obtained")
    assert report.unread == ()


@pytest.mark.parametrize(
    ("lines", "layout"),
    [
        ("Cores: 1\n", (1, 1, 1)),  # Slurm's seff: one core, so one node
        ("Cores: 8\n", (None, None, 8)),  # nodes not said: not guessed
        ("Cores: 36\nNodes: 3\n", (3, 12, 36)),
        ("Cores: 10\nNodes: 3\n", (3, None, 10)),  # uneven: no one count per node
    ],
)
def test_cores_and_nodes(lines: str, layout: tuple[int | None, ...]) -> None:
    report = parse_seff("Job ID: 1\n" + lines)
    assert (report.nodes, report.cores_per_node, report.cores) == layout


def test_seff_pasted_without_its_job_id_is_read_and_says_what_it_lacks() -> None:
    """Issue 30: the state and memory lines carry the verdict; the id only names the job."""
    report = parse_seff(
        "State: OUT_OF_MEMORY (exit code 0)\nNodes: 2\nMemory Utilized: 62.81 GB\n"
        "Memory Efficiency: 98.14% of 64.00 GB\n"
    )
    assert report.job_id == "" and report.state == "OUT_OF_MEMORY"
    assert report.mem_used_mib == pytest.approx(62.81 * 1024)
    assert report.missing_lines() == ("Job ID", "CPU Utilized", "Job Wall-clock time")
    with pytest.raises(SeffError, match="no 'Job ID:' line"):
        parse_seff("Cluster: c\nUser/Group: a/b\n")  # nothing that says how the job went
