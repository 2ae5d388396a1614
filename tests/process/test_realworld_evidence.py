"""What a careful reader concludes from each real file in tests/fixtures/realworld/ (profiles,
accounting, nvidia-smi), one row per file, checked against the JSON report of the real command
line. The rows were written by reading the files (and, for .lprof files, their pickled timings),
not by running the tool: see each folder's MANIFEST.md for where the files come from.

A row is either what the file says (the hottest line of a profile and its share of its function;
a job's state, elapsed time, peak memory and CPU efficiency; the GPUs' mean utilisation and peak
memory) or a refusal: exit 2 and one line that names the file and says what it is instead."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tuneadvisor.cli import main

REALWORLD = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"
FOLDERS = ("profiles", "accounting", "nvidia-smi")


@dataclass(frozen=True)
class Hottest:
    """The line with the most time in the whole profile, its % Time in its function."""

    function: str
    line: int
    percent: float
    unit_s: float


@dataclass(frozen=True)
class NoTime:
    """A profile whose functions recorded no time: read, total 0, no hottest line."""

    function: str


@dataclass(frozen=True)
class Job:
    """seff (--seff) or sacct (--sacct): state, elapsed s, peak memory MiB, CPU efficiency %."""

    option: str
    state: str | None
    elapsed_s: int | None
    mem_peak_mib: float | None
    cpu_efficiency_pct: float | None


@dataclass(frozen=True)
class Jobstats:
    """sacct -P with jobstats' summary in AdminComment (--sacct): state, End - Start s, the
    summary's CPU efficiency % and memory peak MiB (as usage.*), and its GPUs, if any."""

    state: str
    elapsed_s: int | None
    cpu_efficiency_pct: float | None
    mem_peak_mib: float | None
    gpus: Gpus | None


@dataclass(frozen=True)
class Gpus:
    """An nvidia-smi log: GPUs, mean utilisation % over all samples, peak memory MiB."""

    count: int
    util_mean: float | None
    mem_peak_mib: float | None


@dataclass(frozen=True)
class Refused:
    """Exit 2, one line naming the file and containing ``says``."""

    option: str | None
    says: str


Expectation = Hottest | NoTime | Job | Gpus | Refused | Jobstats

