"""`report` and `compare` of torch.profiler traces through the real CLI: exit 0 with the
trace's findings, exit 2 and one line naming the file on a broken one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.report_schema import checked

REPO = Path(__file__).parents[2]
REAL = REPO / "tests" / "fixtures" / "realworld" / "traces"
LPROF = REPO / "tests" / "fixtures" / "lprof" / "lp4.1.3.lprof"


def cli(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(tmp)}
    return subprocess.run([sys.executable, "-m", "tuneadvisor", *args], capture_output=True,
                          text=True, cwd=tmp, env=env, timeout=120)  # fmt: skip


def test_report_of_a_folder_of_ranks_gives_the_trace_findings(tmp_path: Path) -> None:
    run = cli("report", str(REAL / "ddp-2rank-sampled"), "--format", "json", tmp=tmp_path)
    assert run.returncode == 0, run.stderr
    ids = {f["id"] for f in checked(json.loads(run.stdout))["findings"]}
    assert {"communication-exposed", "low-gpu-util-trace"} <= ids
    assert run.stderr == ""  # no progress line where stderr is not a terminal


def test_report_of_a_profile_and_a_trace_of_the_same_run(tmp_path: Path) -> None:
    trace = str(REAL / "cpu-pageable-sync.pt.trace.json.gz")
    run = cli("report", str(LPROF), trace, tmp=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "torch.distributed was not initialised" in run.stdout


def test_a_broken_trace_is_exit_2_and_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "rank0.pt.trace.json.gz"
    bad.write_bytes((REAL / "cpu-only-gloo-rank34.pt.trace.json.gz").read_bytes()[:900])
    run = cli("report", str(bad), tmp=tmp_path)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and run.stderr.startswith(f"tuneadvisor: {bad}: not a trace")


def test_compare_of_two_traces_shows_what_changed(tmp_path: Path) -> None:
    run = cli("compare", str(REAL / "a100-nccl-rank0.json.gz"), str(REAL / "ddp-2rank-sampled"),
              "--format", "json", tmp=tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr
    rows = {r["what"]: r for r in json.loads(run.stdout)["changes"]}
    step = rows["step time (ms)"]
    assert step["after"] > step["before"] and step["change"] == step["after"] - step["before"]
    assert rows["exposed communication (%)"]["change"] > 10
