"""`tuneadvisor run --profile torch` end to end (issue 22, point 7): a real short CPU run of a
bundled script writes one torch.profiler trace per rank into its run folder, gzipped Chrome
trace JSON with the schedule's ProfilerStep# events, and the record names them."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_run_local import QUICK, _cli, _only_run

pytestmark = [pytest.mark.torch]

# six steps: wait 1, warmup 1, three recorded, one after the cycle
SIX = [*QUICK[QUICK.index("--epochs") :], "--max-steps", "6"]
TRACE_NAME = re.compile(r"rank(\d+)\.\d+\.pt\.trace\.json\.gz")


def _trace(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt") as f:
        data: dict[str, Any] = json.load(f)
    return data


def _steps(trace: dict[str, Any]) -> list[str]:
    return sorted({e["name"] for e in trace["traceEvents"]
                   if str(e.get("name", "")).startswith("ProfilerStep#")})  # fmt: skip


def test_a_single_process_run_records_its_trace(
    torch_python: str, mnist: Path, tmp_path: Path
) -> None:
    proc = _cli(torch_python, tmp_path, "run", "mnist_single", "--data-dir", str(mnist),
                "--cpus-per-task", "1", "--num-workers", "0", "--no-watch",
                "--profile", "torch", *SIX)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = _only_run(tmp_path / "runs")
    folder = tmp_path / "runs" / run["id"]
    (name,) = run["paths"]["traces"]
    assert TRACE_NAME.fullmatch(name) and name.startswith("rank0.")
    assert run["paths"]["profiles"] == []  # torch.profiler alone, no kernprof
    assert "--torch-profile" in run["commands"][0]
    trace = _trace(folder / name)
    assert _steps(trace) == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    assert any(e.get("cat") == "cpu_op" for e in trace["traceEvents"])
    assert "distributedInfo" not in trace  # one process: torch.distributed not initialised
    assert f"torch.profiler traces: tuneadvisor report {folder / name}" in proc.stdout
    assert not any("torch.profiler wrote" in n for n in run["notes"])


def test_each_ddp_rank_writes_its_own_trace(torch_python: str, mnist: Path, tmp_path: Path) -> None:
    proc = _cli(torch_python, tmp_path, "run", "mnist_ddp", "--data-dir", str(mnist),
                "--ntasks", "2", "--cpus-per-task", "1", "--num-workers", "0", "--no-watch",
                "--profile", "torch", *SIX)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = _only_run(tmp_path / "runs")
    names = run["paths"]["traces"]
    assert [TRACE_NAME.fullmatch(n).group(1) for n in names] == ["0", "1"]  # type: ignore[union-attr]
    for rank, name in enumerate(names):
        trace = _trace(tmp_path / "runs" / run["id"] / name)
        assert trace["distributedInfo"]["rank"] == rank
        assert trace["distributedInfo"]["world_size"] == 2
        assert _steps(trace) == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
        # the gradients' all-reduce over gloo is in every rank's steps
        assert any("allreduce" in str(e.get("name", "")).lower() for e in trace["traceEvents"])


def test_a_run_shorter_than_the_schedule_says_why_it_has_no_trace(
    torch_python: str, mnist: Path, tmp_path: Path
) -> None:
    proc = _cli(torch_python, tmp_path, "run", "mnist_single", "--data-dir", str(mnist),
                "--cpus-per-task", "1", "--num-workers", "0", "--no-watch",
                "--profile", "torch", *SIX[:-1], "1")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = _only_run(tmp_path / "runs")
    assert "traces" not in run["paths"]
    assert any(n.startswith("torch.profiler wrote 0 traces for 1 ranks") for n in run["notes"])
