"""Acceptance: real input files in, `report --format json` and `apply` out, through the CLI.

Every expectation is derived from the inputs (the job script's directives, seff's numbers, the
profile's timings, the rule thresholds documented in rules/README.md), never copied from an
earlier output.
"""

from __future__ import annotations

import ast
import json
import math
import pickle
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, line_of, without_tuned_from
from tuneadvisor.advisor.sizing import MARGIN
from tuneadvisor.cli import main
from tuneadvisor.slurm.jobscript.model import JobScript
from tuneadvisor.trainscript.scan import scan_script

ADVICE = REPO / "tests" / "fixtures" / "advice"
TUTORIAL = ADVICE / "tutorial"
COMPUTE = ADVICE / "compute_bound"
SACCT_JSON = REPO / "tests" / "fixtures" / "slurm-22.05" / "05-sacct.json"

# rules/README.md: cores = max(4, 2 x current), workers = cores - 1, memory = 1.2 x peak
# rounded up to whole GiB, time = 1.5 x elapsed rounded up to a quarter hour.
MIN_CORES = 4
MEM_HEADROOM = 1.2
WORKER_ALLOWANCE_MIB = 512  # the plan's per-worker allowance without a recording


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def report(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code, out, err = cli(capsys, "report", *args, "--format", "json")
    assert code == 0, err
    assert err == ""
    doc: dict[str, Any] = json.loads(out)
    return doc


def findings(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in doc["findings"]}


def apply_unified_diff(text: str, diff: str) -> str:
    """Apply a one-file unified diff to ``text``, checking every context and removed line
    (what `patch -p1` would do, without needing the tool)."""
    old = text.splitlines(keepends=True)
    out: list[str] = []
    pos = 0
    lines = diff.splitlines(keepends=True)
    index = 0
    hunks = 0
    while index < len(lines):
        match = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", lines[index])
        index += 1
        if match is None:
            continue
        hunks += 1
        start = int(match.group(1)) - (0 if match.group(2) == "0" else 1)
        assert start >= pos, "hunks out of order"
        out.extend(old[pos:start])
        pos = start
        while index < len(lines) and not lines[index].startswith("@@"):
            tag, body = lines[index][0], lines[index][1:]
            index += 1
            if tag == "\\":
                continue
            if tag in " -":
                assert old[pos] == body, f"context differs: {old[pos]!r} != {body!r}"
                pos += 1
            if tag in " +":
                out.append(body)
    assert hunks, "no hunk in the patch"
    out.extend(old[pos:])
    return "".join(out)


def lprof_timings(path: Path) -> dict[int, tuple[int, int]]:
    """line -> (hits, ticks) of the one function in a fixture .lprof we made ourselves
    (trusted: tests/fixtures/advice/make_profiles.py wrote it)."""
    with path.open("rb") as stream:
        stats = pickle.load(stream)
    ((_, rows),) = stats.timings.items()
    return {line: (hits, ticks) for line, hits, ticks in rows}


def seff_numbers(text: str) -> dict[str, float]:
    """The numbers the tests need, read from seff's text by the test itself."""
    units = {"MB": 1.0, "GB": 1024.0}
    used = re.search(r"Memory Utilized: ([\d.]+) ([MG]B)", text)
    eff = re.search(r"CPU Efficiency: ([\d.]+)%", text)
    cores = re.search(r"^Cores(?: per node)?: (\d+)", text, re.M)
    assert used and eff and cores
    return {
        "peak_mib": float(used.group(1)) * units[used.group(2)],
        "cpu_eff": float(eff.group(1)),
        "cores": float(cores.group(1)),
    }


def copy_case(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / source.name
    shutil.copytree(source, target)
    return target


def other_lines_identical(before: bytes, after: bytes, changed: dict[str, str]) -> None:
    """``after`` is ``before`` with the value of each ``changed`` directive replaced and every
    other byte, the directive lines' comments included, the same; plus the one line that says
    what it was tuned from."""
    old = before.splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    stamps = [line for line in new if line.startswith(b"# tuneadvisor: tuned from ")]
    assert len(stamps) == 1, stamps
    new = [line for line in new if line not in stamps]
    assert len(old) == len(new)
    seen = set()
    for was, now in zip(old, new, strict=True):
        match = re.match(rb"(#SBATCH --([a-z-]+)=)(\S+)(.*)", was, re.S)
        option = match.group(2).decode() if match else None
        if option in changed:
            assert match is not None
            assert now == match.group(1) + changed[option].encode() + match.group(4)
            seen.add(option)
        else:
            assert now == was
    assert seen == set(changed)


# --------------------------------------------------------------------------- the tutorial


def test_tutorial_fixture_is_what_the_issue_describes() -> None:
    """The .lprof holds what the tutorial shows: 84.5 % of train() on the DataLoader line."""
    source = (TUTORIAL / "train_tutorial.py").read_text()
    timings = lprof_timings(TUTORIAL / "24752610.lprof")
    loop = line_of(source, "in enumerate(train_loader)")
    total = sum(ticks for _, ticks in timings.values())
    assert timings[loop][1] / total == pytest.approx(0.845)
    job = JobScript.parse((TUTORIAL / "job.sbatch").read_bytes())
    assert job.directives()["cpus-per-task"] == "1"
    assert job.directives()["mem"] == "8G"
    assert job.directives()["gres"] == "gpu:1"
    assert "num_workers=1" in source
    seff = seff_numbers((TUTORIAL / "seff.txt").read_text())
    assert seff["cpu_eff"] == 94.64
    assert seff["peak_mib"] == pytest.approx(1.31 * 1024)


def test_tutorial_report_lists_the_four_findings_with_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    case = copy_case(TUTORIAL, tmp_path)
    monkeypatch.chdir(tmp_path)  # not the job's folder: the launch line is resolved beside it
    doc = report(
        capsys,
        str(case / "24752610.lprof"),
        "--job",
        str(case / "job.sbatch"),
        "--seff",
        str(case / "seff.txt"),
    )
    source = (case / "train_tutorial.py").read_text()
    job = JobScript.parse((case / "job.sbatch").read_bytes())
    cores = int(job.directives()["cpus-per-task"])
    seff = seff_numbers((case / "seff.txt").read_text())
    # Sized by the step-time model in one step: the script's one worker kept the loop
    # waiting 84.5 % of the step, so it takes about a step per batch; the fewest workers
    # that cover the loop's other 15.5 % with the margin, a core each and one for the main.
    share = doc["advice"]["facts"]["profile.loader_share"]
    want_workers = math.ceil(1 * (1 + MARGIN) / (1 - share))
    want_cores = want_workers + 1
    assert cores == 1 and want_workers == 8  # 1.2 / 0.155 = 7.7
    # The peak was measured with the script's one worker; each added one is counted with
    # the plan's allowance.
    added = want_workers - 1
    need = (seff["peak_mib"] + added * WORKER_ALLOWANCE_MIB) * MEM_HEADROOM
    want_mem = f"{math.ceil(need / 1024)}G"

    found = findings(doc)
    assert set(found) == {
        "dataloader-bound",
        "under-requested-cores",
        "over-requested-memory",
        "num-workers-hardcoded",
    }
    loader = found["dataloader-bound"]
    assert loader["suggest"]["sbatch"] == {"cpus-per-task": want_cores}
    assert loader["suggest"]["script"] == {"num_workers": want_workers}
    assert loader["evidence"]["DataLoader share of the training function (%)"] == 84.5
    assert loader["evidence_units"]["DataLoader share of the training function (%)"] == "%"
    cores_f = found["under-requested-cores"]
    assert cores_f["suggest"]["sbatch"] == {"cpus-per-task": want_cores}
    assert cores_f["evidence"]["CPU efficiency (%)"] == seff["cpu_eff"]
    assert cores_f["evidence"]["cores allocated"] == cores
    mem = found["over-requested-memory"]
    assert mem["suggest"]["sbatch"] == {"mem": want_mem}
    assert mem["evidence"]["requested (MiB)"] == 8 * 1024
    workers = found["num-workers-hardcoded"]
    assert workers["evidence"]["num_workers"] == 1
    assert workers["evidence"]["line"] == line_of(source, "num_workers=1")

    # The plan merges the two findings that ask for cores.
    plan = doc["advice"]["plan"]
    assert plan["sbatch"]["cpus-per-task"]["value"] == want_cores
    assert set(plan["sbatch"]["cpus-per-task"]["because"]) == {
        "dataloader-bound",
        "under-requested-cores",
    }
    assert plan["sbatch"]["mem"]["value"] == want_mem
    assert plan["script"]["num_workers"]["value"] == want_workers

    # The profile part: the DataLoader line as line_profiler prints it.
    (func,) = doc["profile"]["functions"]
    assert func["name"] == "train"
    by_line = {ln["line"]: ln for ln in func["lines"]}
    loop = by_line[line_of(source, "in enumerate(train_loader)")]
    assert loop["percent"] == pytest.approx(84.5)
    assert loop["kind"] == "dataloader"
    assert "enumerate(train_loader)" in loop["source"]
    assert doc["job"]["directives"] == job.directives()
    assert doc["advice"]["facts"]["profile.loader_share"] == pytest.approx(0.845)
    # Only the GPU metrics are missing.
    assert len(doc["advice"]["sharpen"]) == 1
    assert "--metrics" in doc["advice"]["sharpen"][0]


def test_tutorial_apply_writes_tuned_job_and_patch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = copy_case(TUTORIAL, tmp_path)
    job_path = case / "job.sbatch"
    before = {p.name: p.read_bytes() for p in case.iterdir()}
    code, out, err = cli(
        capsys,
        "apply",
        str(case / "24752610.lprof"),
        "--job",
        str(job_path),
        "--seff",
        str(case / "seff.txt"),
    )
    assert code == 0, err
    assert err == ""
    for fid in ("dataloader-bound", "under-requested-cores", "over-requested-memory"):
        assert fid in out

    # Inputs untouched; exactly two new files.
    for name, data in before.items():
        assert (case / name).read_bytes() == data, name
    new = sorted(p.name for p in case.iterdir() if p.name not in before)
    assert new == ["job.tuned.sbatch", "train_tutorial.py.tuneadvisor.patch"]

    tuned_bytes = (case / "job.tuned.sbatch").read_bytes()
    tuned = JobScript.parse(tuned_bytes)
    original = JobScript.parse(before["job.sbatch"])
    # 8 workers sized by the step-time model and one core for the main process (the
    # report's test above derives them); 1.31 GB + 7 more workers of 512 MiB, x 1.2
    assert tuned.directives()["cpus-per-task"] == "9"
    assert tuned.directives()["mem"] == "6G"
    rest = {k: v for k, v in original.directives().items() if k not in ("cpus-per-task", "mem")}
    assert {k: v for k, v in tuned.directives().items() if k in rest} == rest
    assert set(tuned.directives()) == set(original.directives())
    assert not tuned.problems
    other_lines_identical(before["job.sbatch"], tuned_bytes, {"cpus-per-task": "9", "mem": "6G"})

    # The patch makes the script read SLURM_CPUS_PER_TASK, and nothing else changes.
    script = before["train_tutorial.py"].decode()
    patch = (case / "train_tutorial.py.tuneadvisor.patch").read_text()
    assert patch.startswith("--- a/train_tutorial.py\n+++ b/train_tutorial.py\n")
    patched = apply_unified_diff(script, patch)
    assert "SLURM_CPUS_PER_TASK" in patched
    tree = ast.parse(patched)  # still Python
    assert ast.get_docstring(tree) == ast.get_docstring(ast.parse(script))
    assert any(
        isinstance(node, ast.Import) and [a.name for a in node.names] == ["os"]
        for node in tree.body
    )
    removed = [ln for ln in script.splitlines() if ln not in patched.splitlines()]
    assert removed == [ln for ln in script.splitlines() if "num_workers=1" in ln]
    facts = scan_script(patched).facts()
    assert facts["script.num_workers.source"] == "slurm_env"
    assert facts["script.num_workers.env"] == "SLURM_CPUS_PER_TASK"


# --------------------------------------------------------------------------- compute-bound


def test_compute_bound_run_with_matching_resources_has_no_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = copy_case(COMPUTE, tmp_path)
    args = (
        str(case / "24800001.lprof"),
        "--job",
        str(case / "job.sbatch"),
        "--seff",
        str(case / "seff.txt"),
        "--metrics",
        str(case / "nvidia-smi.csv"),
    )
    doc = report(capsys, *args)

    # The inputs are what the test says they are.
    source = (case / "train_compute.py").read_text()
    timings = lprof_timings(case / "24800001.lprof")
    loop = timings[line_of(source, "in enumerate(train_loader)")][1]
    share = loop / sum(t for _, t in timings.values())
    assert share == pytest.approx(0.02)
    utils = [
        float(row.split(", ")[4].rstrip(" %"))
        for row in (case / "nvidia-smi.csv").read_text().splitlines()[1:]
    ]
    facts = doc["advice"]["facts"]
    assert facts["profile.loader_share"] == pytest.approx(share)
    assert facts["gpu.util.mean"] == pytest.approx(sum(utils) / len(utils))
    assert facts["gpu.util.mean"] > 85
    assert facts["job.cpus_per_task"] == 8
    assert facts["script.num_workers.source"] == "slurm_env"
    seff = seff_numbers((case / "seff.txt").read_text())
    assert seff["peak_mib"] * MEM_HEADROOM > facts["job.mem_mib"] / 2  # memory fits

    assert doc["findings"] == []
    assert doc["advice"]["sharpen"] == []
    assert doc["advice"]["job_diff"] == ""
    assert doc["advice"]["script_patch"] == ""

    before = sorted(p.name for p in case.iterdir())
    code, out, err = cli(capsys, "apply", *args)
    assert code == 0, err
    assert "nothing to change" in out
    assert (case / "job.tuned.sbatch").read_bytes() == (case / "job.sbatch").read_bytes()
    assert sorted(p.name for p in case.iterdir()) == sorted([*before, "job.tuned.sbatch"])


# --------------------------------------------------------------------------- absent inputs


def test_profile_alone_fires_only_what_the_profile_shows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = report(capsys, str(TUTORIAL / "24752610.lprof"))
    found = findings(doc)
    assert set(found) == {"dataloader-bound"}
    # Its suggestion needs the job's cores: left out, not guessed.
    assert found["dataloader-bound"]["suggest"]["sbatch"] == {}
    assert found["dataloader-bound"]["suggest"]["script"] == {}
    skipped = {s["id"]: s["missing"] for s in doc["advice"]["not_evaluated"]}
    for rule in (
        "under-requested-cores",
        "over-requested-memory",
        "num-workers-hardcoded",
        "too-many-workers",
        "gpu-idle",
        "low-gpu-util",
        "dos-line-breaks",
    ):
        assert rule in skipped, rule
    assert "usage.mem_requested_mib" in skipped["over-requested-memory"]
    assert "usage.cpu_efficiency_pct" in skipped["under-requested-cores"]
    sharpen = " | ".join(doc["advice"]["sharpen"])
    for needle in ("--job", "--seff", "--sacct", "--metrics", "--script"):
        assert needle in sharpen
    assert "line_profiler" not in sharpen  # the profile was given
    assert doc["advice"]["plan"]["sbatch"] == {}
    assert doc["job"] is None


# --------------------------------------------------------------------------- many cases

SEFF_TEMPLATE = """\
Job ID: 4242
Cluster: della
User/Group: alice/users
State: COMPLETED (exit code 0)
Cores: {cores}
CPU Utilized: {cpu}
CPU Efficiency: {eff:.2f}% of {core_wall} core-walltime
Job Wall-clock time: {wall}
Memory Utilized: {used}
Memory Efficiency: {mem_eff:.2f}% of {req}
"""


def hms(seconds: int) -> str:
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def seff_text(cores: int, eff_pct: float, wall_s: int, used_gb: float, req_gb: float) -> str:
    core_wall = cores * wall_s
    return SEFF_TEMPLATE.format(
        cores=cores,
        cpu=hms(round(core_wall * eff_pct / 100)),
        eff=eff_pct,
        core_wall=hms(core_wall),
        wall=hms(wall_s),
        used=f"{used_gb:.2f} GB",
        mem_eff=100 * used_gb / req_gb,
        req=f"{req_gb:.2f} GB",
    )


def nvidia_smi_csv(utils: list[int], gpus: int = 1) -> str:
    header = (
        "timestamp, index, name, uuid, utilization.gpu [%], utilization.memory [%], "
        "memory.used [MiB], memory.total [MiB], power.draw [W]"
    )
    rows = [header]
    for second, util in enumerate(utils):
        for gpu in range(gpus):
            rows.append(
                f"2024/02/14 08:{second // 60:02d}:{second % 60:02d}.{100 + gpu:03d}, {gpu}, "
                f"NVIDIA A100-SXM4-40GB, GPU-0000000{gpu}-aaaa-bbbb-cccc-dddddddddddd, "
                f"{util} %, {util // 2} %, 9120 MiB, 40960 MiB, {60 + 2.5 * util:.2f} W"
            )
    return "\n".join(rows) + "\n"


def job_text(*directives: str, launch: str = "python train.py") -> str:
    lines = ["#!/bin/bash", *(f"#SBATCH {d}" for d in directives), "", "module load cuda", launch]
    return "\n".join(lines) + "\n"


def train_text(loader_kwargs: str, loop: str = "", head: str = "", setup: str = "") -> str:
    """A small but complete training script; the DataLoader call is on one line."""
    return (
        '"""Training script for one test case."""\n'
        "import argparse\n"
        "import os\n\n"
        "import torch\n"
        "import torch.nn.functional as F\n"
        "from torch.utils.data import DataLoader\n"
        f"{head}\n\n"
        "def main():\n"
        "    parser = argparse.ArgumentParser()\n"
        '    parser.add_argument("--num-workers", type=int, default=1)\n'
        '    parser.add_argument("--epochs", type=int, default=1)\n'
        "    args = parser.parse_args()\n"
        "    dataset = torch.load('data.pt')\n"
        "    model = torch.nn.Linear(10, 2).cuda()\n"
        f"{setup}"
        f"    train_loader = DataLoader(dataset, batch_size=64, {loader_kwargs})\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for step, (data, target) in enumerate(train_loader):\n"
        "        data, target = data.cuda(), target.cuda()\n"
        "        optimizer.zero_grad()\n"
        "        loss = F.cross_entropy(model(data), target)\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        f"{loop}"
        "\n\nif __name__ == '__main__':\n"
        "    main()\n"
    )


DDP_HEAD = (
    "import torch.distributed as dist\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    "from torch.utils.data.distributed import DistributedSampler\n"
)
DDP_SETUP = (
    '    rank = int(os.environ["SLURM_PROCID"])\n'
    '    world_size = int(os.environ["SLURM_NTASKS"])\n'
    '    dist.init_process_group("nccl", rank=rank, world_size=world_size)\n'
    "    model = DDP(model)\n"
)
GOOD_LOADER = "num_workers=3, pin_memory=True"
SAMPLED_LOADER = "sampler=DistributedSampler(dataset), num_workers=3, pin_memory=True"
# After an epoch's loop: the sampler is told the next epoch (sampler-without-set-epoch).
SET_EPOCH = "    train_loader.sampler.set_epoch(1)\n"


@dataclass
class Case:
    """Files of one run (name -> text) and what the report must and must not say."""

    files: dict[str, str]
    fires: set[str]
    quiet: set[str] = field(default_factory=set)
    extra_args: tuple[str, ...] = ()
    check: Callable[[dict[str, Any], Path], object] | None = None


def _evidence(fid: str, expected: dict[str, object]) -> Callable[[dict[str, Any], Path], None]:
    def check(doc: dict[str, Any], _: Path) -> None:
        evidence = findings(doc)[fid]["evidence"]
        for label, value in expected.items():
            assert evidence[label] == value, (label, evidence)

    return check


def _suggest(fid: str, section: str, **expected: object) -> Callable[[dict[str, Any], Path], None]:
    def check(doc: dict[str, Any], _: Path) -> None:
        got = findings(doc)[fid]["suggest"][section]
        assert got == {
            k.replace("_", "-") if section == "sbatch" else k: v for k, v in expected.items()
        }

    return check


def _invalid_line(needle: str) -> Callable[[dict[str, Any], Path], None]:
    def check(doc: dict[str, Any], where: Path) -> None:
        text = (where / "job.sbatch").read_text()
        first = findings(doc)["invalid-directive"]["evidence"]["first"]
        assert first.startswith(f"line {line_of(text, needle)}:"), first
        assert findings(doc)["invalid-directive"]["evidence"]["invalid directives"] == 1

    return check


def _gpu_mean(fid: str, utils: list[int]) -> Callable[[dict[str, Any], Path], None]:
    def check(doc: dict[str, Any], _: Path) -> None:
        evidence = findings(doc)[fid]["evidence"]
        kind = "share of time any kernel ran (%)"
        label = {"low-gpu-util": f"mean GPU utilization of the busy GPUs, {kind}"}.get(
            fid, f"mean GPU utilization, {kind}"
        )
        assert evidence[label] == round(sum(utils) / len(utils), 1)
        assert evidence["samples"] == len(utils)

    return check


def _sacct_time(elapsed: int) -> Callable[[dict[str, Any], Path], None]:
    def check(doc: dict[str, Any], _: Path) -> None:
        quarter_hours = math.ceil(elapsed * 1.5 / 900)
        want = f"{quarter_hours * 15 // 60:02d}:{quarter_hours * 15 % 60:02d}:00"
        assert findings(doc)["over-requested-time"]["suggest"]["sbatch"] == {"time": want}
        assert findings(doc)["over-requested-time"]["evidence"]["elapsed (s)"] == elapsed

    return check


def _sacct_copy(elapsed: int) -> str:
    doc = json.loads(SACCT_JSON.read_text())
    (job,) = doc["jobs"]
    job["time"]["elapsed"] = elapsed
    job["time"]["end"] = job["time"]["start"] + elapsed
    return json.dumps(doc, indent=2)


def _passed_from_slurm(doc: dict[str, Any], _: Path) -> None:
    facts = doc["advice"]["facts"]
    assert facts["script.num_workers.source"] == "argparse"
    assert facts["script.num_workers.passed_source"] == "slurm_env"


LOW_UTILS = [20, 35, 40, 25, 30, 45, 28, 33, 22, 38, 31, 29]  # mean 31.3 %
IDLE_UTILS = [0, 2, 5, 1, 0, 3, 8, 0, 4, 2, 6, 1]  # mean 2.7 %
GPU_JOB = ("--cpus-per-task=4", "--mem=16G", "--gres=gpu:1")

CASES: dict[str, Case] = {
    "too-many-workers: 16 workers on 4 cores": Case(
        {
            "job.sbatch": job_text(*GPU_JOB),
            "train.py": train_text("num_workers=16, pin_memory=True"),
        },
        fires={"too-many-workers", "num-workers-hardcoded"},
        quiet={"pin-memory-off", "sync-in-loop"},
        check=lambda doc, where: (
            _evidence("too-many-workers", {"num_workers": 16, "cores requested": 4})(doc, where),
            _suggest("too-many-workers", "script", num_workers=3)(doc, where),
        ),
    ),
    "workers that fit": Case(
        {"job.sbatch": job_text(*GPU_JOB), "train.py": train_text(GOOD_LOADER)},
        fires={"num-workers-hardcoded"},
        quiet={"too-many-workers", "pin-memory-off", "sync-in-loop"},
    ),
    "pin-memory-off on a GPU job": Case(
        {
            "job.sbatch": job_text(*GPU_JOB),
            "train.py": train_text("num_workers=3, pin_memory=False"),
        },
        fires={"pin-memory-off"},
        check=_suggest("pin-memory-off", "script", pin_memory=True),
    ),
    "pin_memory left at its default on a GPU job": Case(
        {"job.sbatch": job_text(*GPU_JOB), "train.py": train_text("num_workers=3")},
        fires={"pin-memory-off"},
    ),
    "pin_memory off on a CPU job": Case(
        {
            "job.sbatch": job_text("--cpus-per-task=4"),
            "train.py": train_text("num_workers=3, pin_memory=False"),
        },
        fires=set(),
        quiet={"pin-memory-off"},
    ),
    "sync-in-loop: loss.item() every step": Case(
        {
            "job.sbatch": job_text(*GPU_JOB),
            "train.py": train_text(GOOD_LOADER, loop="        print(loss.item())\n"),
        },
        fires={"sync-in-loop"},
        check=_evidence("sync-in-loop", {"syncs every step": 1}),
    ),
    "sync every 100 steps only": Case(
        {
            "job.sbatch": job_text(*GPU_JOB),
            "train.py": train_text(
                GOOD_LOADER, loop=("        if step % 100 == 0:\n            print(loss.item())\n")
            ),
        },
        fires=set(),
        quiet={"sync-in-loop"},
    ),
    "DDP without a DistributedSampler": Case(
        {
            "job.sbatch": job_text(
                "--ntasks=2", "--gres=gpu:2", "--cpus-per-task=4", launch="srun python train.py"
            ),
            "train.py": train_text(GOOD_LOADER, head=DDP_HEAD, setup=DDP_SETUP),
        },
        fires={"ddp-missing-distributed-sampler"},
        quiet={"ddp-world-size-mismatch", "tasks-gpus-mismatch"},
    ),
    "DDP with a DistributedSampler": Case(
        {
            "job.sbatch": job_text(
                "--ntasks=2",
                "--gres=gpu:2",
                "--cpus-per-task=4",
                launch="srun -c $SLURM_CPUS_PER_TASK python train.py",  # right on 22.05 too
            ),
            "train.py": train_text(SAMPLED_LOADER, head=DDP_HEAD, setup=DDP_SETUP, loop=SET_EPOCH),
        },
        fires=set(),
        quiet={"ddp-missing-distributed-sampler", "ddp-world-size-mismatch", "tasks-gpus-mismatch"},
    ),
    "world size 4 written in the script, 2 tasks": Case(
        {
            "job.sbatch": job_text(
                "--ntasks=2", "--gres=gpu:2", "--cpus-per-task=4", launch="srun python train.py"
            ),
            "train.py": train_text(
                SAMPLED_LOADER,
                head=DDP_HEAD,
                setup=DDP_SETUP.replace("world_size=world_size", "world_size=4"),
            ),
        },
        fires={"ddp-world-size-mismatch"},
        check=_evidence(
            "ddp-world-size-mismatch", {"world size in the script": 4, "tasks in the job": 2}
        ),
    ),
    "srun DDP: 1 task and 4 GPUs": Case(
        {
            "job.sbatch": job_text(
                "--nodes=1",
                "--ntasks-per-node=1",
                "--gres=gpu:4",
                "--cpus-per-task=4",
                launch="srun python train.py",
            ),
            "train.py": train_text(SAMPLED_LOADER, head=DDP_HEAD, setup=DDP_SETUP, loop=SET_EPOCH),
        },
        fires={"tasks-gpus-mismatch"},
        check=_suggest("tasks-gpus-mismatch", "sbatch", ntasks_per_node=4),
    ),
    "torchrun DDP: 1 task and 4 GPUs is right": Case(
        {
            "job.sbatch": job_text(
                "--nodes=1",
                "--ntasks-per-node=1",
                "--gres=gpu:4",
                "--cpus-per-task=16",  # 4 ranks x (3 workers + 1): too-many-workers is quiet
                launch="export OMP_NUM_THREADS=4\ntorchrun --nproc_per_node=4 train.py",
            ),
            "train.py": train_text(SAMPLED_LOADER, head=DDP_HEAD, setup=DDP_SETUP, loop=SET_EPOCH),
        },
        fires=set(),
        quiet={"tasks-gpus-mismatch"},
    ),
    "srun starting one torchrun per node: 1 task and 4 GPUs is right": Case(
        {
            "job.sbatch": job_text(
                "--nodes=2",
                "--ntasks-per-node=1",
                "--gres=gpu:4",
                "--cpus-per-task=16",
                launch="export OMP_NUM_THREADS=4 SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK\n"
                "srun torchrun --nnodes=2 --nproc_per_node=4 train.py",
            ),
            "train.py": train_text(SAMPLED_LOADER, head=DDP_HEAD, setup=DDP_SETUP, loop=SET_EPOCH),
        },
        fires=set(),
        quiet={"tasks-gpus-mismatch"},
    ),
    "CRLF job script": Case(
        {
            "job.sbatch": job_text(*GPU_JOB).replace("\n", "\r\n"),
            "train.py": train_text(GOOD_LOADER),
        },
        fires={"dos-line-breaks"},
    ),
    "--cpus-per-task=72.": Case(
        {
            "job.sbatch": job_text("--job-name=x", "--cpus-per-task=72.", "--gres=gpu:1"),
            "train.py": train_text(GOOD_LOADER),
        },
        fires={"invalid-directive"},
        check=_invalid_line("--cpus-per-task=72."),
    ),
    "--mem=8X": Case(
        {
            "job.sbatch": job_text("--job-name=x", "--gres=gpu:1", "--mem=8X"),
            "train.py": train_text(GOOD_LOADER),
        },
        fires={"invalid-directive"},
        check=_invalid_line("--mem=8X"),
    ),
    "--time=abc": Case(
        {
            "job.sbatch": job_text("--time=abc", "--job-name=x", "--gres=gpu:1"),
            "train.py": train_text(GOOD_LOADER),
        },
        fires={"invalid-directive"},
        check=_invalid_line("--time=abc"),
    ),
    "GPU busy a third of the time": Case(
        {"job.sbatch": job_text(*GPU_JOB), "gpu.csv": nvidia_smi_csv(LOW_UTILS)},
        fires={"low-gpu-util"},
        quiet={"gpu-idle"},
        extra_args=("--metrics", "gpu.csv"),
        check=_gpu_mean("low-gpu-util", LOW_UTILS),
    ),
    "GPU idle": Case(
        {"job.sbatch": job_text(*GPU_JOB), "gpu.csv": nvidia_smi_csv(IDLE_UTILS)},
        fires={"gpu-idle"},
        quiet={"low-gpu-util"},
        extra_args=("--metrics", "gpu.csv"),
        check=_gpu_mean("gpu-idle", IDLE_UTILS),
    ),
    "GPU busy": Case(
        {"job.sbatch": job_text(*GPU_JOB), "gpu.csv": nvidia_smi_csv([90] * 12)},
        fires=set(),
        quiet={"gpu-idle", "low-gpu-util"},
        extra_args=("--metrics", "gpu.csv"),
    ),
    "one of two GPUs never used (recorded nvidia-smi log)": Case(
        {
            "job.sbatch": job_text("--job-name=x", "--gres=gpu:2"),
            "gpu.csv": (REPO / "tests/fixtures/nvidia-smi/a100-2gpu-one-idle.csv").read_text(),
        },
        fires={"some-gpus-idle"},
        quiet={"gpu-idle"},
        extra_args=("--metrics", "gpu.csv"),
    ),
    "two GPUs, both busy": Case(
        {
            "job.sbatch": job_text("--job-name=x", "--gres=gpu:2"),
            "gpu.csv": nvidia_smi_csv([90] * 12, gpus=2),
        },
        fires=set(),
        quiet={"gpu-idle", "low-gpu-util", "some-gpus-idle"},
        extra_args=("--metrics", "gpu.csv"),
    ),
    "two GPUs, both idle: gpu-idle alone": Case(
        {
            "job.sbatch": job_text("--job-name=x", "--gres=gpu:2"),
            "gpu.csv": nvidia_smi_csv(IDLE_UTILS, gpus=2),
        },
        fires={"gpu-idle"},
        quiet={"some-gpus-idle"},
        extra_args=("--metrics", "gpu.csv"),
    ),
    "too few GPU samples to judge": Case(
        {"job.sbatch": job_text(*GPU_JOB), "gpu.csv": nvidia_smi_csv([0, 1, 0])},
        fires=set(),
        quiet={"gpu-idle", "low-gpu-util"},
        extra_args=("--metrics", "gpu.csv"),
    ),
    "over-requested-time: the recorded sacct job (11 s) with a 2 h limit": Case(
        {"job.sbatch": job_text(*GPU_JOB, "--time=02:00:00"), "sacct.json": SACCT_JSON.read_text()},
        fires={"over-requested-time"},
        extra_args=("--sacct", "sacct.json"),
        check=_sacct_time(json.loads(SACCT_JSON.read_text())["jobs"][0]["time"]["elapsed"]),
    ),
    "over-requested-time: 20 minutes of 2 hours": Case(
        {"job.sbatch": job_text(*GPU_JOB, "--time=02:00:00"), "sacct.json": _sacct_copy(1200)},
        fires={"over-requested-time"},
        extra_args=("--sacct", "sacct.json", "--jobid", "1"),
        check=_sacct_time(1200),
    ),
    "time well used": Case(
        {"job.sbatch": job_text(*GPU_JOB, "--time=02:00:00"), "sacct.json": _sacct_copy(5400)},
        # The recorded job's peak, 316 MiB, of the 16G asked for.
        fires={"over-requested-memory"},
        quiet={"over-requested-time"},
        extra_args=("--sacct", "sacct.json"),
    ),
    "--num-workers ${SLURM_CPUS_PER_TASK} on the launch line": Case(
        {
            "job.sbatch": job_text(
                *GPU_JOB, launch="python train.py --num-workers ${SLURM_CPUS_PER_TASK}"
            ),
            "train.py": train_text("num_workers=args.num_workers, pin_memory=True"),
        },
        fires=set(),
        quiet={"num-workers-hardcoded", "too-many-workers"},
        check=_passed_from_slurm,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_case(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = CASES[name]
    for file, text in case.files.items():
        (tmp_path / file).write_bytes(text.encode())
    args = ["--job", str(tmp_path / "job.sbatch")]
    args += [str(tmp_path / a) if a in case.files else a for a in case.extra_args]
    doc = report(capsys, *args)
    ids = set(findings(doc))
    assert case.fires <= ids, f"missing {case.fires - ids}; got {ids}"
    assert not case.quiet & ids, f"unexpected {case.quiet & ids}"
    if not case.fires:
        assert not ids - {"num-workers-hardcoded"}, ids
    if case.check is not None:
        case.check(doc, tmp_path)


# --------------------------------------------------------------------------- apply in cases

SEFF_ONE_CORE_BUSY = seff_text(cores=1, eff_pct=95.0, wall_s=1800, used_gb=6.0, req_gb=8.0)
SEFF_FOUR_CORES_BUSY = seff_text(cores=4, eff_pct=96.0, wall_s=1800, used_gb=6.0, req_gb=8.0)


def write_case(tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (tmp_path / name).write_bytes(text.encode())


def test_crlf_job_is_written_with_lf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = job_text("--cpus-per-task=1", "--mem=8G", "--gres=gpu:1").replace("\n", "\r\n")
    write_case(
        tmp_path,
        {"job.sbatch": job, "train.py": train_text(GOOD_LOADER), "seff.txt": SEFF_ONE_CORE_BUSY},
    )
    code, out, err = cli(
        capsys, "apply", "--job", str(tmp_path / "job.sbatch"), "--seff", str(tmp_path / "seff.txt")
    )
    assert code == 0, err
    assert "dos-line-breaks" in out
    tuned = (tmp_path / "job.tuned.sbatch").read_bytes()
    assert b"\r" not in tuned
    assert (tmp_path / "job.sbatch").read_bytes() == job.encode()  # input untouched
    parsed = JobScript.parse(tuned)
    assert not [p for p in parsed.problems if p.id == "dos-line-breaks"]
    assert parsed.directives()["cpus-per-task"] == str(MIN_CORES)  # max(4, 2 x 1)
    # Apart from the line ends and the one value, the same bytes.
    expected = job.replace("\r\n", "\n").replace(
        "--cpus-per-task=1", f"--cpus-per-task={MIN_CORES}"
    )
    assert without_tuned_from(tuned.decode()) == expected


def test_crlf_job_without_other_findings_is_still_converted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = job_text("--cpus-per-task=4", "--gres=gpu:1").replace("\n", "\r\n")
    write_case(tmp_path, {"job.sbatch": job, "train.py": train_text(GOOD_LOADER)})
    code, _, err = cli(capsys, "apply", "--job", str(tmp_path / "job.sbatch"))
    assert code == 0, err
    assert (tmp_path / "job.tuned.sbatch").read_bytes() == job.replace("\r\n", "\n").encode()


def test_site_caps_cores_per_gpu_and_workers_follow(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    per_gpu = 6
    site = f'[partitions.gpu]\ncores = 64\nmem = "500G"\ngpus = 8\nmax_cores_per_gpu = {per_gpu}\n'
    job = job_text(
        "--partition=gpu",
        "--cpus-per-task=4",
        "--gres=gpu:1",
        launch="srun python train.py --num-workers 3 --epochs 10",
    )
    write_case(
        tmp_path,
        {
            "job.sbatch": job,
            "seff.txt": SEFF_FOUR_CORES_BUSY,
            "site.toml": site,
            "train.py": train_text("num_workers=args.num_workers, pin_memory=True"),
        },
    )
    args = (
        "--job",
        str(tmp_path / "job.sbatch"),
        "--seff",
        str(tmp_path / "seff.txt"),
        "--site",
        str(tmp_path / "site.toml"),
    )
    doc = report(capsys, *args)
    # Unbounded, the rule asks for max(4, 2 x 4) = 8 cores; the finding shows the plan's
    # one settled value, capped, as the plan does.
    assert findings(doc)["under-requested-cores"]["suggest"]["sbatch"] == {"cpus-per-task": 6}
    plan = doc["advice"]["plan"]
    assert plan["sbatch"]["cpus-per-task"]["value"] == per_gpu  # 1 GPU x 6 cores
    assert plan["script"]["num_workers"]["value"] == per_gpu - 1
    assert any("capped" in note for note in plan["notes"])
    assert doc["advice"]["facts"]["node.max_cores_per_gpu"] == per_gpu

    code, _, err = cli(capsys, "apply", *args)
    assert code == 0, err
    tuned = (tmp_path / "job.tuned.sbatch").read_text()
    assert JobScript.parse(tuned).directives()["cpus-per-task"] == str(per_gpu)
    assert f"srun python train.py --num-workers {per_gpu - 1} --epochs 10\n" in tuned


def test_site_without_the_jobs_partition_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = "[partitions.gpu]\ncores = 64\nmax_cores_per_gpu = 2\n[partitions.cpu]\ncores = 8\n"
    write_case(
        tmp_path,
        {
            "job.sbatch": job_text("--partition=big", "--cpus-per-task=4", "--gres=gpu:1"),
            "seff.txt": SEFF_FOUR_CORES_BUSY,
            "site.toml": site,
        },
    )
    doc = report(
        capsys,
        "--job",
        str(tmp_path / "job.sbatch"),
        "--seff",
        str(tmp_path / "seff.txt"),
        "--site",
        str(tmp_path / "site.toml"),
    )
    assert doc["advice"]["plan"]["sbatch"]["cpus-per-task"]["value"] == 8
    # no node of the site's: only the default ceiling, the node's size being unknown
    node = {k for k in doc["advice"]["facts"] if k.startswith("node.")}
    assert node == {"node.assumed", "node.cores", "node.mem_mib"}
    assert doc["advice"]["facts"]["node.cores"] == 64


ARGPARSE_WORKERS = train_text("num_workers=args.num_workers, pin_memory=True")


def apply_with_launch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], launch: str
) -> tuple[str, str, str]:
    """`apply` on a one-core job whose training takes --num-workers, one busy core in seff:
    (the job as written, what apply printed, the tuned job)."""
    job = job_text("--cpus-per-task=1", "--mem=8G", "--gres=gpu:1", launch=launch)
    files = {"job.sbatch": job, "train.py": ARGPARSE_WORKERS, "seff.txt": SEFF_ONE_CORE_BUSY}
    write_case(tmp_path, files)
    code, out, err = cli(
        capsys, "apply", "--job", str(tmp_path / "job.sbatch"), "--seff", str(tmp_path / "seff.txt")
    )
    assert code == 0, err
    return job, out, without_tuned_from((tmp_path / "job.tuned.sbatch").read_text())


@pytest.mark.parametrize(
    ("launch", "tuned_launch"),
    [
        # a line ending in a quoted word is no shell string: the option is appended
        ('srun python train.py --data-dir "$DATA"',
         'srun python train.py --data-dir "$DATA" --num-workers 3'),
        # workers that follow SLURM_CPUS_PER_TASK need no edit: left alone, with a note
        ("python train.py --num-workers $((SLURM_CPUS_PER_TASK - 1))",
         "python train.py --num-workers $((SLURM_CPUS_PER_TASK - 1))"),
    ],
)  # fmt: skip
def test_launch_line_edits_around_quotes_and_expansions(
    launch: str, tuned_launch: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, tuned = apply_with_launch(tmp_path, capsys, launch)
    assert tuned.splitlines()[-1] == tuned_launch
    left = tuned_launch == launch
    assert ("carries through to 3 workers; one core stays with the main process" in out) == left


def test_an_option_missing_from_a_bash_c_string_is_not_appended_after_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    launch = "srun bash -c 'exec python train.py --epochs 3'"
    _, out, tuned = apply_with_launch(tmp_path, capsys, launch)
    assert tuned.splitlines()[-1] == launch  # `... --epochs 3' --num-workers 3` would reach bash
    assert "add --num-workers" in out and "too complex to edit safely" in out


@pytest.mark.parametrize(
    "launch",
    [
        "python train.py --epochs 3 --num-workers 1",
        # the bundled scripts' form: the closing quote is not part of the value
        "srun bash -c 'exec kernprof -l -o \"$SLURM_PROCID.lprof\" train.py --num-workers 1'",
    ],
)
def test_argparse_workers_passed_as_1_edit_the_launch_line(
    launch: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job, out, tuned = apply_with_launch(tmp_path, capsys, launch)
    assert "under-requested-cores" in out
    assert "num-workers-hardcoded" not in out
    assert not list(tmp_path.glob("*.patch"))
    assert (tmp_path / "train.py").read_text() == ARGPARSE_WORKERS
    cores = max(MIN_CORES, 2 * 1)
    assert tuned == job.replace("--cpus-per-task=1", f"--cpus-per-task={cores}").replace(
        "--num-workers 1", f"--num-workers {cores - 1}"
    )


def test_launch_line_is_edited_even_when_a_directive_is_added(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --cpus-per-task in the job: the new directive goes into the header, and the
    launch line (one line further down now) still gets the workers."""
    job = job_text("--mem=8G", "--gres=gpu:1", launch="python train.py --num-workers 1")
    write_case(
        tmp_path,
        {
            "job.sbatch": job,
            "seff.txt": SEFF_ONE_CORE_BUSY,
            "train.py": train_text("num_workers=args.num_workers, pin_memory=True"),
        },
    )
    code, _, err = cli(
        capsys, "apply", "--job", str(tmp_path / "job.sbatch"), "--seff", str(tmp_path / "seff.txt")
    )
    assert code == 0, err
    tuned = (tmp_path / "job.tuned.sbatch").read_text()
    assert JobScript.parse(tuned).directives()["cpus-per-task"] == str(MIN_CORES)
    assert tuned.endswith(f"\npython train.py --num-workers {MIN_CORES - 1}\n")
    assert "module load cuda\n" in tuned  # the line above the launch is left alone


def test_literal_workers_patch_keeps_future_import_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = "from __future__ import annotations\n\n" + train_text(
        "num_workers=1, pin_memory=False"
    ).replace("import os\n", "")
    write_case(
        tmp_path,
        {
            "job.sbatch": job_text("--cpus-per-task=1", "--mem=8G", "--gres=gpu:1"),
            "train.py": script,
            "seff.txt": SEFF_ONE_CORE_BUSY,
        },
    )
    code, _, err = cli(
        capsys, "apply", "--job", str(tmp_path / "job.sbatch"), "--seff", str(tmp_path / "seff.txt")
    )
    assert code == 0, err
    patched = apply_unified_diff(script, (tmp_path / "train.py.tuneadvisor.patch").read_text())
    compile(patched, "train.py", "exec")  # a __future__ import after `import os` would not
    facts = scan_script(patched).facts()
    assert facts["script.num_workers.source"] == "slurm_env"
    assert facts["script.pin_memory"] is True  # both settings patched, on the right line


@pytest.mark.parametrize(
    ("action", "launch", "tuned_launch"),
    [
        ('action="store_true"', "python train.py", "python train.py --pin-memory"),
        (
            "action=argparse.BooleanOptionalAction, default=False",
            "python train.py --no-pin-memory --epochs 2",
            "python train.py --pin-memory --epochs 2",
        ),
        ("action=argparse.BooleanOptionalAction, default=False", "python train.py",
         "python train.py --pin-memory"),
    ],
)  # fmt: skip
def test_pin_memory_flag_is_passed_as_a_flag(
    action: str, launch: str, tuned_launch: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store_true flag takes no value: `--pin-memory true` would make argparse exit."""
    script = train_text("num_workers=3, pin_memory=args.pin_memory").replace(
        "    args = parser.parse_args()\n",
        f'    parser.add_argument("--pin-memory", {action})\n    args = parser.parse_args()\n',
    )
    write_case(tmp_path, {"job.sbatch": job_text(*GPU_JOB, launch=launch), "train.py": script})
    code, out, err = cli(capsys, "apply", "--job", str(tmp_path / "job.sbatch"))
    assert code == 0, err
    assert "pin-memory-off" in out
    tuned = (tmp_path / "job.tuned.sbatch").read_text()
    assert tuned.endswith(f"\n{tuned_launch}\n")
    assert not list(tmp_path.glob("*.patch"))


def test_an_unreadable_cpus_per_task_is_not_taken_for_one_core(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "job.sbatch").write_text(job_text("--cpus-per-task=72.", "--gres=gpu:1"))
    (tmp_path / "train.py").write_text(train_text("num_workers=0"))
    doc = report(capsys, "--job", str(tmp_path / "job.sbatch"))
    assert "job.cpus_per_task" not in doc["advice"]["facts"]
    assert "cpus-per-task" not in doc["advice"]["plan"]["sbatch"]  # no "2 cores" from a guess
    assert "invalid-directive" in findings(doc)
