"""The headless watch's summary says what the run was, on real processes (issue 24, point
12): a run that ended had a main process and its workers, though its last round saw none
("0 main, up to 1 DataLoader workers" before); one round is "1 round" and its sampler has no
CPU figure yet ("n/a % of one core" before); the processes' summed RSS above the node's
memory in use says why."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO
from tuneadvisor.metrics.model import GpuSample, Stats
from tuneadvisor.metrics.ring import to_series
from tuneadvisor.metrics.snapshot import Snapshot
from tuneadvisor.present.watch_summary import _gpu_lines, _shared_pages

LOADER = REPO / "tests" / "fixtures" / "watch" / "loader.py"
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def test_a_run_that_ended_keeps_its_main_and_worker() -> None:
    main = subprocess.Popen(
        [sys.executable, str(LOADER), "fork", "1", "idle"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert main.stdin is not None and main.stdout is not None
    assert main.stdout.readline().strip() == "ready"
    watch = subprocess.Popen(
        [sys.executable, "-m", "tuneadvisor", "watch", "--headless", "--pid", str(main.pid),
         "--interval", "0.1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=ENV,
    )  # fmt: skip
    try:
        # let the watch see both processes for a while, then end the run under it
        subprocess.run(["sleep", "1.5"], check=True)
        main.stdin.close()
        main.wait(60)
        out, err = watch.communicate(timeout=120)
    finally:
        main.kill()
        watch.kill()
    assert watch.returncode == 0, err
    assert "(the watched processes ended)" in out
    processes = next(line for line in out.splitlines() if line.startswith("Processes:"))
    assert processes.endswith("; 1 main, up to 1 DataLoader worker"), processes


def test_one_round_is_one_round_and_says_why_the_sampler_has_no_figure() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tuneadvisor", "watch", "--headless", "--interval", "5",
         "--duration", "0.2"],
        capture_output=True, text=True, cwd=REPO, env=ENV, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert ": 1 round over " in first, first
    sampler = next(line for line in done.stdout.splitlines() if line.startswith("Sampler:"))
    assert "n/a" not in sampler
    assert "CPU use is measured from the second round on" in sampler


def test_summed_rss_above_the_nodes_memory_in_use_says_why() -> None:
    rss = Stats.of([900.0, 1400.0])
    assert rss is not None
    assert "shared pages once per process" in _shared_pages(rss, used_peak=1200.0)
    assert _shared_pages(rss, used_peak=2000.0) == ""  # below the node's: nothing to explain


def test_a_gpu_value_not_read_has_no_unit() -> None:
    """A GPU whose power and temperature NVML did not give: "n/a", never "n/a W"."""
    gpu = GpuSample(index=0, uuid="GPU-1", name="A100", util_pct=50.0, mem_used_mib=100.0,
                    mem_total_mib=1000.0)  # fmt: skip
    (line,) = _gpu_lines(to_series([Snapshot(t=float(t), gpus=(gpu,)) for t in range(3)]), ())
    assert "util (time any kernel ran) mean 50 % p95 50 %, memory peak 100 MiB of 1000 MiB" in line
    assert "power mean n/a of n/a, temperature max n/a" in line