EXPECTED: dict[str, Expectation] = {
    # --- profiles: text tables -------------------------------------------------------------
    "profiles/line_profiler-2.1.2-README-pystone.txt": Hottest("Proc2", 151, 13.5, 1e-6),
    "profiles/lp4.0.3-wide.txt": Hottest("train", 16, 100.0, 1e-6),
    "profiles/lp4.0.3-wide-ns.txt": Hottest("train", 16, 100.0, 1e-9),
    # line 150 `PI = self._rbf.calc_PI()`, 4931005.0 of 15.5956 s
    "profiles/rbf-mran-lprof.txt": Hottest("update_rbf", 150, 31.6, 1e-6),
    # kernprof -lv: the program's output first; line 142, 1339343.0
    "profiles/neural-net-kernprof-lv.txt": Hottest("backward", 142, 22.5, 1e-6),
    # 1e-09 unit, per-hit printed as "1e+06"; the hottest is calc's line 370 (47.9 ms, 93.7 %),
    # not collision_test's line 222 (34.5 ms, 73.6 %)
    "profiles/ftddp-1e-09.txt": Hottest("calc", 370, 93.7, 1e-9),
    # cProfile output, then kernprof -lv of 7 functions; main's line 195 plt.pause, 5.05 s
    "profiles/dd2358-cprofile-then-kernprof.txt": Hottest("main", 195, 55.8, 1e-6),
    # the oldest layout (File, Function, then Total time), integer times; line 180, 8141941
    "profiles/pycircleriser-old-layout.txt": Hottest("circlerise", 180, 26.8, 1e-6),
    "profiles/line_profiler-issue230-two-functions.txt": Hottest("g", 16, 60.0, 1e-6),
    # %lprun -u 1e-3: "Timer unit: 0.001 s", times in ms with a decimal
    "profiles/line_profiler-pr98-lprun-u1e-3.txt": Hottest("m", 2, 100.0, 1e-3),
    # hand-edited: rows 98-110 cut out and a source line broken ("ation"); a reader still sees
    # gradient's line 140 (24.1 %), the tool refuses the table as not line_profiler's own and
    # says what to give instead
    "profiles/project-hpc-hand-edited.txt": Refused(
        None, "rows 98-110 are missing, as in a table shortened by hand; give the .lprof file"
    ),
    # --- profiles: .lprof files (read with pickletools, never unpickled) ---------------------
    # timer unit 3.6467e-07 s (not a 1e-06 platform); main() line 330, 2048 hits
    "profiles/pytorch-a2c-ppo-acktr-main.py.lprof": Hottest(
        "main", 330, 53.0, 3.6467216519357346e-07
    ),
    "profiles/aiayn-train.py.lprof": Hottest("forward", 198, 37.8, 1e-6),
    # protocol 2 pickle of _line_profiler.LineStats (line_profiler 2.x era)
    "profiles/aiayn-py2-train.py.lprof": Hottest("forward", 393, 77.5, 1e-6),
    # line_profiler.line_profiler.LineStats (3.x and later); one timed line
    "profiles/watchmal-main.py.lprof": Hottest("SubsetSequentialSampler", 10, 100.0, 1e-6),
    # _get_move() decorated but never run: its timings list is empty
    "profiles/supergo-empty-train.py.lprof": NoTime("_get_move"),
    # --- seff ------------------------------------------------------------------------------
    # 2 nodes x 1 core; memory 137.64 MB estimated from several tasks
    "accounting/sheffield-hpc-memory-used-commands.rst": Job(
        "--seff", "COMPLETED", 220, 137.64, 35.68
    ),
    "accounting/reportseff-issue16-seff-2nodes.seff.txt": Job(
        "--seff", "COMPLETED", 27363, 7.70 * 1024, 98.62
    ),
    "accounting/csc-seff-puhti-2nodes.seff.txt": Job(
        "--seff", "COMPLETED", 742, 23.68 * 1024, 97.17
    ),
    # 4 nodes x 2 cores, 1.00 GB per core: 8.00 GB in all; 250.72 MB estimated (several tasks)
    "accounting/sigma2-seff-saga-4nodes.seff.txt": Job("--seff", "COMPLETED", 10, 250.72, 56.25),
    # lines indented in a code comment; 2 nodes x 2 cores, 4.00 GB per core: 16.00 GB in all
    "accounting/cybergis-seff-keeling-2nodes.seff.txt": Job("--seff", "COMPLETED", 3, 61.45, 16.67),
    # CSC's seff adds Partition and billing lines (listed as not understood)
    "accounting/csc-seff-roihu-billing.seff.txt": Job(
        "--seff", "COMPLETED", 579, 76.45 * 1024, 92.44
    ),
    # a site's banner form: each line behind "# ", "Wall-clock time: 00:00:53", CPU 00:06:58 of
    # 00:07:04 core-walltime, 14.86 GB estimated maximum, no memory request
    "accounting/reportseff-issue41-seff-banner.seff.txt": Job(
        "--seff", "COMPLETED", 53, 14.86 * 1024, 98.58
    ),
    # seff of two tasks of one array (the "Array Job ID" line): 00:02:10 and 00:03:30
    "accounting/seff-array-issue24-task0.seff.txt": Job(
        "--seff", "COMPLETED", 130, 5.58 * 1024, 26.46
    ),
    "accounting/seff-array-issue24-task207.seff.txt": Job(
        "--seff", "COMPLETED", 210, 5.46 * 1024, 36.93
    ),
    # only the two memory lines pasted: read (9.98 GB of 10.00 GB), the rest said missing
    "accounting/jobstats-issue57-seff-partial.seff.txt": Job(
        "--seff", None, None, 9.98 * 1024, None
    ),
    # NeSI's seff: elapsed on the "Job Wall-time: 7.67% 00:01:09 of 00:15:00 time limit" line,
    # memory used on "Mem Efficiency: 10.84% 111.00 MB of 1.00 GB", CPU efficiency as printed
    # (141.30 %: more CPU time than core-walltime), "State: ['OUT_OF_MEMORY']" and "State:
    # TIMEOUT" without an exit code; GPU 43 % and 510 MB are read by the parser, not facts
    "accounting/nesi-seff-completed.seff.txt": Job("--seff", "COMPLETED", 69, 111.0, 98.55),
    "accounting/nesi-seff-cpu-over-100.seff.txt": Job("--seff", "COMPLETED", 46, 233.29, 141.30),
    "accounting/nesi-seff-gpu-timeout.seff.txt": Job("--seff", "TIMEOUT", 904, 284.46, 98.5),
    # 11:17:04 = 40624 s, 107.69 GB
    "accounting/nesi-seff-nextflow-completed.seff.txt": Job(
        "--seff", "COMPLETED", 40624, 107.69 * 1024, 76.6
    ),
    # 05:20:01 = 19201 s, 44.55 GB
    "accounting/nesi-seff-nextflow-oom.seff.txt": Job(
        "--seff", "OUT_OF_MEMORY", 19201, 44.55 * 1024, 79.4
    ),
    # 3 nodes x 12 cores, 3 tasks: 1-03:24:26 = 98666 s; 170.59 GB over all tasks (55.79 to
    # 58.00 GB each) of 600 GB (200 GB per task)
    "accounting/nesi-seff-nextflow-3nodes.seff.txt": Job(
        "--seff", "COMPLETED", 98666, 170.59 * 1024, 34.8
    ),
    # --- sacct -----------------------------------------------------------------------------
    # Slurm 23.02.8 (data_parser v0.0.39), array task 12078642_6: 326 s on 10 CPUs, user+system
    # 1218 s -> 37.4 %; batch step MaxRSS 3462881280 bytes = 3302.46 MiB
    "accounting/slurmdog-sacct-23.02.json": Job("--sacct", "COMPLETED", 326, 3302.46, 37.36),
    # -P keyed on JobIDRaw, times as epoch seconds, no Elapsed, TotalCPU or MaxRSS columns:
    # 1690964225 - 1690927903 s; jobstats: 505333.1 CPU s on 15 cores, 1983451136 B peak
    "accounting/jobstats-sacct-P-jobidraw-timeout.txt": Jobstats(
        "TIMEOUT", 36322, 505333.1 / (36322 * 15) * 100, 1983451136 / 2**20, None
    ),
    # one A100: mean 98.6 %, 83314868224 B peak of 85899345920; 57620.8 CPU s on 12 cores
    "accounting/jobstats-sacct-P-gpu-completed-60155093.txt": Jobstats(
        "COMPLETED",
        50944,
        57620.8 / (50944 * 12) * 100,
        84683702272 / 2**20,
        Gpus(1, 98.6, 83314868224 / 2**20),
    ),
    # AllocTRES has gres/gpu=1 but the summary has "gpus": 0 and no GPU figures
    "accounting/jobstats-sacct-P-gpu-no-utilization-845136.txt": Jobstats(
        "COMPLETED", 19281, 19095.2 / 19281 * 100, 62427136 / 2**20, None
    ),
    # End Unknown: still running; a running job's figures are no one's advice
    "accounting/jobstats-sacct-P-running-10920562.txt": Jobstats("RUNNING", None, None, None, None),
    "accounting/torchx-sacct-het-1853.txt": Job("--sacct", "COMPLETED", None, None, None),
    "accounting/torchx-sacct-cancelled-89.txt": Job("--sacct", "CANCELLED", None, None, None),
    "accounting/torchx-slurm-squeue-output.json": Refused("--sacct", "not sacct --json"),
    "accounting/hb-jobinfo-sacct.txt": Refused("--sacct", "not '|'"),
    "accounting/slurmdog-sacct-noheader.txt": Refused("--sacct", "without -n (--noheader)"),
    "accounting/reportseff-issue37.sacct.txt": Refused("--sacct", "without -n (--noheader)"),
    "accounting/reportseff-issue41-debug.sacct.txt": Refused("--sacct", "no JobID or JobIDRaw"),
    "accounting/nesi-fixed-width.sacct.txt": Refused("--sacct", "columns aligned by spaces"),
    "accounting/jobstats-issue57-fixed-width.sacct.txt": Refused(
        "--sacct", "columns aligned by spaces"
    ),
    # --- nvidia-smi ------------------------------------------------------------------------
    # two RTX A6000, 473 rounds each: GPU 0 at 91.0 % on average, GPU 1 idle; peak 25073 MiB
    "nvidia-smi/openad-2gpu-query.csv": Gpus(2, 45.5, 25073.0),
    # one RTX 2070, one nvidia-smi call per second appended with its header: 224 rows, mean
    # 24.4 %, peak 890 MiB (the headers are no rows)
    "nvidia-smi/gpu-usage-header-every-second.csv": Gpus(1, 5458 / 224, 890.0),
    # only power.draw, every 50 ms: no utilisation, no memory
    "nvidia-smi/flame-power-only.csv": Gpus(1, None, None),
    # written by scripts, with query names as header: ISO and epoch timestamps
    "nvidia-smi/gpu-glasses-script-header.csv": Refused("--metrics", "is not like 2024/01/31"),
    "nvidia-smi/rpf-epoch-noheader-units.csv": Refused("--metrics", "is not like 2024/01/31"),
    "nvidia-smi/triton-cc-plain-table.txt": Refused("--metrics", "plain nvidia-smi table"),
}


