"""Issue 23 with real processes: `doctor --timeout` against an interpreter that leaves a
child holding its output (point 9), `watch -- CMD` whose log beside `--record` is a FIFO
(point 10), and Unicode digits in the environment of a process `watch --pid` reads and in
the jobstats summaries the `jobs` table shows (point 13). No time is asserted: a hang fails
at the subprocess's timeout (bench/fuzz.py measures how long inputs take)."""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.process.test_slurm_client import FakeSlurm

REPO = Path(__file__).resolve().parents[2]
FAKE_NVML = REPO / "tests" / "fixtures" / "nvml" / "fake"
A100 = REPO / "tests" / "fixtures" / "nvml" / "a100-2gpu.json"
LOADER = REPO / "tests" / "fixtures" / "watch" / "loader.py"
JOBSTATS = REPO / "tests/fixtures/realworld/accounting/jobstats-sacct-P-gpu-completed-60155093.txt"
pytestmark = pytest.mark.slow


def tuneadvisor(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "tuneadvisor", *args], capture_output=True, text=True,
        env=environ, cwd=cwd, timeout=timeout, check=False,
    )  # fmt: skip


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent to read it is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.fixture
def children(tmp_path: Path) -> Iterator[Path]:
    """Where the stand-ins write their child's pid; any child left is killed at the end."""
    folder = tmp_path / "children"
    folder.mkdir()
    yield folder
    for file in folder.iterdir():
        pid = int(file.read_text())
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _stand_in(tmp_path: Path, children: Path, name: str, then: str) -> Path:
    """An interpreter as a module or conda wrapper is: it starts a child that inherits its
    stdout and stderr and outlives it, then ``then``."""
    script = tmp_path / name
    script.write_text(f"#!/bin/sh\nsleep 600 &\necho $! > {children / name}\n{then}\n")
    script.chmod(0o755)
    return script


def _python_line(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    return next(c for c in report["checks"] if c["id"] == "python.interpreter")


def test_doctor_timeout_bounds_an_interpreter_whose_child_holds_its_output(
    tmp_path: Path, children: Path
) -> None:
    hangs = _stand_in(tmp_path, children, "hangs", "sleep 600")
    done = tuneadvisor("doctor", "--python", str(hangs), "--timeout", "3", "--format", "json",
                       cwd=tmp_path)  # fmt: skip
    line = _python_line(done)
    assert line["status"] == "failed" and "did not answer within 3 s (killed)" in line["value"]
    assert not _alive(int((children / "hangs").read_text()))  # its process group was killed


def test_doctor_reads_an_interpreter_that_answered_while_its_child_holds_its_output(
    tmp_path: Path, children: Path
) -> None:
    wraps = _stand_in(tmp_path, children, "wraps", f'exec {sys.executable} "$@"')
    done = tuneadvisor("doctor", "--python", str(wraps), "--timeout", "120", "--format", "json",
                       cwd=tmp_path)  # fmt: skip
    line = _python_line(done)
    assert line["status"] == "ok" and line["value"].startswith(f"{wraps} (--python): Python 3.")
    assert not _alive(int((children / "wraps").read_text()))


def test_watch_refuses_a_fifo_beside_its_record_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "run.log")  # nobody reads it: opening it to write would wait forever
    done = tuneadvisor("watch", "--headless", "--record", "run.jsonl", "--", "true", cwd=tmp_path,
                       timeout=60)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == "tuneadvisor: run.log: program's log: not a regular file (a FIFO)\n"
    assert not (tmp_path / "run.jsonl").exists()  # nothing started, nothing half-written


def test_watch_refuses_a_fifo_given_as_log_that_someone_reads(tmp_path: Path) -> None:
    fifo = tmp_path / "given.log"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader: open() would not block
    try:
        done = tuneadvisor("watch", "--headless", "--log", str(fifo), "--", "true",
                           cwd=tmp_path, timeout=60)  # fmt: skip
    finally:
        os.close(reader)
    assert done.returncode == 2
    assert done.stderr.endswith(
        "given.log: program's log: not a regular file (a FIFO, a device...)\n"
    )


@pytest.mark.parametrize("visible", ["²", "0,²", "٣"])
def test_watch_pid_reads_unicode_digits_in_the_targets_cuda_visible_devices(
    visible: str, tmp_path: Path
) -> None:
    """The environment belongs to whoever started the process: '²' is no GPU index (it
    names no GPU, as CUDA would read it), and ``int('²')`` was a ValueError."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": visible, "SLURM_CPUS_PER_TASK": "²",
           "SLURM_MEM_PER_NODE": "9" * 400}  # fmt: skip
    target = subprocess.Popen(
        [sys.executable, str(LOADER), "fork", "0", "busy"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert target.stdout is not None and target.stdout.readline().strip() == "ready"
        done = tuneadvisor(
            "watch", "--headless", "--pid", str(target.pid), "--interval", "0.2", "--duration",
            "1", cwd=tmp_path,
            env={"PYTHONPATH": f"{FAKE_NVML}{os.pathsep}{REPO}",
                 "TUNEADVISOR_FAKE_NVML": str(A100)},
        )  # fmt: skip
    finally:
        target.kill()
        target.wait()
    assert done.returncode == 0, done.stderr
    shown = "GPU 0 NVIDIA A100-SXM4-40GB" in done.stdout
    assert shown == visible.startswith("0"), done.stdout  # only an ASCII index names GPU 0


def _jobstats_row(change: str) -> str:
    """The della job's sacct line with its summary's GPU renamed ``²`` (``index``) or its
    utilization map nested 20,000 deep (``deep``)."""
    text = JOBSTATS.read_text()
    blob = re.search(r"JS1:(\S+?)\|", text)
    assert blob is not None
    doc = gzip.decompress(base64.b64decode(blob[1])).decode()
    assert '{"1":98.6}' in doc
    deep = "[" * 20_000 + "]" * 20_000
    doc = doc.replace('"1":', '"²":') if change == "index" else doc.replace('{"1":98.6}', deep)
    return text.replace(blob[1], base64.b64encode(gzip.compress(doc.encode())).decode())


@pytest.mark.parametrize("change", ["index", "deep"])
def test_the_jobs_table_shows_every_job_when_a_summary_is_hostile(
    change: str, tmp_path: Path
) -> None:
    """The table promises an empty GPU cell for a summary it cannot read; a Unicode GPU
    index (``int('²')``) or a summary nested 20,000 deep ended the whole table."""
    fake = FakeSlurm(tmp_path)
    (tmp_path / "recent.txt").write_text(_jobstats_row(change))
    fake.add("sacct", f"/bin/cat {tmp_path}/recent.txt\n")
    fake.add("squeue", "echo '{\"jobs\": []}'\n")
    done = tuneadvisor("jobs", "--user", "aturing", "--format", "json", cwd=tmp_path,
                       env=fake.env())  # fmt: skip
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)
    assert row["job_id"] == "60155093" and row["state"] == "COMPLETED"
    if change == "index":  # the mean over the job's GPUs, its index whatever it is
        assert row["gpu_util_pct"] == pytest.approx(98.6)
    else:
        assert row["gpu_util_pct"] is None