def corpus() -> list[str]:
    return sorted(
        str(p.relative_to(REALWORLD))
        for folder in FOLDERS
        for p in (REALWORLD / folder).iterdir()
        if p.name != "MANIFEST.md" and p.suffix != ".py"
    )


def test_every_file_has_one_row() -> None:
    assert corpus() == sorted(EXPECTED)


def run(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def args_for(name: str, option: str | None) -> list[str]:
    path = str(REALWORLD / name)
    return ["report", *([option, path] if option else [path]), "--format", "json"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_what_a_careful_reader_concludes(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    expected = EXPECTED[name]
    option = "--metrics" if isinstance(expected, Gpus) else None
    if isinstance(expected, Jobstats):
        option = "--sacct"
    if isinstance(expected, Job | Refused):
        option = expected.option
    code, out, err = run(capsys, args_for(name, option))
    if isinstance(expected, Refused):
        assert code == 2 and len(err.splitlines()) == 1, err
        assert str(REALWORLD / name) in err and expected.says in err, err
        return
    assert code == 0, err
    report = json.loads(out)
    if isinstance(expected, Hottest):
        check_hottest(report["profile"], expected)
    elif isinstance(expected, NoTime):
        assert [fn["name"] for fn in report["profile"]["functions"]] == [expected.function]
        assert report["profile"]["total_s"] == 0
    elif isinstance(expected, Job):
        check_job(report["advice"]["facts"], expected)
    elif isinstance(expected, Jobstats):
        check_jobstats(report["advice"]["facts"], expected)
    else:
        check_gpus(report["advice"]["facts"], expected)


def check_hottest(profile: dict[str, Any], expected: Hottest) -> None:
    lines = [(fn["name"], ln) for fn in profile["functions"] for ln in fn["lines"]]
    function, hottest = max(lines, key=lambda pair: pair[1]["time_s"])
    assert (function, hottest["line"]) == (expected.function, expected.line)
    assert hottest["percent"] == pytest.approx(expected.percent, abs=0.06)
    assert profile["unit_s"] == pytest.approx(expected.unit_s, rel=1e-9)


def check_job(facts: dict[str, Any], expected: Job) -> None:
    if expected.option == "--seff":
        state, elapsed, mem, cpu = (
            "seff.state",
            "seff.wall_s",
            "seff.mem_used_mib",
            "seff.cpu_efficiency_pct",
        )
    else:
        state, elapsed, mem, cpu = (
            "sacct.state",
            "sacct.elapsed_s",
            "sacct.mem_peak_mib",
            "sacct.cpu_efficiency_pct",
        )
    assert facts.get(state) == expected.state
    assert facts.get(elapsed) == expected.elapsed_s
    for key, value in ((mem, expected.mem_peak_mib), (cpu, expected.cpu_efficiency_pct)):
        if value is None:
            assert key not in facts
        else:
            assert facts[key] == pytest.approx(value, abs=0.01)


def check_jobstats(facts: dict[str, Any], expected: Jobstats) -> None:
    assert facts["sacct.state"] == expected.state
    assert facts.get("sacct.elapsed_s") == expected.elapsed_s
    for key, value in (
        ("usage.cpu_efficiency_pct", expected.cpu_efficiency_pct),
        ("usage.mem_peak_mib", expected.mem_peak_mib),
    ):
        if value is None:
            assert key not in facts
        else:
            assert facts[key] == pytest.approx(value, abs=0.01)
    if expected.gpus is None:
        assert not any(key.startswith("gpu.") for key in facts)
    else:
        assert facts["gpu.source"] == "jobstats"
        check_gpus(facts, expected.gpus)


def check_gpus(facts: dict[str, Any], expected: Gpus) -> None:
    assert facts["gpu.count"] == expected.count
    for key, value in (
        ("gpu.util.mean", expected.util_mean),
        ("gpu.mem_used.max_mib", expected.mem_peak_mib),
    ):
        if value is None:
            assert key not in facts
        else:
            assert facts[key] == pytest.approx(value, abs=0.05)
